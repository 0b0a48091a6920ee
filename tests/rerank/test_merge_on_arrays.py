"""RerankingRetriever._merge on arrays equals the dict merge it replaced, bit for bit and in order."""

import numpy as np

from irforge.pipeline.retrievers.rerank import RerankingRetriever
from irforge.ranking import Ranking, ranked


def reference_merge(first: dict, head: list[str], scores) -> dict:
    reranked = set(head)
    rest = {doc_id: score for doc_id, score in first.items() if doc_id not in reranked}
    base = max(rest.values(), default=0.0)
    order = ranked(dict(zip(head, (float(score) for score in scores))))
    return {**rest, **{doc_id: base + (len(order) - position) for position, (doc_id, _) in enumerate(order)}}


def check(first: dict, depth: int, scores):
    ranking = Ranking.of(first)
    head = ranking.head(depth).doc_ids.tolist()
    merged = RerankingRetriever._merge(ranking, head, scores[:len(head)])
    assert merged.pairs() == ranked(reference_merge(first, head, scores[:len(head)]))
    return merged


def test_reranked_head_goes_above_the_rest_with_ties_in_both():
    rng = np.random.default_rng(3)
    first = {f"d{i:02d}": float(rng.integers(0, 5)) for i in range(40)}
    merged = check(first, 10, [float(s) for s in rng.integers(0, 3, 10)])  # reranker ties too
    assert len(merged) == 40 and merged.scores[9] > merged.scores[10]


def test_everything_reranked_and_nothing_left():
    merged = check({"a": 1.0, "b": 1.0, "c": 0.5}, 5, [0.2, 0.9, 0.2])
    assert merged.pairs() == [("a", 3.0), ("c", 2.0), ("b", 1.0)]  # base 0.0; c above b: doc id descending


def test_scores_too_large_for_the_offsets_fall_back_to_the_tie_rule():
    # base + 1 == base beyond 2**53: the placed scores tie with the rest, and the tie rule orders them.
    first = {"a": 1e17, "b": 1e17, "c": 1e17, "z": 1e17}
    check(first, 2, [0.1, 0.9])
