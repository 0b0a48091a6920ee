"""Reciprocal-rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009): score(d) = sum_i w_i / (k + rank_i(d)).

Ranks come from each run's order under trec_eval's tie rule (irforge.ranking), so a fused run does
not depend on the order documents happened to arrive in.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from irforge.data.types import Run
from irforge.fusion.columns import rankings_of, summed_by_document


def reciprocal_rank_fusion(runs: Sequence[Run], k: float = 60.0, weights: Sequence[float] | None = None) -> Run:
    """query id -> Ranking of the fused scores, for every query of any run."""
    if k <= 0:
        raise ValueError(f"RRF k must be positive, got {k}")
    weights = _weights(runs, weights)
    fused: Run = {}
    for query_id in sorted(set().union(*runs)):
        rankings = rankings_of(runs, query_id)
        contributions = [weight / (k + np.arange(1, len(ranking) + 1, dtype=np.float64))
                         for ranking, weight in zip(rankings, weights, strict=True)]
        fused[query_id] = summed_by_document(rankings, contributions)
    return fused


def _weights(runs: Sequence[Run], weights: Sequence[float] | None) -> list[float]:
    if len(runs) < 2:
        raise ValueError("fusion needs at least two runs")
    weights = list(weights) if weights is not None else [1.0] * len(runs)
    if len(weights) != len(runs) or any(w < 0 for w in weights) or not any(weights):
        raise ValueError(f"need one non-negative weight per run, not all zero; got {weights}")
    return weights
