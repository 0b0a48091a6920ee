"""Normalised linear combination: per query, each run's scores are min-max normalised to [0, 1];
fused(d) = sum_i w_i * norm_i(d), a document absent from a run contributing 0 for it.

Min-max per query is the usual choice for mixing BM25 (unbounded) with cosine (bounded) scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from irforge.data.types import Run
from irforge.fusion.rrf import _weights


def _min_max(scores: Mapping[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:  # one document, or all tied: all equally (fully) relevant for this run
        return {doc_id: 1.0 for doc_id in scores}
    return {doc_id: (score - low) / (high - low) for doc_id, score in scores.items()}


def normalized_linear_fusion(runs: Sequence[Run], weights: Sequence[float] | None = None) -> Run:
    weights = _weights(runs, weights)
    fused: Run = {}
    for query_id in sorted(set().union(*runs)):
        scores: dict[str, float] = {}
        for run, weight in zip(runs, weights, strict=True):
            for doc_id, value in _min_max(run.get(query_id, {})).items():
                scores[doc_id] = scores.get(doc_id, 0.0) + weight * value
        fused[query_id] = scores
    return fused
