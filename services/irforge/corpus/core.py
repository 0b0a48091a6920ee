"""The corpus service's transport-free core: corpora, ingestion and search over one LexicalBackend."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

import numpy as np

from irforge.common.iterables import chunked
from irforge.common.metrics import DOCUMENTS_INGESTED
from irforge.corpus.errors import CorpusBusy, CorpusError, CorpusNotFound
from irforge.corpus.lexical.base import CorpusInfo, IngestProgress, LexicalBackend
from irforge.corpus.settings import Bm25Settings
from irforge.corpus.vectors.base import HnswSettings, SparseVector, VectorBackend, VectorCollectionInfo
from irforge.data.types import Document, Query
from irforge.ranking import Ranking

SEARCH_CHUNK = 256  # queries scored per backend call in batch search: bounds memory, keeps streaming


class CorpusService:
    """Lexical indexes (always) and vector collections (when a vector backend is configured)."""

    def __init__(self, backend: LexicalBackend, vectors: VectorBackend | None = None):
        self.backend = backend
        self.vectors = vectors
        self._writers: set[str] = set()      # corpora with an ingest under way in this service
        self._writers_lock = threading.Lock()

    def create_corpus(self, corpus_id: str, fingerprint: str, settings: Bm25Settings) -> CorpusInfo:
        if not fingerprint:
            raise ValueError("a corpus needs a fingerprint (a hash of its source file)")
        return self.backend.create(corpus_id, fingerprint, settings)

    def get_corpus(self, corpus_id: str) -> CorpusInfo:
        info = self.backend.info(corpus_id)
        if info is None:
            raise CorpusNotFound(corpus_id)
        return info

    def find_corpus(self, corpus_id: str) -> CorpusInfo | None:
        return self.backend.info(corpus_id)

    def delete_corpus(self, corpus_id: str) -> bool:
        return self.backend.delete(corpus_id)

    def ingest(self, corpus_id: str, batches: Iterable[list[Document]]) -> Iterator[IngestProgress]:
        """Stream `batches` into the corpus; it is committed only when `batches` ends normally
        (an exception from it, or closing this iterator early, commits nothing).

        One writer per corpus: a backend commits the documents it staged, so two concurrent
        writers would each commit their own view and one client's acknowledged documents would
        vanish. A second writer gets CorpusBusy at once instead.
        """
        with self._writers_lock:
            if corpus_id in self._writers:
                raise CorpusBusy(corpus_id)
            self._writers.add(corpus_id)
        try:
            yield from _counting_indexed(self.backend.ingest(corpus_id, batches), self.backend.name)
        finally:
            with self._writers_lock:
                self._writers.discard(corpus_id)

    def search(self, corpus_id: str, query: Query, k: int) -> Ranking:
        return self.backend.search(corpus_id, [query], k)[0]

    def batch_search(self, corpus_id: str, queries: Iterable[Query], k: int) -> Iterator[tuple[str, Ranking]]:
        """(query id, ranking) per query, in the given order, scored in bounded chunks."""
        for chunk in chunked(queries, SEARCH_CHUNK):
            for query, ranking in zip(chunk, self.backend.search(corpus_id, chunk, k), strict=True):
                yield query.query_id, ranking

    # -- vector collections -------------------------------------------------------------------

    def _vector_backend(self) -> VectorBackend:
        if self.vectors is None:
            raise CorpusError("this corpus service has no vector backend configured")
        return self.vectors

    def create_vector_collection(self, collection_id: str, dimension: int, distance: str, fingerprint: str,
                                 hnsw: HnswSettings = HnswSettings()) -> VectorCollectionInfo:
        return self._vector_backend().create(collection_id, dimension, distance, fingerprint, hnsw)

    def find_vector_collection(self, collection_id: str) -> VectorCollectionInfo | None:
        return self._vector_backend().info(collection_id)

    def get_vector_collection(self, collection_id: str) -> VectorCollectionInfo:
        info = self.find_vector_collection(collection_id)
        if info is None:
            raise CorpusNotFound(collection_id)
        return info

    def delete_vector_collection(self, collection_id: str) -> bool:
        return self._vector_backend().delete(collection_id)

    def upsert_vectors(self, collection_id: str, doc_ids: list[str], vectors: np.ndarray) -> int:
        return self._vector_backend().upsert(collection_id, doc_ids, vectors)

    def commit_vectors(self, collection_id: str) -> VectorCollectionInfo:
        return self._vector_backend().commit(collection_id)

    def vector_search(self, collection_id: str, query_ids: list[str], vectors: np.ndarray, k: int,
                      exact: bool = True) -> Iterator[tuple[str, Ranking]]:
        """(query id, ranking) per query vector, in order, scored in bounded chunks."""
        if len(query_ids) != len(vectors):
            raise ValueError(f"{len(query_ids)} query ids for {len(vectors)} query vectors")
        backend = self._vector_backend()
        for start in range(0, len(query_ids), SEARCH_CHUNK):
            chunk_ids = query_ids[start:start + SEARCH_CHUNK]
            rankings = backend.search(collection_id, vectors[start:start + SEARCH_CHUNK], k, exact)
            yield from zip(chunk_ids, rankings, strict=True)

    # -- sparse collections (served over gRPC too: CreateSparseCollection, UpsertSparseVectors, SparseSearch)

    def create_sparse_collection(self, collection_id: str, vocabulary: int, fingerprint: str) -> VectorCollectionInfo:
        return self._vector_backend().create_sparse(collection_id, vocabulary, fingerprint)

    def upsert_sparse_vectors(self, collection_id: str, doc_ids: list[str], vectors: list[SparseVector]) -> int:
        return self._vector_backend().upsert_sparse(collection_id, doc_ids, vectors)

    def sparse_search(self, collection_id: str, query_ids: list[str], vectors: list[SparseVector],
                      k: int) -> Iterator[tuple[str, Ranking]]:
        """(query id, ranking) per sparse query vector, in order, scored in bounded chunks."""
        if len(query_ids) != len(vectors):
            raise ValueError(f"{len(query_ids)} query ids for {len(vectors)} query vectors")
        backend = self._vector_backend()
        for start in range(0, len(query_ids), SEARCH_CHUNK):
            rankings = backend.search_sparse(collection_id, vectors[start:start + SEARCH_CHUNK], k)
            yield from zip(query_ids[start:start + SEARCH_CHUNK], rankings, strict=True)

    def close(self) -> None:
        self.backend.close()
        if self.vectors is not None:
            self.vectors.close()


def _counting_indexed(reports: Iterator[IngestProgress], backend: str) -> Iterator[IngestProgress]:
    """Pass the backend's progress reports through, adding each report's newly indexed documents
    to irforge_documents_ingested_total (reports carry running counts, so count the growth)."""
    counter = DOCUMENTS_INGESTED.labels(backend=backend)
    counted = 0
    for report in reports:
        if report.indexed > counted:
            counter.inc(report.indexed - counted)
            counted = report.indexed
        yield report
