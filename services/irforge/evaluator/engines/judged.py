"""Judged@k: share of a query's top-k that has any judgement for that query (Hole@k = 1 - Judged@k).

trec_eval 9 (which pytrec_eval wraps) has no such measure, so irforge computes it, ranking with
the same tie rule. As in ir_measures, a ranking shorter than k is divided by its own length.
"""

from __future__ import annotations

from collections.abc import Mapping

from irforge.ranking import top_k


def judged_at_k(judged: Mapping[str, int], scores: Mapping[str, float], k: int) -> float:
    top = top_k(scores, k)
    if not top:
        return 0.0
    return sum(doc_id in judged for doc_id in top) / min(k, len(top))
