"""Every fusion method and normalisation equals ranx's `fuse` (an independent implementation, in
numba) on real SciFact runs, to 1e-9 per (query, document): irforge's names map onto ranx's
(catalogue.py) and the numbers are the same. Hand counts pin what ranx cannot show (weighted RRF,
queries missing from a run, the hybrid's tied-run rule).

The five unweighted Comb methods on the runs' own scores (norm "none") are checked against a sum,
product, max or min written out here instead of ranx: numba compiles each ranx method once more
for un-normalised runs (several seconds each in CI), and these five are one line of arithmetic
each. ranx still checks "none" through wsum and wmnz, and every Comb method under every
normalisation."""

from __future__ import annotations

from pathlib import Path

import pytest
from ranx import Run as RanxRun
from ranx import fuse as ranx_fuse

from irforge.config.pipeline import FUSION_METHODS, FUSION_NORMS, NORMALISED_FUSIONS, WEIGHTED_FUSIONS
from irforge.runs import read_run_file
from irforge.fusion import METHODS, NORMALISATIONS, Fusion
from irforge.ranking import ranked

from .ranx_reference import ranx_run as ranx_built

DATA = Path(__file__).parent / "data"
RUN_FILES = ("scifact-bm25.top50.trec.gz", "scifact-minilm.top50.trec.gz", "scifact-bm25-k1.2-b0.75.top50.trec.gz")
QUERIES = 40        # a slice: ranx's numba code is the slow part, not the runs
WEIGHTS = (0.2, 0.5, 0.3)


@pytest.fixture(scope="module")
def runs() -> list[dict[str, dict[str, float]]]:
    """Three real runs of the same SciFact test queries (tests/fusion/data/SOURCE.md), sliced."""
    read = [read_run_file(DATA / name).run for name in RUN_FILES]
    queries = sorted(set.intersection(*(set(run) for run in read)))[:QUERIES]
    return [{q: dict(run[q]) for q in queries} for run in read]


def ranx_run(run: dict[str, dict[str, float]]) -> RanxRun:
    """The run as ranx holds it, each query's documents inserted in the tie-rule order: ranx's RRF
    ranks documents by their order in the dict, which for irforge is score then id, descending."""
    return ranx_built({q: dict(ranked(scores)) for q, scores in run.items()})


def assert_same_scores(ours, theirs) -> None:
    assert set(ours) == set(theirs)
    worst = 0.0
    for query_id, scores in ours.items():
        expected = theirs[query_id]
        assert set(scores) == set(expected), query_id
        worst = max([worst, *(abs(scores[d] - expected[d]) for d in expected)])
    assert worst <= 1e-9, worst


# d's fused score from its scores in the runs that retrieved it, as Fox & Shaw define each method.
BY_HAND = {"combsum": sum, "combmnz": lambda scores: sum(scores) * len(scores),
           "combanz": lambda scores: sum(scores) / len(scores), "combmax": max, "combmin": min}


def _cases():
    for method in METHODS.values():
        if method.ranx is None:
            continue
        for norm in NORMALISATIONS if method.normalised else ("none",):
            if norm == "none" and method.name in BY_HAND:
                continue        # test_unnormalised_comb_methods_equal_the_arithmetic_by_hand
            yield pytest.param(method.name, norm, id=f"{method.name}-{norm}")


@pytest.mark.parametrize("method, norm", list(_cases()))
def test_every_method_and_normalisation_equals_ranx_fuse(runs, method, norm):
    weighted = METHODS[method].weighted and method != "rrf"   # ranx's rrf takes no weights (see below)
    params = {"weights": list(WEIGHTS)} if weighted else ({"k": 60} if method == "rrf" else {})
    theirs = ranx_fuse([ranx_run(run) for run in runs], norm=None if norm == "none" else norm,
                       method=METHODS[method].ranx, params=params)
    ours = Fusion(method, norm=norm, weights=WEIGHTS if weighted else None).fuse(runs)
    assert_same_scores(ours, {q: dict(theirs.run[q]) for q in theirs.run})


@pytest.mark.parametrize("method", sorted(BY_HAND))
def test_unnormalised_comb_methods_equal_the_arithmetic_by_hand(runs, method):
    expected = {q: {d: BY_HAND[method]([run[q][d] for run in runs if d in run[q]]) for d in set().union(*(run[q] for run in runs))}
                for q in runs[0]}
    assert_same_scores(Fusion(method, norm="none").fuse(runs), expected)


def test_weighted_rrf_equals_ranx_wsum_of_hand_made_reciprocal_ranks(runs):
    reciprocal = [{q: {d: 1 / (60 + rank) for rank, (d, _) in enumerate(ranked(scores), start=1)}
                   for q, scores in run.items()} for run in runs]
    theirs = ranx_fuse([ranx_run(run) for run in reciprocal], norm=None, method="wsum", params={"weights": list(WEIGHTS)})
    ours = Fusion("rrf", weights=WEIGHTS, rrf_k=60).fuse(runs)
    assert_same_scores(ours, {q: dict(theirs.run[q]) for q in theirs.run})


def test_the_hybrids_linear_is_ranx_wsum_min_max_on_real_runs(runs):
    theirs = ranx_fuse([ranx_run(run) for run in runs], norm="min-max", method="wsum", params={"weights": list(WEIGHTS)})
    ours = Fusion("linear", weights=WEIGHTS).fuse(runs)
    assert_same_scores(ours, {q: dict(theirs.run[q]) for q in theirs.run})


def test_where_linear_and_ranx_min_max_part_a_run_whose_scores_all_tie():
    tied = {"q": {"x": 2.0, "y": 2.0}}
    other = {"q": {"x": 3.0, "z": 1.0}}
    # ranx's min-max: a tied run normalises to 0 (denominator floored at 1e-9); the hybrid's to 1.
    assert Fusion("wsum").fuse([tied, other])["q"].as_dict() == {"x": 1.0, "y": 0.0, "z": 0.0}
    assert Fusion("linear").fuse([tied, other])["q"].as_dict() == {"x": 2.0, "y": 1.0, "z": 0.0}


def test_hand_counts_and_queries_missing_from_a_run():
    a = {"q1": {"d1": 4.0, "d2": 2.0, "d3": 0.0}, "q2": {"d9": 1.0}}
    b = {"q1": {"d2": 10.0, "d4": 0.0}}
    # min-max: a/q1 d1 1, d2 .5, d3 0; b/q1 d2 1, d4 0. q2 is only in a (ranx refuses that; irforge fuses it).
    assert Fusion("combsum").fuse([a, b])["q1"].as_dict() == {"d1": 1.0, "d2": 1.5, "d3": 0.0, "d4": 0.0}
    assert Fusion("combmnz").fuse([a, b])["q1"]["d2"] == 3.0
    assert Fusion("combanz").fuse([a, b])["q1"]["d2"] == 0.75
    assert Fusion("combmax").fuse([a, b])["q1"]["d2"] == 1.0 and Fusion("combmin").fuse([a, b])["q1"]["d2"] == 0.5
    assert Fusion("wmnz", weights=(1.0, 3.0)).fuse([a, b])["q1"]["d2"] == 1.5 * 4.0
    assert Fusion("wsum", norm="none", weights=(1.0, 0.5)).fuse([a, b])["q1"]["d2"] == 2.0 + 5.0
    assert Fusion("rrf", weights=(2.0, 1.0), rrf_k=1).fuse([a, b])["q1"]["d2"] == 2 / 3 + 1 / 2
    assert list(Fusion("combsum").fuse([a, b])["q2"]) == ["d9"]
    # sum: (s - min) / sum(s - min) = d1 4/6; zmuv over (4, 2, 0): mean 2, std sqrt(8/3)
    assert Fusion("combsum", norm="sum").fuse([a, {"q1": {}}])["q1"]["d1"] == pytest.approx(4 / 6, abs=1e-15)
    assert Fusion("combsum", norm="zmuv").fuse([a, {"q1": {}}])["q1"]["d1"] == pytest.approx(2 / (8 / 3) ** 0.5, abs=1e-15)
    fused = Fusion("combsum", norm="max").fuse([a, b])["q1"]
    assert list(fused) == ["d2", "d1", "d4", "d3"] and fused["d2"] == 1.5   # 2/4 + 10/10; ties by id descending


def test_the_configuration_offers_the_catalogue_by_the_same_names():
    assert set(FUSION_METHODS) == set(METHODS) and set(FUSION_NORMS) == set(NORMALISATIONS)
    assert set(WEIGHTED_FUSIONS) == {m.name for m in METHODS.values() if m.weighted}
    assert set(NORMALISED_FUSIONS) == {m.name for m in METHODS.values() if m.normalised}


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "combmnz", "weights": (1.0, 2.0)}, "combmnz takes no weights"),
    ({"method": "borda"}, "unknown fusion method 'borda'"),
    ({"method": "wsum", "norm": "z-score"}, "unknown fusion normalisation 'z-score'"),
    ({"method": "wsum", "weights": (1.0,)}, "one finite weight >= 0 per run"),
])
def test_what_cannot_be_fused_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Fusion(**kwargs).fuse([{"q": {"a": 1.0}}, {"q": {"b": 1.0}}])
