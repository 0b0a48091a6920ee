import pytest

from irforge.fusion import reciprocal_rank_fusion

BM25 = {"q": {"a": 12.0, "b": 9.0, "c": 3.0}}
DENSE = {"q": {"c": 0.9, "a": 0.8, "d": 0.1}}


def test_scores_are_summed_reciprocal_ranks():
    fused = reciprocal_rank_fusion([BM25, DENSE], k=60)["q"]
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["d"] == pytest.approx(1 / 63)


def test_ranks_follow_the_tie_rule_not_insertion_order():
    tied = {"q": {"x": 1.0, "y": 1.0}}  # y ranks first: doc id descending
    fused = reciprocal_rank_fusion([tied, {"q": {}}], k=1)["q"]
    assert fused == {"y": 1 / 2, "x": 1 / 3}


def test_weights_and_queries_missing_from_one_run():
    fused = reciprocal_rank_fusion([BM25, {"other": {"z": 1.0}}], k=60, weights=[2.0, 1.0])
    assert fused["q"]["a"] == pytest.approx(2 / 61)
    assert fused["other"] == {"z": pytest.approx(1 / 61)}


@pytest.mark.parametrize("kwargs", [{"k": 0}, {"weights": [1.0]}, {"weights": [0.0, 0.0]}, {"weights": [-1.0, 1.0]}])
def test_bad_parameters_are_refused(kwargs):
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([BM25, DENSE], **kwargs)


def test_one_run_is_not_a_fusion():
    with pytest.raises(ValueError, match="two runs"):
        reciprocal_rank_fusion([BM25])
