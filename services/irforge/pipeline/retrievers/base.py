"""What every retriever offers the eval job."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from irforge.data import BeirDataset
from irforge.data.types import Document, Query, Run

MAX_REPORTED_ERRORS = 20


@dataclass
class CorpusTracker:
    """Notes, while a retriever streams the corpus, which judged documents exist, and collects
    per-document errors; so the qrels report needs no second pass over the corpus."""

    judged: set[str]
    seen: set[str] = field(default_factory=set)
    streamed: bool = False
    errors: list[str] = field(default_factory=list)
    failed: int = 0

    def observe(self, documents: Iterable[Document]) -> Iterator[Document]:
        for document in documents:
            if document.doc_id in self.judged:
                self.seen.add(document.doc_id)
            yield document
        self.streamed = True

    def record_error(self, doc_id: str, message: str) -> None:
        self.failed += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(f"{doc_id}: {message}")


class Retriever(Protocol):
    name: str

    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        """Build or reuse the index for this dataset; stream the corpus through `tracker`."""

    def retrieve(self, queries: list[Query], k: int) -> Run: ...

    def describe(self) -> dict:
        """The full configuration, recorded as results.json's `retriever`."""

    def counts(self) -> dict:
        """Work done this run (documents ingested/encoded, reused or not)."""


def safe_name(dataset_name: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", dataset_name.lower()).strip("-._") or "corpus"


def count_lines(path: Path) -> int | None:
    if path.suffix == ".gz":
        return None  # not worth decompressing twice for a progress bar's total
    with open(path, "rb") as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))
