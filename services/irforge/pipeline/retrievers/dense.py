"""Dense retrieval: encode the corpus once (embedding cache), store vectors in the corpus
service's vector backend, encode queries, search exactly (default) or by HNSW, whose recall against
exact search is measured on a sample of the queries (search_recall)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from irforge.common.progress import ProgressFactory
from irforge.corpus.core import SEARCH_CHUNK
from irforge.corpus.lexical.base import CorpusState
from irforge.corpus.vectors.base import HnswSettings
from irforge.data import BeirDataset
from irforge.data.types import Query, Run
from irforge.models.cached_encoding import CachedEncoding, encode_with_cache
from irforge.models.encoder import TextRole
from irforge.pipeline.latency import LatencyRecorder, batch_basis, share
from irforge.pipeline.retrievers.base import CorpusTracker, count_lines, safe_name
from irforge.pipeline.retrievers.search_recall import measured_width

ENCODE_CHUNK = 256  # documents per cache lookup / encoder call / upsert: bounds memory
ENCODE_BASIS = batch_basis(ENCODE_CHUNK, "chunks", "embedding cache lookup, encoding the texts it lacks, storing")
SEARCH_BASIS = batch_basis(SEARCH_CHUNK, "vector search calls to the corpus service", "network included when remote")


def collection_id_for(dataset_name: str, fingerprint: str, identity_key: str, kind: str = "dense") -> str:
    """One collection per (corpus bytes, encoder identity): another model never reuses it."""
    return f"{safe_name(dataset_name)}-{fingerprint[:16]}-{kind}-{identity_key[:16]}"


class DenseRetriever:
    name = "dense"

    def __init__(self, corpus, encoder, cache, progress: ProgressFactory, *, exact: bool = True,
                 hnsw: HnswSettings = HnswSettings(), encoder_location: str = "in-process",
                 recall_queries: int = 100, target_recall: float | None = None):
        self.corpus = corpus
        self.encoder = encoder
        self.cache = cache
        self.progress = progress
        self.exact = exact
        self.hnsw = hnsw
        self.encoder_location = encoder_location
        self.recall_queries = recall_queries   # HNSW: queries sampled to measure recall (0: none)
        self.target_recall = target_recall     # HNSW: choose ef to reach it on the sample
        self.recall: dict | None = None
        self.collection_id = ""
        self._fingerprint = ""
        self.info = None
        self._counts = {"documents_encoded": 0, "documents_reused_from_cache": 0, "vectors_skipped": False,
                        "queries_encoded": 0, "queries_reused_from_cache": 0}
        self.latency = LatencyRecorder()
        share(self.latency, encoder)

    def use_latency(self, recorder: LatencyRecorder) -> None:
        self.latency = recorder
        share(recorder, self.encoder)

    def _encode(self, role: TextRole, items, total: int | None) -> CachedEncoding:
        return encode_with_cache(self.encoder, self.cache, role, items, batch_size=ENCODE_CHUNK,
                                 progress=self.progress, total=total)

    def _record(self, what: str, stream: CachedEncoding) -> None:
        # Identical texts within a chunk are encoded once: they count as reused, not encoded.
        # Documents: this prepare's work. Queries: every retrieve of the run (an instruction job
        # retrieves once per mode), so they add up.
        encoded, reused = stream.stats.encoded, stream.stats.reused + stream.stats.deduplicated
        self.latency.encoded(what, encoded, stream.stats.encode_s)
        if what == "queries":
            encoded += self._counts[f"{what}_encoded"]
            reused += self._counts[f"{what}_reused_from_cache"]
        self._counts[f"{what}_encoded"] = encoded
        self._counts[f"{what}_reused_from_cache"] = reused

    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        self.collection_id = collection_id_for(dataset.name, fingerprint, self.encoder.identity_key, self.name)
        self._fingerprint = f"{fingerprint}:{self.encoder.identity_key}"
        info = self.corpus.find_vector_collection(self.collection_id)
        if info is not None and info.state == CorpusState.READY:
            self.info = info
            self._counts["vectors_skipped"] = True
            self._build_graph()
            return
        self._create_collection(self._fingerprint)

        def texts() -> Iterator[tuple[str, str]]:
            for document in tracker.observe(dataset.corpus()):
                text = document.full_text
                if not text:
                    # An empty text has no meaning to encode; scoring its vector would be noise.
                    tracker.record_error(document.doc_id, "document has neither title nor text; not encoded")
                    continue
                yield document.doc_id, text

        stream = self._encode(TextRole.PASSAGE, texts(), count_lines(dataset.corpus_path))
        for doc_ids, vectors in stream:
            self._upsert(doc_ids, vectors)
        self._record("documents", stream)
        self.info = self.corpus.commit_vectors(self.collection_id)
        self._build_graph()

    def _build_graph(self) -> None:
        """HNSW search: the embedded backend builds its graph on the first HNSW search, so one query now
        makes that time part of indexing rather than of the recall measurement or the first search."""
        if not self.exact:
            query = np.ones((1, self.encoder.dimension), np.float32)
            list(self.corpus.vector_search(self.collection_id, ["graph"], query, 1, False))   # a generator: run it
            self.info = self.corpus.find_vector_collection(self.collection_id)   # results.json: the graph is built

    def retrieve(self, queries: list[Query], k: int) -> Run:
        with self.latency.answering(len(queries)):
            return self._retrieve(queries, k)

    def _retrieve(self, queries: list[Query], k: int) -> Run:
        query_ids: list[str] = []
        blocks: list[np.ndarray] = []
        stream = self._encode(TextRole.QUERY, ((q.query_id, q.text) for q in queries), len(queries))
        for ids, vectors in self.latency.timed_chunks(f"{self.name} query encoding", stream, ENCODE_BASIS):
            query_ids.extend(ids)
            blocks.append(vectors)
        self._record("queries", stream)
        vectors = self._join(blocks)
        if not self.exact:
            self._choose_search_width(query_ids, vectors, k)
        bar = self.progress(f"retrieving ({self.name})", len(queries), "query")
        run: Run = {}
        try:
            search = lambda start, end: self._search(query_ids[start:end], vectors[start:end], k)  # noqa: E731
            for query_id, ranking in self.latency.batched(f"{self.name} search", len(query_ids), SEARCH_CHUNK, search,
                                                          SEARCH_BASIS):
                run[query_id] = ranking
                bar.update(1)
        finally:
            bar.close()
        return run

    # -- approximate search: its width, and its recall against exact search ------------------

    def _use_ef(self, ef: int) -> None:
        """Search the collection at HNSW width `ef` (create() of an existing collection sets it,
        and must run even for a collection reused from an earlier run, which kept that run's ef)."""
        self.hnsw = dataclasses.replace(self.hnsw, ef_search=ef)
        self._create_collection(self._fingerprint)

    def _choose_search_width(self, query_ids: list[str], vectors, k: int) -> None:
        self.recall = measured_width(self.corpus, self.collection_id, query_ids, vectors, k, use_ef=self._use_ef,
                                     ef=self.hnsw.ef_search, sample=self.recall_queries, target=self.target_recall)

    # -- the representation: dense vectors here; sparse.SparseRetriever overrides -------------

    def _create_collection(self, fingerprint: str) -> None:
        self.corpus.create_vector_collection(self.collection_id, self.encoder.dimension,
                                             self.encoder.describe()["distance"], fingerprint, self.hnsw)

    def _upsert(self, doc_ids: list[str], vectors) -> None:
        self.corpus.upsert_vectors(self.collection_id, doc_ids, vectors)

    def _join(self, blocks: list):
        return np.concatenate(blocks) if blocks else np.zeros((0, self.encoder.dimension), dtype=np.float32)

    def _search(self, query_ids: list[str], vectors, k: int):
        return self.corpus.vector_search(self.collection_id, query_ids, vectors, k, self.exact)

    def describe(self) -> dict:
        return {
            "name": self.name,
            "encoder": {**self.encoder.describe(), "location": self.encoder_location},
            "document_text": "title + ' ' + text, stripped (BEIR/MTEB convention)",
            "search": "exact" if self.exact else {"hnsw": self.hnsw.as_dict(),
                                                  **({"recall": self.recall} if self.recall else {})},
            "vector_backend": self.info.backend if self.info else None,
            "collection_id": self.collection_id,
            "collection": self.info.config if self.info else {},
        }

    def counts(self) -> dict:
        return dict(self._counts)
