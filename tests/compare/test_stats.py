"""The paired tests and corrections against scipy and statsmodels, and against exact
enumeration computed here, on data whose answers are known."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as scipy_stats

from irforge.compare import stats
from irforge.compare.corrections import adjust

statsmodels_multitest = pytest.importorskip("statsmodels.stats.multitest")


def pairs(n: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    against = rng.uniform(0, 1, n)
    system = np.clip(against + rng.normal(shift, 0.2, n), 0, 1)
    return system, against


@pytest.mark.parametrize("shift", [0.0, 0.03, 0.2])
def test_t_and_wilcoxon_equal_scipy_on_the_pairs(shift):
    system, against = pairs(300, shift, seed=1)
    diff = stats.differences(system, against)
    assert stats.paired_t(diff)["p"] == pytest.approx(scipy_stats.ttest_rel(system, against).pvalue, abs=1e-12)
    assert stats.paired_t(diff)["statistic"] == pytest.approx(scipy_stats.ttest_rel(system, against).statistic, abs=1e-9)
    assert stats.wilcoxon(diff)["p"] == pytest.approx(scipy_stats.wilcoxon(system, against).pvalue, abs=1e-12)


def test_randomization_is_exact_enumeration_when_all_sign_patterns_fit():
    diff = stats.differences(*pairs(12, 0.1, seed=2))
    observed = abs(diff.mean())
    hits = sum(abs(np.mean(diff * np.array(signs))) >= observed - 1e-12 for signs in itertools.product((1, -1), repeat=12))
    result = stats.randomization(diff, stats.TestSettings(permutations=10_000))
    assert result["exact"] and result["permutations"] == 4096
    assert result["p"] == pytest.approx(hits / 4096, abs=1e-12)


def test_randomization_sampled_is_seeded_and_close_to_the_t_test_on_many_queries():
    diff = stats.differences(*pairs(300, 0.02, seed=3))
    one = stats.randomization(diff, stats.TestSettings(seed=7))
    assert one == stats.randomization(diff, stats.TestSettings(seed=7))
    assert not one["exact"] and one["permutations"] == 10_000
    assert one["p"] == pytest.approx(stats.paired_t(diff)["p"], abs=0.02)   # large-sample agreement


def test_bootstrap_interval_and_p_value():
    diff = stats.differences(*pairs(300, 0.05, seed=4))      # mean difference 0.018, t-test p 0.064
    result = stats.bootstrap(diff, stats.TestSettings(seed=3))
    assert result == stats.bootstrap(diff, stats.TestSettings(seed=3))
    reference = scipy_stats.bootstrap((diff,), np.mean, n_resamples=10_000, method="BCa", rng=np.random.default_rng(99))
    assert result["ci"][0] == pytest.approx(reference.confidence_interval.low, abs=0.004)
    assert result["ci"][1] == pytest.approx(reference.confidence_interval.high, abs=0.004)
    assert result["ci"][0] < diff.mean() < result["ci"][1]
    assert result["p"] == pytest.approx(stats.paired_t(diff)["p"], abs=0.01)   # large-sample agreement
    assert stats.bootstrap(stats.differences(*pairs(300, 0.15, seed=4)), stats.TestSettings())["p"] < 0.001
    null = stats.bootstrap(diff - diff.mean(), stats.TestSettings(seed=3))
    assert null["p"] > 0.9 and null["ci"][0] < 0 < null["ci"][1]


def test_no_difference_at_all_is_p_one_never_nan():
    diff = stats.differences(np.full(20, 0.5), np.full(20, 0.5))
    results = stats.run_tests(stats.TESTS, diff, stats.TestSettings())
    assert {name: r["p"] for name, r in results.items()} == {name: 1.0 for name in stats.TESTS}
    assert stats.effect_size(diff) == 0.0
    assert stats.wins_ties_losses(diff) == (0, 20, 0)


def test_effect_size_and_wins_by_hand():
    diff = stats.differences(np.array([0.5, 0.7, 0.2, 0.4]), np.array([0.3, 0.7, 0.3, 0.1]))
    assert list(diff) == pytest.approx([0.2, 0.0, -0.1, 0.3])
    assert stats.wins_ties_losses(diff) == (2, 1, 1)
    mean, sd = 0.1, np.sqrt(((0.1) ** 2 + 0.1 ** 2 + 0.2 ** 2 + 0.2 ** 2) / 3)
    assert stats.effect_size(diff) == pytest.approx(mean / sd)


def test_last_bit_noise_is_a_tie():
    assert stats.wins_ties_losses(stats.differences(np.array([0.1 + 0.2]), np.array([0.3]))) == (0, 1, 0)


@pytest.mark.parametrize("ours, theirs", [("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh")])
def test_corrections_equal_statsmodels(ours, theirs):
    rng = np.random.default_rng(5)
    for p in (rng.uniform(0, 0.2, 12), np.array([0.01, 0.01, 0.04, 0.04, 0.5, 1.0]), np.array([0.3])):
        expected = statsmodels_multitest.multipletests(p, method=theirs)[1]
        assert adjust(p, ours) == pytest.approx(list(expected), abs=1e-12)


def test_unknown_correction_is_refused():
    with pytest.raises(ValueError, match="unknown correction 'sidak'"):
        adjust([0.1], "sidak")
