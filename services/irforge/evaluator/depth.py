"""A query's top k by the tie rule, fast for both kinds of run value (dict and Ranking).

Every default measure reads at most the top 100 of a ranking (measures.py declares each
request's `depth`), so the evaluator hands pytrec_eval and Judged@k each query's top k
instead of its 1,000 documents. For a Ranking that is a slice. For a plain dict it is
`ranking.top_k`'s answer at a fraction of its cost: the k-th best score comes from numpy
(`np.partition` on the scores alone), only the documents scoring at least that much are
sorted, by (score, doc id) descending, which is trec_eval's order. Reading a dict's keys is
the expensive part (each key is a separate object in memory), so they are read once.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping

import numpy as np

from irforge.ranking import Ranking


def top_ranking(scores: Mapping[str, float], k: int) -> Ranking:
    """The first k documents of `scores` by the tie rule, as a Ranking (k <= 0: all of them)."""
    if isinstance(scores, Ranking):
        return scores.head(k)
    ids = list(scores)
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(ids))
    if np.isnan(values).any():
        raise ValueError("a score is NaN, which ranks nowhere")
    if 0 < k < len(ids):
        kth_best = np.partition(values, len(ids) - k)[len(ids) - k]
        keep = np.flatnonzero(values >= kth_best).tolist()  # the top k and whatever ties the k-th
        ids = [ids[keep[0]]] if len(keep) == 1 else operator.itemgetter(*keep)(ids)
        values = values[keep]
    # Tuples compare the score, then the doc id: reversed, that is trec_eval's order.
    best = sorted(zip(values.tolist(), ids), reverse=True)
    if 0 < k < len(best):
        del best[k:]
    return Ranking([doc_id for _, doc_id in best], [score for score, _ in best])


def plain_dict(scores: Mapping[str, float]) -> dict[str, float]:
    """The dict pytrec_eval needs. A Ranking's is built afresh rather than through `as_dict`,
    which would keep it cached on the caller's Ranking after the evaluation."""
    if isinstance(scores, Ranking):
        return dict(zip(scores.doc_ids.tolist(), scores.scores.tolist()))
    return scores if isinstance(scores, dict) else dict(scores)
