"""The --hard-negatives file: which documents are generated hard negatives of which query.

Two formats, told apart by the file name:
- `*.tsv` (or any other name): qrels layout, `query-id <TAB> corpus-id [<TAB> score]`, an optional
  header line; a score column is allowed (AIR-Bench ships hard negatives as 0 labels) and ignored.
- `*.jsonl`: one object per line, `{"query_id": "q1", "doc_ids": ["d7", "d9"]}` (or `"doc_id": "d7"`).
"""

from __future__ import annotations

import json
from pathlib import Path

from irforge.data.errors import DataFormatError
from irforge.data.textfile import numbered_lines

HEADER = ("query-id", "corpus-id")

HardNegatives = dict[str, dict[str, int]]   # query id -> doc id -> line number (for error messages)


def read_hard_negatives(path: str | Path) -> HardNegatives:
    path = Path(path)
    found: HardNegatives = {}
    jsonl = path.name.removesuffix(".gz").endswith(".jsonl")
    for line_number, line in numbered_lines(path):
        pairs = _json_pairs(path, line, line_number) if jsonl else _tsv_pairs(path, line, line_number, not found)
        for query_id, doc_id in pairs:
            found.setdefault(query_id, {}).setdefault(doc_id, line_number)
    if not found:
        raise DataFormatError(path, "no hard negatives (only a header)")
    return found


def _tsv_pairs(path: Path, line: str, line_number: int, first: bool) -> list[tuple[str, str]]:
    fields = [field.strip() for field in (line.split("\t") if "\t" in line else line.split())]
    if first and tuple(field.lower() for field in fields[:2]) == HEADER:
        return []
    if len(fields) not in (2, 3) or not all(fields[:2]):
        raise DataFormatError(path, f"expected query-id, corpus-id and an optional score, got {len(fields)} fields", line_number)
    return [(fields[0], fields[1])]


def _json_pairs(path: Path, line: str, line_number: int) -> list[tuple[str, str]]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as error:
        raise DataFormatError(path, f"malformed JSON ({error.msg} at column {error.colno})", line_number) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("query_id"), str) or not obj["query_id"].strip():
        raise DataFormatError(path, 'expected {"query_id": "...", "doc_ids": [...]}', line_number)
    doc_ids = obj.get("doc_ids", [obj["doc_id"]] if "doc_id" in obj else None)
    if not isinstance(doc_ids, list) or not doc_ids or not all(isinstance(d, str) and d.strip() for d in doc_ids):
        raise DataFormatError(path, "`doc_ids` must be a non-empty list of document ids (or give one `doc_id`)", line_number)
    return [(obj["query_id"].strip(), doc_id.strip()) for doc_id in doc_ids]
