"""Re-ranking: a first-stage retriever's top `depth` documents per query re-scored by a reranker
(a CrossEncoderReranker, RayReranker, endpoint client or ListwiseLLMReranker: anything with
`score_batch([(query, documents)])`, else `score(query, documents)`).

- The first stage retrieves max(k, depth) documents; its top `depth` (by irforge's tie rule) are
  reranked, the rest keep their first-stage order below them, and the run is cut to k.
- Texts (title + " " + text, as the first stage saw them) come from one pass over the corpus at
  retrieve time, keeping only the documents to rerank: memory is bounded by queries x depth, and
  prepare() keeps nothing but the dataset handle.
- Run scores of reranked documents are rank-derived: base + (n - position), with base the best
  score of the non-reranked rest, so every reranked document ranks above the rest whatever the
  scales of the two stages, and the order (reranker score, ties by doc id descending) survives
  the trip through trec_eval exactly. The reranker's own scores stay out of run.trec.
"""

from __future__ import annotations

import time

import numpy as np

from irforge.common.progress import ProgressFactory, no_progress
from irforge.data import BeirDataset
from irforge.data.types import Query, Run
from irforge.models.reranker import RerankError
from irforge.pipeline.latency import LatencyRecorder, batch_basis, share
from irforge.pipeline.retrievers.base import CorpusTracker
from irforge.ranking import Ranking, ranked, top_k


TEXTS_BASIS = ("one pass over the corpus per retrieve for the texts of every query's documents to rerank; "
               "time per query = its time / queries")


class RerankingRetriever:
    def __init__(self, first_stage, reranker, depth: int = 100, queries_per_call: int = 8,
                 progress: ProgressFactory = no_progress):
        if depth < 1:
            raise ValueError(f"rerank depth must be at least 1, got {depth}")
        self.first_stage = first_stage
        self.reranker = reranker
        self.depth = depth
        self.queries_per_call = max(1, queries_per_call)  # a call carries several queries' pairs
        self.progress = progress
        self.name = f"{first_stage.name}-rerank"
        self._dataset: BeirDataset | None = None
        self._counts = {"rerank_queries": 0, "rerank_pairs_scored": 0}
        self.use_latency(LatencyRecorder())

    def use_latency(self, recorder: LatencyRecorder) -> None:
        """One recorder for the first stage, the reranker (an endpoint times its requests) and this."""
        self.latency = recorder
        share(recorder, self.first_stage, self.reranker)

    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        self.first_stage.prepare(dataset, fingerprint, tracker)
        self._dataset = dataset

    def retrieve(self, queries: list[Query], k: int) -> Run:
        with self.latency.answering(len(queries)):
            return self._retrieve(queries, k)

    def _retrieve(self, queries: list[Query], k: int) -> Run:
        if self._dataset is None:
            raise RuntimeError("prepare() first: reranking reads document texts from the dataset")
        first = self.first_stage.retrieve(queries, max(k, self.depth))
        first = {query_id: Ranking.of(scores) for query_id, scores in first.items()}
        heads = {query_id: ranking.head(self.depth).doc_ids.tolist() for query_id, ranking in first.items()}
        started = time.perf_counter()
        texts = self._texts({doc_id for head in heads.values() for doc_id in head})
        self.latency.batch("rerank document texts", list(heads), time.perf_counter() - started, TEXTS_BASIS)

        items = [(query, heads.get(query.query_id, [])) for query in queries if heads.get(query.query_id)]
        bar = self.progress(f"reranking ({self.name})", len(items), "query")
        run: Run = dict(first)
        try:
            for start in range(0, len(items), self.queries_per_call):
                chunk = items[start:start + self.queries_per_call]
                batch = [(query.text, [texts[doc_id] for doc_id in head]) for query, head in chunk]
                started = time.perf_counter()
                all_scores = (self.reranker.score_batch(batch) if hasattr(self.reranker, "score_batch")
                              else [self.reranker.score(*item) for item in batch])
                self.latency.batch("rerank", [query.query_id for query, _ in chunk], time.perf_counter() - started,
                                   batch_basis(self.queries_per_call, "reranker calls", f"top {self.depth} documents each"))
                for (query, head), scores in zip(chunk, all_scores):
                    run[query.query_id] = self._merge(first[query.query_id], head, scores)
                    self._counts["rerank_queries"] += 1
                    self._counts["rerank_pairs_scored"] += len(head)
                bar.update(len(chunk))
        finally:
            bar.close()
        return {query_id: top_k(scores, k) for query_id, scores in run.items()}

    def _texts(self, wanted: set[str]) -> dict[str, str]:
        """One pass over the corpus, keeping only the texts of documents to rerank."""
        texts = {}
        for document in self._dataset.corpus():
            if document.doc_id in wanted:
                texts[document.doc_id] = document.full_text
        missing = wanted - texts.keys()
        if missing:
            raise RerankError(f"the first stage returned {len(missing)} documents the corpus does not hold "
                              f"(e.g. {sorted(missing)[:5]}); was its index built from another corpus?")
        return texts

    @staticmethod
    def _merge(first: Ranking, head: list[str], scores) -> Ranking:
        """`head` (the first len(head) documents of `first`) in the reranker's order, above the rest."""
        if len(scores) != len(head):
            raise RerankError(f"the reranker returned {len(scores)} scores for {len(head)} documents")
        rest_ids, rest_scores = first.doc_ids[len(head):], first.scores[len(head):]
        base = float(rest_scores[0]) if len(rest_scores) else 0.0  # the best of the rest
        order = ranked(dict(zip(head, (float(score) for score in scores))))
        placed = base + (len(order) - np.arange(len(order), dtype=np.float64))
        doc_ids = np.concatenate([np.asarray([doc_id for doc_id, _ in order], dtype=object), rest_ids])
        merged = np.concatenate([placed, rest_scores])
        if np.all(np.diff(placed) < 0) and (not len(rest_scores) or placed[-1] > rest_scores[0]):
            return Ranking(doc_ids, merged)
        # base + 1 == base only for scores beyond 2**53: ties then, which the tie rule must order.
        return Ranking.of(dict(zip(doc_ids.tolist(), merged.tolist())))

    def describe(self) -> dict:
        reranker = self.reranker.describe() if hasattr(self.reranker, "describe") else {"type": type(self.reranker).__name__}
        return {"name": self.name, "first_stage": self.first_stage.describe(), "reranker": reranker,
                "rerank_depth": self.depth, "first_stage_k": f"max(top_k, {self.depth})",
                "placement": "reranked top depth above the first stage's rest; run scores rank-derived"}

    def counts(self) -> dict:
        extra = self.reranker.counts() if hasattr(self.reranker, "counts") else {}
        return {**self.first_stage.counts(), **self._counts, **{f"rerank_{key}": value for key, value in extra.items()}}
