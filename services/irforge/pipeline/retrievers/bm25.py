"""BM25 through the corpus service's lexical backend."""

from __future__ import annotations

from collections.abc import Iterator

from irforge.common.iterables import chunked
from irforge.common.progress import ProgressFactory
from irforge.corpus.core import SEARCH_CHUNK
from irforge.corpus.lexical.base import CorpusState, document_id_problem
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.data.types import Document, Query, Run
from irforge.pipeline.latency import LatencyRecorder, batch_basis
from irforge.pipeline.retrievers.base import CorpusTracker, count_lines, safe_name

INGEST_BATCH = 500
BASIS = batch_basis(SEARCH_CHUNK, "batch search calls to the corpus service", "network included when remote")


def corpus_id_for(dataset_name: str, fingerprint: str, settings: Bm25Settings) -> str:
    """Same corpus bytes and settings -> same index, on every backend; anything else -> a new one."""
    return f"{safe_name(dataset_name)}-{fingerprint[:16]}-bm25-k1-{settings.k1:g}-b-{settings.b:g}"


def reuse_problem(info, fingerprint: str, tracker: CorpusTracker, dataset: BeirDataset) -> str | None:
    """Why a READY index cannot stand for this corpus, or None when it provably does: it was built
    from these corpus bytes, and it holds exactly the corpus's indexable documents (an index that
    lost documents, or was committed from part of a stream, must never be reused silently).
    Streams the corpus through `tracker`, which the eval job needs once anyway."""
    if info.fingerprint != fingerprint:
        return f"index fingerprint {info.fingerprint[:12]} differs from the corpus's {fingerprint[:12]}"
    indexable = sum(1 for document in tracker.observe(dataset.corpus()) if document_id_problem(document) is None)
    if info.document_count != indexable:
        return f"index holds {info.document_count} documents, the corpus has {indexable} indexable ones"
    return None


class Bm25Retriever:
    name = "bm25"

    def __init__(self, corpus, settings: Bm25Settings, progress: ProgressFactory):
        self.corpus = corpus
        self.settings = settings
        self.progress = progress
        self.corpus_id = ""
        self.info = None
        self._counts = {"documents_ingested": 0, "ingest_skipped": False}
        self.latency = LatencyRecorder()

    def use_latency(self, recorder: LatencyRecorder) -> None:
        self.latency = recorder

    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        self.corpus_id = corpus_id_for(dataset.name, fingerprint, self.settings)
        info = self.corpus.find_corpus(self.corpus_id)
        if info is not None and info.state == CorpusState.READY:
            problem = reuse_problem(info, fingerprint, tracker, dataset)
            if problem is None:
                self.info = info
                self._counts["ingest_skipped"] = True
                return
            self._counts["reindexed_because"] = problem
        self.corpus.create_corpus(self.corpus_id, fingerprint, self.settings)
        bar = self.progress(f"indexing {dataset.name} (bm25)", count_lines(dataset.corpus_path), "doc")

        def batches() -> Iterator[list[Document]]:
            for batch in chunked(tracker.observe(dataset.corpus()), INGEST_BATCH):
                yield batch
                bar.update(len(batch))

        try:
            for progress in self.corpus.ingest(self.corpus_id, batches()):
                self._counts["documents_ingested"] = progress.indexed
                for error in progress.errors:
                    tracker.record_error(error.doc_id, error.message)
        finally:
            bar.close()
        self.info = self.corpus.find_corpus(self.corpus_id)

    def retrieve(self, queries: list[Query], k: int) -> Run:
        with self.latency.answering(len(queries)):
            return self._retrieve(queries, k)

    def _retrieve(self, queries: list[Query], k: int) -> Run:
        bar = self.progress("retrieving (bm25)", len(queries), "query")
        run: Run = {}
        # Timed per backend call: the corpus service scores SEARCH_CHUNK queries at once.
        search = lambda start, end: self.corpus.batch_search(self.corpus_id, queries[start:end], k)  # noqa: E731
        try:
            for query_id, ranking in self.latency.batched("bm25 search", len(queries), SEARCH_CHUNK, search, BASIS):
                run[query_id] = ranking
                bar.update(1)
        finally:
            bar.close()
        return run

    def describe(self) -> dict:
        return {"name": self.name, "backend": self.info.backend if self.info else None,
                "corpus_id": self.corpus_id, **(self.info.config if self.info else {})}

    def counts(self) -> dict:
        return dict(self._counts)
