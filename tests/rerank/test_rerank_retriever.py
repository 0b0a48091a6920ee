"""RerankingRetriever over irforge's own BM25 on real SciFact data: the reranked top `depth` in
exactly the reranker's order above the untouched rest of the first stage, the right texts, one
corpus pass, and the real CrossEncoder end to end."""

from __future__ import annotations

import numpy as np
import pytest
from irforge.common.progress import no_progress
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical import make_backend
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.pipeline.retrievers.base import CorpusTracker
from irforge.pipeline.retrievers.bm25 import Bm25Retriever
from irforge.pipeline.retrievers.rerank import RerankingRetriever
from irforge.ranking import ranked


class Reverse:
    """A deterministic 'reranker': the last document it is given scores highest."""

    def __init__(self):
        self.calls: list[list[tuple[str, list[str]]]] = []

    def score_batch(self, items):
        self.calls.append(items)
        return [np.arange(len(documents), dtype=np.float32) for _, documents in items]

    def describe(self):
        return {"kind": "reverse"}

    def counts(self):
        return {"windows": 0}


class CountingDataset:
    """The dataset, counting passes over the corpus."""

    def __init__(self, dataset: BeirDataset):
        self.dataset, self.passes = dataset, 0

    def __getattr__(self, name):
        return getattr(self.dataset, name)

    def corpus(self):
        self.passes += 1
        return self.dataset.corpus()


@pytest.fixture(scope="module")
def setup(scifact_subset, tmp_path_factory):
    corpus = CorpusService(make_backend("embedded", index_dir=tmp_path_factory.mktemp("index")))
    dataset = BeirDataset.open(scifact_subset)
    bm25 = Bm25Retriever(corpus, Bm25Settings(), no_progress)
    bm25.prepare(dataset, dataset.corpus_fingerprint(), CorpusTracker(judged=set()))
    queries = list(dataset.queries())
    texts = {document.doc_id: document.full_text for document in dataset.corpus()}
    yield dataset, bm25, queries, texts
    corpus.close()


def reranked(dataset, bm25, reranker, depth):
    retriever = RerankingRetriever(bm25, reranker, depth=depth, queries_per_call=16)
    counting = CountingDataset(dataset)
    retriever.prepare(counting, dataset.corpus_fingerprint(), CorpusTracker(judged=set()))  # BM25 index reused
    counting.passes = 0
    return retriever, counting


@pytest.mark.parametrize("depth, k", [(10, 50), (10, 5), (100, 100)])
def test_top_depth_reversed_rest_unchanged(setup, depth, k):
    dataset, bm25, queries, texts = setup
    first = bm25.retrieve(queries, max(k, depth))
    reverse = Reverse()
    retriever, counting = reranked(dataset, bm25, reverse, depth)
    run = retriever.retrieve(queries, k)

    assert counting.passes == 1  # the texts came from one pass over the corpus
    assert run.keys() == first.keys() and len(run) == 40
    for query in queries:
        order = [doc_id for doc_id, _ in ranked(first[query.query_id])]
        expected = (order[:depth][::-1] + order[depth:])[:k]
        assert [doc_id for doc_id, _ in ranked(run[query.query_id])] == expected
    # 16 queries per call; each item is the query text and its head's texts in first-stage order
    assert [len(call) for call in reverse.calls] == [16, 16, 8]
    assert [item for call in reverse.calls for item in call] == [
        (query.text, [texts[doc_id] for doc_id, _ in ranked(first[query.query_id])[:depth]]) for query in queries]
    counts = retriever.counts()
    assert counts["ingest_skipped"] and counts["rerank_queries"] == 40 and counts["rerank_windows"] == 0
    assert counts["rerank_pairs_scored"] == sum(min(depth, len(scores)) for scores in first.values())


def test_reranked_scores_sit_above_the_rest(setup):
    dataset, bm25, queries, _ = setup
    retriever, _ = reranked(dataset, bm25, Reverse(), depth=5)
    run = retriever.retrieve(queries[:3], 30)
    for scores in run.values():
        ordered = ranked(scores)
        assert min(score for _, score in ordered[:5]) > max(score for _, score in ordered[5:])
    description = retriever.describe()
    assert description["name"] == "bm25-rerank" and description["rerank_depth"] == 5
    assert description["first_stage"]["name"] == "bm25" and description["reranker"] == {"kind": "reverse"}


def test_retrieve_before_prepare_is_refused(setup):
    _, bm25, queries, _ = setup
    with pytest.raises(RuntimeError, match="prepare"):
        RerankingRetriever(bm25, Reverse()).retrieve(queries, 10)
    with pytest.raises(ValueError, match="depth"):
        RerankingRetriever(bm25, Reverse(), depth=0)


def test_the_cross_encoder_end_to_end(setup, core):
    """The real model (full abstracts, ~0.25 s a pair on 2 cores): the run follows its scores."""
    dataset, bm25, queries, _ = setup
    answers = []

    class Recording:
        def score_batch(self, items):
            answers.extend(core.score_batch(items))
            return answers[-len(items):]

    retriever, _ = reranked(dataset, bm25, Recording(), depth=5)
    run = retriever.retrieve(queries[:3], 20)
    first = bm25.retrieve(queries[:3], 20)
    for query, scores in zip(queries[:3], answers, strict=True):
        head = [doc_id for doc_id, _ in ranked(first[query.query_id])[:5]]
        assert scores.shape == (5,) and np.isfinite(scores).all()
        expected = [doc_id for doc_id, _ in ranked(dict(zip(head, scores.tolist())))]
        assert [doc_id for doc_id, _ in ranked(run[query.query_id])] == expected + [
            doc_id for doc_id, _ in ranked(first[query.query_id])[5:]]
