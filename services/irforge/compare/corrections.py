"""Corrections for multiple comparisons: Holm (the default: controls the family-wise error rate
like Bonferroni, never less powerful), Bonferroni, Benjamini-Hochberg (controls the false
discovery rate instead), or none. Each takes a family's p-values and returns the adjusted ones,
in the same order, as statsmodels' multipletests does (the tests check equality with it)."""

from __future__ import annotations

from irforge.common.extras import lazy_module

# numpy loads at first use: `irforge --help` reads this module's names (flags' choices, defaults).
np = lazy_module("numpy")

CORRECTIONS = ("holm", "bonferroni", "bh", "none")


def adjust(p_values, method: str) -> list[float]:
    p = np.asarray(p_values, dtype=float)
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}: one of {', '.join(CORRECTIONS)}")
    if len(p) == 0 or method == "none":
        return [float(x) for x in p]
    if method == "bonferroni":
        adjusted = np.minimum(1.0, p * len(p))
    elif method == "holm":
        adjusted = _holm(p)
    else:
        from scipy import stats   # lazy: scipy.stats takes ~1 s to import

        adjusted = stats.false_discovery_control(p, method="bh")
    return [float(x) for x in adjusted]


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down: the i-th smallest p (from 0) is multiplied by (m - i), then made
    non-decreasing along that order and capped at 1."""
    m = len(p)
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, stepped)
    return adjusted
