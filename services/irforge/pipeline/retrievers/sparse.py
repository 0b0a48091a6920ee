"""Learned sparse retrieval (SPLADE): the dense retriever's pipeline — encode the corpus once
through the embedding cache, store vectors in the vector backend, encode queries, search — with
sparse vectors (vocabulary ids and weights) scored by exact dot product in the vector backend's sparse
index (Qdrant's, or Elasticsearch's sparse_vector field)."""

from __future__ import annotations

from irforge.models.encoder import TextRole
from irforge.models.sparse_encoding import encode_sparse_with_cache
from irforge.pipeline.retrievers.dense import ENCODE_CHUNK, DenseRetriever


class SparseRetriever(DenseRetriever):
    name = "sparse"

    def __init__(self, corpus, encoder, cache, progress, *, encoder_location: str = "in-process"):
        if not hasattr(corpus, "create_sparse_collection"):
            raise ValueError("sparse retrieval needs the in-process corpus service: the gRPC Corpus API "
                             "carries dense vectors only (drop --server/--corpus-server)")
        super().__init__(corpus, encoder, cache, progress, exact=True, encoder_location=encoder_location)
        self._query_terms: list[int] = []

    def _encode(self, role: TextRole, items, total: int | None):
        return encode_sparse_with_cache(self.encoder, self.cache, role, items, batch_size=ENCODE_CHUNK,
                                        progress=self.progress, total=total)

    def _create_collection(self, fingerprint: str) -> None:
        self.corpus.create_sparse_collection(self.collection_id, self.encoder.dimension, fingerprint)

    def _upsert(self, doc_ids: list[str], vectors) -> None:
        self.corpus.upsert_sparse_vectors(self.collection_id, doc_ids, vectors)

    def _join(self, blocks: list) -> list:
        vectors = [vector for block in blocks for vector in block]
        self._query_terms.extend(vector.terms for vector in vectors)
        return vectors

    def _search(self, query_ids: list[str], vectors, k: int):
        return self.corpus.sparse_search(self.collection_id, query_ids, vectors, k)

    def describe(self) -> dict:
        terms = self._query_terms
        return {
            "name": self.name,
            "encoder": {**self.encoder.describe(), "location": self.encoder_location},
            "document_text": "title + ' ' + text, stripped (BEIR/MTEB convention)",
            "search": "exact",
            # The backend says how it scores (Elasticsearch: over weights stored with 9 significant bits).
            "scoring": (self.info.config if self.info else {}).get("scoring", "dot product of sparse vectors"),
            "vector_backend": self.info.backend if self.info else None,
            "collection_id": self.collection_id,
            "collection": self.info.config if self.info else {},
            "document_terms": self.info.config.get("document_terms") if self.info else None,
            "query_terms": {"queries": len(terms), "mean": round(sum(terms) / len(terms), 2) if terms else 0.0,
                            "max": max(terms, default=0)},
        }
