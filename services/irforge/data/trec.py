"""TREC qrels files: a reader that names file and line on bad input; TREC run files: the atomic
writer (runs are read by irforge.runs.reading, the one reader of every run layout)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from irforge.common.files import atomic_write
from irforge.data.entries import EntryError, add_judgement
from irforge.data.errors import DataFormatError
from irforge.data.qrels import parse_relevance
from irforge.data.textfile import numbered_lines
from irforge.data.types import Qrels
from irforge.ranking import Ranking, ranked


def read_trec_qrels(path: str | Path) -> Qrels:
    """Read "qid iteration docno relevance" lines (trec_eval's qrels format)."""
    path = Path(path)
    qrels: Qrels = {}
    first_lines: dict[tuple[str, str], int] = {}
    for line_number, line in numbered_lines(path, "qrels file"):
        fields = line.split()
        if len(fields) != 4:
            raise DataFormatError(path, f"expected 4 fields (qid iter docno rel), got {len(fields)}", line_number)
        query_id, _, doc_id, raw_relevance = fields
        relevance = parse_relevance(path, raw_relevance, line_number)
        try:
            add_judgement(qrels, query_id, doc_id, relevance, first_lines, line_number)
        except EntryError as error:
            raise DataFormatError(path, str(error), line_number) from None
    return qrels


def format_run_lines(query_id: str, scores: Mapping[str, float], tag: str) -> list[str]:
    """One query's lines, ranked by the tie rule; a score as Python's shortest exact repr."""
    if isinstance(scores, Ranking):   # already in tie-rule order: Python values straight from its arrays
        pairs = zip(scores.doc_ids.tolist(), scores.scores.tolist())
    else:
        pairs = ((doc_id, float(score)) for doc_id, score in ranked(scores))
    head, tail = f"{query_id} Q0 ", f" {tag}\n"
    return [f"{head}{doc_id} {rank} {score!r}{tail}" for rank, (doc_id, score) in enumerate(pairs, start=1)]


def write_trec_run(path: str | Path, run: Mapping[str, Mapping[str, float]], tag: str) -> Path:
    """Write a run file atomically: ranks follow the tie rule; a crash never leaves half a file."""
    path = Path(path)
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag must be one non-empty word, got {tag!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        for query_id in sorted(run):
            handle.write("".join(format_run_lines(query_id, run[query_id], tag)))
    return path
