"""The one interface every vector backend implements; tests/corpus/test_vector_congruence.py
runs every operation on each backend available and asserts the same behaviour."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np

from irforge.common.error_status import register_status
from irforge.corpus.errors import CorpusError
from irforge.corpus.lexical.base import CorpusState
from irforge.ranking import Ranking

DISTANCES = ("cosine", "dot")


class DimensionMismatch(CorpusError):
    """Vectors whose dimension differs from the collection's (e.g. another model's)."""


register_status(DimensionMismatch, "INVALID_ARGUMENT")  # how it travels over gRPC (irforge.common.grpc_errors)


# The least each HNSW parameter can be (Qdrant refuses ef_construct below 4; m 0 or 1 builds no graph).
HNSW_MINIMUMS = {"m": 2, "ef_construct": 4, "ef_search": 1}


@dataclass(frozen=True)
class HnswSettings:
    m: int = 16
    ef_construct: int = 100
    ef_search: int = 128   # search-time beam (Qdrant's hnsw_ef)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class VectorCollectionInfo:
    collection_id: str
    dimension: int
    distance: str            # "cosine" | "dot"
    fingerprint: str         # corpus fingerprint + encoder identity key
    state: CorpusState       # EMPTY until commit(), then READY
    point_count: int
    backend: str
    config: dict[str, Any]   # engine, version, HNSW parameters, storage


class SparseVector(NamedTuple):
    """A learned sparse vector (SPLADE): the vocabulary ids it is not zero at, and its weights there."""

    indices: np.ndarray   # int, distinct, each in [0, vocabulary)
    values: np.ndarray    # float32, finite, one per index

    @property
    def terms(self) -> int:
        return len(self.indices)


SPARSE_KIND = "sparse"   # VectorCollectionInfo.config["kind"] of a sparse collection


class VectorBackend(ABC):
    """Stores one vector per corpus document id, searches exactly or by HNSW. Thread-safe."""

    name: str

    @abstractmethod
    def create(self, collection_id: str, dimension: int, distance: str, fingerprint: str,
               hnsw: HnswSettings = HnswSettings()) -> VectorCollectionInfo:
        """Create an empty collection, or return the existing one when dimension, distance and
        fingerprint match. Raises DimensionMismatch when only the dimension differs, CorpusConflict
        for any other difference, ValueError for a bad id, dimension or distance."""

    @abstractmethod
    def info(self, collection_id: str) -> VectorCollectionInfo | None: ...

    @abstractmethod
    def delete(self, collection_id: str) -> bool: ...

    @abstractmethod
    def upsert(self, collection_id: str, doc_ids: list[str], vectors: np.ndarray) -> int:
        """Store vectors (float32, shape (len(doc_ids), dimension)) under their doc ids; an id seen
        before is replaced, so repeating an upsert is idempotent. Marks the collection EMPTY
        (uncommitted) again. Returns the number upserted. Raises CorpusNotFound, DimensionMismatch,
        ValueError (count mismatch, NaN/inf, duplicate ids in one call)."""

    @abstractmethod
    def commit(self, collection_id: str) -> VectorCollectionInfo:
        """Make everything upserted searchable (build the HNSW index) and mark READY."""

    @abstractmethod
    def search(self, collection_id: str, queries: np.ndarray, k: int, exact: bool = True) -> list[Ranking]:
        """The top k documents per query vector as a Ranking: best first, ties by doc id descending
        (trec_eval's rule). Scores are the distance's similarity (cosine or dot). Raises CorpusNotFound, CorpusNotReady,
        DimensionMismatch, ValueError (k <= 0)."""

    # -- sparse collections (learned sparse retrieval); dimension = vocabulary, distance = dot --

    def create_sparse(self, collection_id: str, vocabulary: int, fingerprint: str) -> VectorCollectionInfo:
        """Create an empty sparse collection, or return the existing one when vocabulary and
        fingerprint match (CorpusConflict otherwise). info/delete/commit work as for dense ones;
        commit() also records the stored documents' term counts in config["document_terms"]."""
        raise NotImplementedError(f"the {self.name} vector backend has no sparse vectors")

    def upsert_sparse(self, collection_id: str, doc_ids: list[str], vectors: list[SparseVector]) -> int:
        """As upsert(), for sparse vectors. Raises ValueError for an index outside the vocabulary,
        repeated indices, NaN/inf weights, a count mismatch, or a dense collection."""
        raise NotImplementedError(f"the {self.name} vector backend has no sparse vectors")

    def search_sparse(self, collection_id: str, queries: list[SparseVector], k: int) -> list[Ranking]:
        """The top k documents per query by exact dot product as a Ranking, ties by doc id descending.
        Only documents sharing a term with the query score (a dot product of 0 is no match)."""
        raise NotImplementedError(f"the {self.name} vector backend has no sparse vectors")

    def close(self) -> None:
        """Release handles."""
