"""The one tie rule every metric path uses, and the columnar ranking that carries it.

trec_eval orders a query's documents by score descending and breaks ties by document id
descending (a byte-wise strcmp; Python's code-point order on str is the same order for UTF-8).
pytrec_eval runs trec_eval's own code, so it applies this rule itself; everything irforge
computes outside pytrec_eval (truncation, Judged@k, run files) must go through `ranked`.

A run is `query id -> {doc id: score}` (irforge.data.types.Run). Retrievers that rank with numpy
return each query's value as a `Ranking` instead: the same mapping, held as two arrays already in
tie-rule order, so that 1,000 hits per query cost two arrays rather than 1,000 Python objects.
`ranked` and `top_k` recognise a Ranking and slice it instead of sorting again; code that only
reads a mapping keeps working unchanged.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping

import numpy as np


def _score_then_id(item: tuple[str, float]) -> tuple[float, str]:
    return item[1], item[0]


class Ranking(Mapping[str, float]):
    """One query's retrieved documents: `doc_ids` (object array of str) and `scores` (float64),
    ordered by score descending, then doc id descending. Immutable; read it as a mapping (doc id
    -> score, iterated in rank order) or through the arrays.

    The constructor trusts the order it is given (a backend that sorted with the tie rule);
    `Ranking.of` orders anything else.
    """

    __slots__ = ("doc_ids", "scores", "_lookup")

    def __init__(self, doc_ids, scores):
        doc_ids = np.asarray(doc_ids, dtype=object)
        scores = np.asarray(scores, dtype=np.float64)
        if doc_ids.ndim != 1 or doc_ids.shape != scores.shape:
            raise ValueError(f"a ranking needs one score per document id, got {doc_ids.shape} ids and {scores.shape} scores")
        doc_ids.flags.writeable = False
        scores.flags.writeable = False
        self.doc_ids = doc_ids
        self.scores = scores
        self._lookup: dict[str, float] | None = None

    @classmethod
    def of(cls, scores: Mapping[str, float]) -> "Ranking":
        """Any doc id -> score mapping as a Ranking, ordered by the tie rule."""
        if isinstance(scores, Ranking):
            return scores
        pairs = ranked(scores)
        return cls([doc_id for doc_id, _ in pairs], [score for _, score in pairs])

    @classmethod
    def empty(cls) -> "Ranking":
        return cls(np.empty(0, dtype=object), np.empty(0, dtype=np.float64))

    def __len__(self) -> int:
        return len(self.doc_ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.doc_ids.tolist())

    def __getitem__(self, doc_id: str) -> float:
        return self.as_dict()[doc_id]

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.as_dict()

    def __repr__(self) -> str:
        shown = ", ".join(f"{d!r}: {s!r}" for d, s in self.pairs()[:3])
        return f"Ranking({len(self)} documents: {shown}{', ...' if len(self) > 3 else ''})"

    def pairs(self) -> list[tuple[str, float]]:
        """(doc_id, score) in rank order, as Python values: what `ranked` returns."""
        return list(zip(self.doc_ids.tolist(), self.scores.tolist()))

    def as_dict(self) -> dict[str, float]:
        """A plain dict in rank order (for libraries that need one, e.g. pytrec_eval); cached."""
        if self._lookup is None:
            self._lookup = dict(zip(self.doc_ids.tolist(), self.scores.tolist()))
        return self._lookup

    def head(self, k: int) -> "Ranking":
        """The first k documents (k <= 0 keeps everything); a view, nothing copied."""
        if k <= 0 or len(self) <= k:
            return self
        return Ranking(self.doc_ids[:k], self.scores[:k])

    def without(self, doc_id: str) -> "Ranking":
        """The ranking with `doc_id` removed (BEIR's identical-id rule); itself when absent."""
        keep = self.doc_ids != doc_id
        return self if keep.all() else Ranking(self.doc_ids[keep], self.scores[keep])


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """(doc_id, score) pairs ordered by score descending, then doc id descending."""
    if isinstance(scores, Ranking):
        return scores.pairs()
    return sorted(scores.items(), key=_score_then_id, reverse=True)


def top_k(scores: Mapping[str, float], k: int) -> Mapping[str, float]:
    """The first k documents of `ranked(scores)`, in rank order (k <= 0 keeps everything).
    A Ranking gives a Ranking (a slice); any other mapping a dict."""
    if isinstance(scores, Ranking):
        return scores.head(k)
    if k <= 0 or len(scores) <= k:
        return dict(scores)
    # nlargest is O(n log k) instead of a full sort; the key has no ties between distinct ids.
    return dict(heapq.nlargest(k, scores.items(), key=_score_then_id))
