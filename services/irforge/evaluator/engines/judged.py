"""Judged@k: share of a query's top-k that has any judgement for that query (Hole@k = 1 - Judged@k).

trec_eval 9 (which pytrec_eval wraps) has no such measure, so irforge computes it, ranking with
the same tie rule. As in ir_measures, a ranking shorter than k is divided by its own length.
"""

from __future__ import annotations

from collections.abc import Mapping

from irforge.ranking import Ranking


def judged_at_k(judged: Mapping[str, int], top: Ranking, k: int) -> float:
    """`top`: the query's top k (fewer when it retrieved fewer), e.g. `depth.top_ranking(scores, k)`."""
    if not len(top):
        return 0.0
    return sum(map(judged.__contains__, top.doc_ids.tolist())) / min(k, len(top))
