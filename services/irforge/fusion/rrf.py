"""Reciprocal-rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009): score(d) = sum_i w_i / (k + rank_i(d)).

Ranks come from each run's order under trec_eval's tie rule (irforge.ranking), so a fused run does
not depend on the order documents happened to arrive in.
"""

from __future__ import annotations

from collections.abc import Sequence

from irforge.data.types import Run
from irforge.fusion.fuse import Fusion


def reciprocal_rank_fusion(runs: Sequence[Run], k: float = 60.0, weights: Sequence[float] | None = None) -> Run:
    """query id -> Ranking of the fused scores, for every query of any run."""
    if k <= 0:
        raise ValueError(f"RRF k must be positive, got {k}")
    return Fusion("rrf", rrf_k=k, weights=None if weights is None else tuple(weights)).fuse(runs)
