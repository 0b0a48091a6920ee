"""Fusion on arrays gives, bit for bit, what summing into dicts gives (the implementation it
replaced, written out here as the reference), ordered by the tie rule, for dict and Ranking inputs."""

import random

import pytest

from irforge.fusion import normalized_linear_fusion, reciprocal_rank_fusion
from irforge.ranking import Ranking, ranked


def reference_rrf(runs, k, weights):
    fused = {}
    for query_id in sorted(set().union(*runs)):
        scores = {}
        for run, weight in zip(runs, weights):
            for rank, (doc_id, _) in enumerate(ranked(run.get(query_id, {})), start=1):
                scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
        fused[query_id] = scores
    return fused


def reference_linear(runs, weights):
    def min_max(scores):
        if not scores:
            return {}
        low, high = min(scores.values()), max(scores.values())
        if high == low:
            return {doc_id: 1.0 for doc_id in scores}
        return {doc_id: (score - low) / (high - low) for doc_id, score in scores.items()}

    fused = {}
    for query_id in sorted(set().union(*runs)):
        scores = {}
        for run, weight in zip(runs, weights):
            for doc_id, value in min_max(run.get(query_id, {})).items():
                scores[doc_id] = scores.get(doc_id, 0.0) + weight * value
        fused[query_id] = scores
    return fused


def random_run(seed: int, queries: int = 30) -> dict[str, dict[str, float]]:
    """Coarse scores (many ties), overlapping documents, one query of three missing, one tied list."""
    rng = random.Random(seed)
    run = {}
    for q in range(queries):
        if q % 3 == seed % 3:
            continue
        docs = rng.sample(range(80), rng.randint(1, 40))
        run[f"q{q}"] = {f"d{d}": (2.5 if q == 7 else round(rng.uniform(0, 3), 1)) for d in docs}
    run["q-empty"] = {}
    return run


@pytest.mark.parametrize("as_rankings", [False, True])
@pytest.mark.parametrize("weights", [(1.0, 1.0), (0.3, 1.7), (1, 0)])
def test_fused_rankings_equal_the_dict_sums_exactly(as_rankings, weights):
    runs = [random_run(1), random_run(2)]
    given = [{q: Ranking.of(s) for q, s in run.items()} for run in runs] if as_rankings else runs
    for fused, expected in ((reciprocal_rank_fusion(given, k=60, weights=weights), reference_rrf(runs, 60, weights)),
                            (normalized_linear_fusion(given, weights=weights), reference_linear(runs, weights))):
        assert list(fused) == list(expected)
        for query_id, ranking in fused.items():
            assert isinstance(ranking, Ranking)
            assert ranking.pairs() == ranked(expected[query_id])  # same floats, tie-rule order


def test_ties_in_the_fused_scores_are_ordered_by_doc_id_descending():
    # a and b swap ranks between the runs: equal RRF sums, so b (higher id) first.
    fused = reciprocal_rank_fusion([{"q": {"a": 2.0, "b": 1.0}}, {"q": {"b": 2.0, "a": 1.0}}])["q"]
    assert list(fused) == ["b", "a"] and fused["a"] == fused["b"]
