import pytest

from irforge.fusion import normalized_linear_fusion

BM25 = {"q": {"a": 12.0, "b": 9.0, "c": 3.0}}
DENSE = {"q": {"c": 0.9, "a": 0.8, "d": 0.1}}


def test_min_max_per_query_then_weighted_sum():
    fused = normalized_linear_fusion([BM25, DENSE], weights=[0.3, 0.7])["q"]
    # bm25 normalised: a 1, b (9-3)/9 = 2/3, c 0; dense: c 1, a 0.7/0.8 = 0.875, d 0
    assert fused["a"] == pytest.approx(0.3 * 1 + 0.7 * 0.875)
    assert fused["b"] == pytest.approx(0.3 * 2 / 3)
    assert fused["c"] == pytest.approx(0.7 * 1)
    assert fused["d"] == pytest.approx(0.0)


def test_a_single_or_tied_list_normalises_to_one():
    fused = normalized_linear_fusion([{"q": {"x": 5.0}}, {"q": {"x": 2.0, "y": 2.0}}])["q"]
    assert fused == {"x": 2.0, "y": 1.0}


def test_default_weights_are_equal():
    assert normalized_linear_fusion([BM25, DENSE]) == normalized_linear_fusion([BM25, DENSE], weights=[1, 1])
