"""Normalised linear combination: per query, each run's scores are min-max normalised to [0, 1];
fused(d) = sum_i w_i * norm_i(d), a document absent from a run contributing 0 for it.

Min-max per query is the usual choice for mixing BM25 (unbounded) with cosine (bounded) scores.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from irforge.data.types import Run
from irforge.fusion.columns import rankings_of, summed_by_document
from irforge.fusion.rrf import _weights
from irforge.ranking import Ranking


def _min_max(ranking: Ranking) -> np.ndarray:
    scores = ranking.scores
    if not len(scores):
        return scores
    low, high = scores.min(), scores.max()
    if high == low:  # one document, or all tied: all equally (fully) relevant for this run
        return np.ones(len(scores))
    return (scores - low) / (high - low)


def normalized_linear_fusion(runs: Sequence[Run], weights: Sequence[float] | None = None) -> Run:
    """query id -> Ranking of the fused scores, for every query of any run."""
    weights = _weights(runs, weights)
    fused: Run = {}
    for query_id in sorted(set().union(*runs)):
        rankings = rankings_of(runs, query_id)
        contributions = [weight * _min_max(ranking) for ranking, weight in zip(rankings, weights, strict=True)]
        fused[query_id] = summed_by_document(rankings, contributions)
    return fused
