"""The one interface every lexical backend implements; tests/corpus/test_congruence.py proves them equal."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from irforge.corpus.settings import Bm25Settings
from irforge.data.types import Document, Query
from irforge.ranking import Ranking


class CorpusState(str, Enum):
    EMPTY = "empty"   # created; documents not (all) committed yet
    READY = "ready"   # committed and searchable


@dataclass(frozen=True)
class CorpusInfo:
    corpus_id: str
    fingerprint: str
    state: CorpusState
    document_count: int
    backend: str
    config: dict[str, Any]  # full retrieval configuration: analyzer, stemmer, k1, b, fields, versions


@dataclass
class DocumentError:
    doc_id: str
    message: str


@dataclass
class IngestProgress:
    """Running counts after a batch; `errors` are that batch's per-document failures."""

    received: int = 0
    indexed: int = 0
    failed: int = 0
    errors: list[DocumentError] = field(default_factory=list)
    committed: bool = False

    def snapshot(self) -> "IngestProgress":
        """An independent copy to yield: consumers may keep every report they receive."""
        return replace(self, errors=list(self.errors))


def document_id_problem(document: Document) -> str | None:
    """Why a document cannot be indexed under its id, or None. Every backend applies this rule, and
    so does the eval's check that an index holds every indexable document: ids go into
    whitespace-separated TREC run files, so they can hold no whitespace, and no NUL (which ends a
    string in trec_eval's C, and in the embedded index's fixed-width id array)."""
    if not document.doc_id or any(c.isspace() for c in document.doc_id):
        return "document id is empty or contains whitespace"
    if "\0" in document.doc_id:
        return "document id contains NUL"
    return None


class LexicalBackend(ABC):
    """A BM25 index store. Implementations must be safe to call from several threads."""

    name: str

    @abstractmethod
    def create(self, corpus_id: str, fingerprint: str, settings: Bm25Settings) -> CorpusInfo:
        """Create an empty corpus, or return the existing one if fingerprint and settings match.

        Raises CorpusConflict when the corpus exists with another fingerprint or settings.
        """

    @abstractmethod
    def info(self, corpus_id: str) -> CorpusInfo | None:
        """The corpus, or None when it does not exist."""

    @abstractmethod
    def delete(self, corpus_id: str) -> bool:
        """Remove the corpus; False when it did not exist."""

    @abstractmethod
    def ingest(self, corpus_id: str, batches: Iterable[list[Document]]) -> Iterator[IngestProgress]:
        """Index document batches, yielding progress after each batch and a final committed one.

        Document id is the key: ingesting the same documents again changes nothing. A document
        that cannot be indexed is reported in `errors`, the others go on. Only once the last
        progress (committed=True) is yielded is the corpus READY. Raises CorpusNotFound.
        """

    @abstractmethod
    def search(self, corpus_id: str, queries: list[Query], k: int) -> list[Ranking]:
        """The top k documents of each query (same order as `queries`) as a Ranking: score
        descending, then doc id descending.

        Raises CorpusNotFound or CorpusNotReady.
        """

    def close(self) -> None:
        """Release connections or handles."""
