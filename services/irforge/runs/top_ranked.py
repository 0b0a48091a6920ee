"""FollowIR's and MTEB's candidate lists (`top_ranked.jsonl`): each query's first-stage documents,
in rank order, without scores. Two layouts, one JSON object per line, told apart by their keys:

    MTEB (2.x)             {"query-id": "q1", "corpus-ids": ["d3", "d7", ...]}
    FollowIR (MTEB 1.x)    {"qid": "q1", "pid": "d3"}   one line per candidate (a list is taken too)

Lines of one query add up in file order, as MTEB 1.x appends them. A query's list is its ranking:
the first id ranks first. A document twice in one query's list, a line with neither layout's keys,
ids that are not strings: DataFormatError naming file:line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from irforge.data.errors import DataFormatError
from irforge.data.textfile import numbered_lines
from irforge.ranking import Ranking

FORMAT = "top_ranked"
# (query key, candidates key) of each layout, as MTEB's loaders read them.
LAYOUTS = {"mteb": ("query-id", "corpus-ids"), "followir": ("qid", "pid")}


@dataclass(frozen=True)
class TopRanked:
    """Each query's candidate ids in rank order (`candidates`), and the layout the file used."""
    candidates: dict[str, list[str]]
    layout: str

    def rankings(self) -> dict[str, Ranking]:
        """Each query's candidates as a Ranking: score n for the first of n, down to 1 for the last,
        so the file's order is the ranking's whatever the tie rule (no two scores are equal)."""
        return {query_id: Ranking(np.asarray(doc_ids, dtype=object), np.arange(len(doc_ids), 0, -1, dtype=np.float64))
                for query_id, doc_ids in self.candidates.items()}


def looks_like_top_ranked(line: str) -> bool:
    """Whether a file's first line is a top_ranked line (a JSON object with one layout's keys)."""
    try:
        value = json.loads(line)
    except ValueError:
        return False
    return isinstance(value, dict) and any(query in value and docs in value for query, docs in LAYOUTS.values())


def read_top_ranked(path: str | Path) -> TopRanked:
    path = Path(path)
    candidates: dict[str, list[str]] = {}
    seen: dict[str, set[str]] = {}
    layout = None
    for line_number, line in numbered_lines(path, "top_ranked file"):
        try:
            value = json.loads(line)
        except ValueError as error:
            raise DataFormatError(path, f"not a JSON object ({error})", line_number) from None
        found = _layout(value)
        if found is None:
            raise DataFormatError(path, "expected {\"query-id\": ..., \"corpus-ids\": [...]} (MTEB) or {\"qid\": ..., "
                                        "\"pid\": ...} (FollowIR), got "
                                  + (f"keys {', '.join(sorted(value))}" if isinstance(value, dict) else type(value).__name__),
                                  line_number)
        if layout is not None and found != layout:
            raise DataFormatError(path, f"a {found} line in a {layout} file: keep to one layout", line_number)
        layout = found
        query_key, docs_key = LAYOUTS[found]
        query_id, docs = value[query_key], value[docs_key]
        if isinstance(query_id, int) and not isinstance(query_id, bool):
            query_id = str(query_id)   # MTEB's loaders cast ids to strings
        if not isinstance(query_id, str) or not query_id.strip():
            raise DataFormatError(path, f"`{query_key}` must be a non-empty string, got {json.dumps(query_id)[:40]}", line_number)
        listed = candidates.setdefault(query_id, [])
        for doc_id in docs if isinstance(docs, list) else [docs]:
            doc_id = str(doc_id) if isinstance(doc_id, int) and not isinstance(doc_id, bool) else doc_id
            if not isinstance(doc_id, str) or not doc_id.strip():
                raise DataFormatError(path, f"`{docs_key}` of query {query_id!r} holds {json.dumps(doc_id)[:40]}, not a "
                                            "document id", line_number)
            if doc_id in seen.setdefault(query_id, set()):
                raise DataFormatError(path, f"document {doc_id!r} is a candidate of query {query_id!r} twice", line_number)
            seen[query_id].add(doc_id)
            listed.append(doc_id)
    return TopRanked(candidates=candidates, layout=layout or "mteb")


def _layout(value) -> str | None:
    if not isinstance(value, dict):
        return None
    return next((name for name, (query, docs) in LAYOUTS.items() if query in value and docs in value), None)
