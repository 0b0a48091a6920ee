"""The one tie rule every metric path uses.

trec_eval orders a query's documents by score descending and breaks ties by document id
descending (a byte-wise strcmp; Python's code-point order on str is the same order for UTF-8).
pytrec_eval runs trec_eval's own code, so it applies this rule itself; everything irforge
computes outside pytrec_eval (truncation, Judged@k, run files) must go through `ranked`.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping


def _score_then_id(item: tuple[str, float]) -> tuple[float, str]:
    return item[1], item[0]


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """(doc_id, score) pairs ordered by score descending, then doc id descending."""
    return sorted(scores.items(), key=_score_then_id, reverse=True)


def top_k(scores: Mapping[str, float], k: int) -> dict[str, float]:
    """The first k documents of `ranked(scores)`, in rank order (k <= 0 keeps everything)."""
    if k <= 0 or len(scores) <= k:
        return dict(scores)
    # nlargest is O(n log k) instead of a full sort; the key has no ties between distinct ids.
    return dict(heapq.nlargest(k, scores.items(), key=_score_then_id))
