"""Paired tests over per-query values: Student's t, Wilcoxon signed-rank, Fisher's randomization
(sign flips), paired bootstrap; effect size and wins/ties/losses.

Every test takes the two systems' values for the same queries, in the same order, and tests the
difference `system - against`. The computing is scipy's where scipy has the test (ttest_rel,
wilcoxon, permutation_test, bootstrap); only the bootstrap p-value, which scipy does not give,
is computed here (the shift method of Efron & Tibshirani, as Sakai uses for IR).

Degenerate input (every difference zero) has no test statistic: the tests then report p = 1
(nothing to reject), never NaN, so a correction over many pairs still works.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from irforge.common.extras import lazy_module

# numpy loads at first use: `irforge --help` reads this module's names (flags' choices, defaults).
np = lazy_module("numpy")


TESTS = ("t", "wilcoxon", "randomization", "bootstrap")
# Two per-query values closer than this are a tie: values of the same ranking computed twice can
# differ in the last bits (sums in another order), never by this much.
TIE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class TestSettings:
    permutations: int = 10_000
    bootstrap_samples: int = 10_000
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self):
        if self.permutations < 100:
            raise ValueError(f"permutations must be at least 100, got {self.permutations}")
        if self.bootstrap_samples < 100:
            raise ValueError(f"bootstrap samples must be at least 100, got {self.bootstrap_samples}")
        if not 0.5 <= self.confidence < 1:
            raise ValueError(f"confidence must be in [0.5, 1), got {self.confidence}")


def differences(system: np.ndarray, against: np.ndarray) -> np.ndarray:
    """Per-query differences, with sub-tolerance noise set to exactly 0 (a tie is a tie for every test)."""
    diff = np.asarray(system, dtype=float) - np.asarray(against, dtype=float)
    diff[np.abs(diff) <= TIE_TOLERANCE] = 0.0
    return diff


def wins_ties_losses(diff: np.ndarray) -> tuple[int, int, int]:
    return int((diff > 0).sum()), int((diff == 0).sum()), int((diff < 0).sum())


def effect_size(diff: np.ndarray) -> float | None:
    """Cohen's d_z for paired samples: mean difference over the differences' standard deviation
    (ddof 1). None when undefined (fewer than two queries, or every difference equal)."""
    if len(diff) < 2:
        return None
    sd = float(np.std(diff, ddof=1))
    if sd == 0:
        return None if diff.any() else 0.0
    return float(np.mean(diff)) / sd


def paired_t(diff: np.ndarray) -> dict:
    """Student's paired t-test, two-sided (scipy.stats.ttest_rel on the pairs is this test on the differences)."""
    if not diff.any() or len(diff) < 2:
        return {"statistic": 0.0, "p": 1.0}
    from scipy import stats   # lazy here and below: scipy.stats takes ~1 s to import

    result = stats.ttest_1samp(diff, 0.0)
    return {"statistic": _finite(result.statistic), "p": _p(result.pvalue)}


def wilcoxon(diff: np.ndarray) -> dict:
    """Wilcoxon signed-rank, two-sided; zero differences are dropped (Wilcoxon's own treatment,
    scipy's default), the exact distribution for small samples without ties, else the normal
    approximation (scipy's "auto"); which one ran is recorded."""
    nonzero = int(np.count_nonzero(diff))
    if nonzero == 0:
        return {"statistic": 0.0, "p": 1.0, "method": "no nonzero difference"}
    from scipy import stats

    result = stats.wilcoxon(diff, zero_method="wilcox", alternative="two-sided", method="auto")
    exact = nonzero <= 50 and len(np.unique(np.abs(diff[diff != 0]))) == nonzero
    return {"statistic": float(result.statistic), "p": _p(result.pvalue), "method": "exact" if exact else "normal approximation"}


def randomization(diff: np.ndarray, settings: TestSettings) -> dict:
    """Fisher's paired randomization test: under the null hypothesis each query's two values could
    have come from either system, so the sign of each difference is flipped at random; the
    statistic is the mean difference, two-sided. Exact (every sign pattern) when 2^n is at most
    the permutations asked for, else `permutations` random patterns from `seed`, p = (hits + 1) / (permutations + 1)."""
    if not diff.any():
        return {"p": 1.0, "permutations": 0, "exact": True}
    from scipy import stats

    result = stats.permutation_test(
        (diff,), _mean_last_axis, permutation_type="samples", vectorized=True, n_resamples=settings.permutations,
        alternative="two-sided", rng=np.random.default_rng(settings.seed), batch=_batch(len(diff)),
    )
    exact = 2 ** len(diff) <= settings.permutations
    return {"p": _p(result.pvalue), "permutations": (2 ** len(diff)) if exact else settings.permutations, "exact": exact}


def bootstrap(diff: np.ndarray, settings: TestSettings) -> dict:
    """Paired bootstrap over queries: `bootstrap_samples` resamples of the queries (with
    replacement, from `seed`). The confidence interval of the mean difference is scipy's BCa
    interval; the p-value is the shift method: the share of resampled means of the centred
    differences at least as far from 0 as the observed mean, (hits + 1) / (samples + 1)."""
    n = len(diff)
    observed = float(np.mean(diff)) if n else 0.0
    if n < 2 or not diff.any():
        return {"p": 1.0, "ci": [observed, observed], "samples": 0, "interval": "degenerate"}
    from scipy import stats

    rng = np.random.default_rng(settings.seed)
    interval = stats.bootstrap((diff,), np.mean, n_resamples=settings.bootstrap_samples, confidence_level=settings.confidence,
                               method="BCa", rng=rng, batch=_batch(n)).confidence_interval
    low, high = float(interval.low), float(interval.high)
    if not (math.isfinite(low) and math.isfinite(high)):   # BCa can fail on near-constant data
        interval = stats.bootstrap((diff,), np.mean, n_resamples=settings.bootstrap_samples,
                                   confidence_level=settings.confidence, method="percentile", rng=rng, batch=_batch(n)).confidence_interval
        low, high, kind = float(interval.low), float(interval.high), "percentile"
    else:
        kind = "BCa"
    centred = diff - observed
    hits = 0
    for start in range(0, settings.bootstrap_samples, _batch(n)):
        size = min(_batch(n), settings.bootstrap_samples - start)
        means = centred[rng.integers(0, n, size=(size, n))].mean(axis=1)
        hits += int((np.abs(means) >= abs(observed) - 1e-15).sum())
    return {"p": (hits + 1) / (settings.bootstrap_samples + 1), "ci": [low, high], "samples": settings.bootstrap_samples,
            "interval": kind}


def run_tests(names, diff: np.ndarray, settings: TestSettings) -> dict[str, dict]:
    runners = {"t": lambda: paired_t(diff), "wilcoxon": lambda: wilcoxon(diff),
               "randomization": lambda: randomization(diff, settings), "bootstrap": lambda: bootstrap(diff, settings)}
    return {name: runners[name]() for name in names}


def _mean_last_axis(x, axis=-1):
    return np.mean(x, axis=axis)


def _batch(n: int) -> int:
    """Resamples per batch: about 4 million numbers in memory at once, whatever the query count."""
    return max(1, 4_000_000 // max(n, 1))


def _p(value) -> float:
    value = float(value)
    return 1.0 if math.isnan(value) else min(1.0, value)


def _finite(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None
