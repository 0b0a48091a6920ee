"""Score normalisations (catalogue.NORMALISATIONS), each over one run's scores for one query, in
float64, with ranx's 1e-9 floor on a denominator."""

from __future__ import annotations

import numpy as np

FLOOR = 1e-9   # ranx's: a denominator never below it, so a run whose scores all tie normalises to 0


def _min_max(scores: np.ndarray) -> np.ndarray:
    low = scores.min()
    return (scores - low) / max(scores.max() - low, FLOOR)


def _zmuv(scores: np.ndarray) -> np.ndarray:
    return (scores - scores.mean()) / max(scores.std(), FLOOR)


def _sum(scores: np.ndarray) -> np.ndarray:
    low = scores.min()
    return (scores - low) / max(scores.sum() - low * len(scores), FLOOR)


def _max(scores: np.ndarray) -> np.ndarray:
    return scores / max(scores.max(), FLOOR)


def min_max_tied_one(scores: np.ndarray) -> np.ndarray:
    """The hybrid `linear` method's min-max (irforge's since its first release): a run whose scores
    all tie (one document, say) counts each of them fully, 1, rather than ranx's 0; so a document
    that run retrieved still ranks above one it did not."""
    low, high = scores.min(), scores.max()
    if high == low:
        return np.ones(len(scores))
    return (scores - low) / (high - low)


_NORMALISERS = {"min-max": _min_max, "zmuv": _zmuv, "sum": _sum, "max": _max, "none": lambda scores: scores}


def normalised(scores: np.ndarray, norm: str) -> np.ndarray:
    """One run's scores for one query, normalised by `norm` (a NORMALISATIONS name)."""
    if not len(scores):
        return scores
    try:
        return _NORMALISERS[norm](scores)
    except KeyError:
        raise ValueError(f"unknown fusion normalisation {norm!r}; use one of {', '.join(_NORMALISERS)}") from None
