"""Checks shared by the qrels readers, and the report of qrels that point at unknown ids."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from irforge.data.errors import DataFormatError
from irforge.data.types import Qrels


def parse_relevance(path: Path, value: str, line_number: int) -> int:
    text = value.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        as_float = float(text)
    except ValueError:
        raise DataFormatError(path, f"relevance {text!r} is not a number", line_number) from None
    if as_float.is_integer():
        return int(as_float)  # "1.0" is written by some exporters; it means 1
    raise DataFormatError(path, f"relevance {text!r} is not an integer", line_number)


@dataclass
class QrelsReferenceReport:
    """Qrels lines pointing at queries or documents that the collection does not have.

    Not fatal (real collections have a few), but counted and reported with examples.
    """

    unknown_queries: int = 0
    unknown_documents: int = 0
    examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"unknown_queries": self.unknown_queries, "unknown_documents": self.unknown_documents, "examples": self.examples}


def check_qrels_references(
    qrels: Qrels, query_ids: Iterable[str], doc_ids: Iterable[str] | None, max_examples: int = 5,
) -> QrelsReferenceReport:
    """Count qrels queries missing from `query_ids` and judged documents missing from `doc_ids`."""
    known_queries = set(query_ids)
    known_docs = set(doc_ids) if doc_ids is not None else None
    report = QrelsReferenceReport()
    for query_id, judged in qrels.items():
        if query_id not in known_queries:
            report.unknown_queries += 1
            if len(report.examples) < max_examples:
                report.examples.append(f"query {query_id!r} is not in queries.jsonl")
        if known_docs is None:
            continue
        for doc_id in judged:
            if doc_id not in known_docs:
                report.unknown_documents += 1
                if len(report.examples) < max_examples:
                    report.examples.append(f"document {doc_id!r} (query {query_id!r}) is not in the corpus")
    return report


def qrels_fingerprint(qrels: Qrels) -> str:
    """SHA-256 of the judgements themselves ("qid\\tdocid\\tlabel\\n", sorted), not of a file's bytes:
    the same labels read from BEIR TSV or TREC qrels, CRLF or LF, in any order, share one
    fingerprint, and a changed label changes it. `irforge compare` refuses to set results side by
    side whose fingerprints differ (they were scored against different labels)."""
    import hashlib

    digest = hashlib.sha256()
    for query_id in sorted(qrels):
        judged = qrels[query_id]
        for doc_id in sorted(judged):
            digest.update(f"{query_id}\t{doc_id}\t{judged[doc_id]}\n".encode("utf-8"))
    return digest.hexdigest()
