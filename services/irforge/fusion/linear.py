"""The hybrid's normalised linear combination: per query, each run's scores min-max normalised to
[0, 1] (a run whose scores all tie counting 1); fused(d) = sum_i w_i * norm_i(d), a document absent
from a run contributing 0 for it. Fusion("wsum", norm=...) is the general form, as ranx names it.

Min-max per query is the usual choice for mixing BM25 (unbounded) with cosine (bounded) scores.
"""

from __future__ import annotations

from collections.abc import Sequence

from irforge.data.types import Run
from irforge.fusion.fuse import Fusion


def normalized_linear_fusion(runs: Sequence[Run], weights: Sequence[float] | None = None) -> Run:
    """query id -> Ranking of the fused scores, for every query of any run."""
    return Fusion("linear", weights=None if weights is None else tuple(weights)).fuse(runs)
