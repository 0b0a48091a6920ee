"""The columnar Ranking keeps the tie rule and reads like the dict it replaces."""

import random

import numpy as np
import pytest

from irforge.ranking import Ranking, ranked, top_k


def scores_with_ties(seed: int, n: int = 300) -> dict[str, float]:
    rng = random.Random(seed)
    return {f"d{rng.randrange(10**6)}": rng.choice([0.0, 0.5, 1.0, 1.25, 2.0]) for _ in range(n)}


@pytest.mark.parametrize("seed", range(5))
def test_of_orders_like_ranked_and_reads_like_the_dict(seed):
    scores = scores_with_ties(seed)
    ranking = Ranking.of(scores)
    assert ranking.pairs() == ranked(scores)
    assert ranked(ranking) == ranked(scores)
    assert dict(ranking) == scores and ranking.as_dict() == scores
    assert list(ranking) == [doc_id for doc_id, _ in ranked(scores)]
    some = next(iter(scores))
    assert ranking[some] == scores[some] and some in ranking and "absent" not in ranking
    with pytest.raises(KeyError):
        ranking["absent"]


@pytest.mark.parametrize("k", [0, 1, 10, 299, 300, 1000])
def test_top_k_of_a_ranking_is_the_same_documents_as_of_the_dict(k):
    scores = scores_with_ties(7)
    sliced = top_k(Ranking.of(scores), k)
    assert isinstance(sliced, Ranking)
    assert sliced.pairs() == ranked(top_k(scores, k))


def test_without_drops_only_the_identical_id():
    ranking = Ranking(["b", "a", "c"], [3.0, 2.0, 1.0])
    assert ranking.without("a").pairs() == [("b", 3.0), ("c", 1.0)]
    assert ranking.without("zz") is ranking


def test_arrays_are_read_only_and_shapes_checked():
    ranking = Ranking(["b", "a"], np.array([2.0, 1.0], dtype=np.float32))
    assert ranking.scores.dtype == np.float64
    with pytest.raises(ValueError):
        ranking.scores[0] = 5.0
    with pytest.raises(ValueError, match="one score per document id"):
        Ranking(["a", "b"], [1.0])
    assert len(Ranking.empty()) == 0 and ranked(Ranking.empty()) == []
