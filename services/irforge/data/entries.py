"""Run entries and judgements added one at a time, with the checks every edge applies: the file
readers (which add the file and line) and the evaluator's gRPC door refuse the same things in the
same words."""

from __future__ import annotations

import math

from irforge.data.types import Qrels, Run

# trec_eval keeps a relevance in a C int: beyond a C long pytrec_eval raised SystemError, and in
# between it wrapped silently (2**63 - 1 was scored as not relevant). Refused instead.
MAX_RELEVANCE = 2**31 - 1


class EntryError(ValueError):
    """One run entry or judgement cannot be used. The edge that read it says where it came from."""


def _check_ids(query_id: str, doc_id: str) -> None:
    if not query_id or not doc_id:
        raise EntryError("an entry with an empty query id or document id")


def add_run_entry(run: Run, query_id: str, doc_id: str, score: float) -> None:
    """Add a score, refusing NaN and infinities (no ranking follows from them) and a document
    scored twice for a query (which score counts would be a guess)."""
    _check_ids(query_id, doc_id)
    if not math.isfinite(score):
        raise EntryError(f"score {score!r} for query {query_id!r}, document {doc_id!r} is not a finite number")
    scores = run.setdefault(query_id, {})
    if doc_id in scores:
        raise EntryError(f"document {doc_id!r} appears twice for query {query_id!r}")
    scores[doc_id] = score


def add_judgement(qrels: Qrels, query_id: str, doc_id: str, relevance: int,
                  first_lines: dict[tuple[str, str], int] | None = None, line_number: int = 0) -> None:
    """Add a judgement; the same one repeated is fine, two different ones are refused. File readers
    pass `first_lines` (filled here) so the message can point at the first of the two."""
    _check_ids(query_id, doc_id)
    if abs(relevance) > MAX_RELEVANCE:
        raise EntryError(f"relevance {relevance} for query {query_id!r}, document {doc_id!r} is outside "
                         f"-{MAX_RELEVANCE}..{MAX_RELEVANCE} (trec_eval keeps it in a 32-bit integer)")
    judged = qrels.setdefault(query_id, {})
    previous = judged.setdefault(doc_id, relevance)
    if first_lines is not None:
        first_line = first_lines.setdefault((query_id, doc_id), line_number)
    if previous != relevance:
        where = f" (line {first_line})" if first_lines is not None else ""
        raise EntryError(f"conflicting judgements for query {query_id!r}, document {doc_id!r}: "
                         f"{previous}{where} and {relevance}")
