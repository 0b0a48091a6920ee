"""What every fusion method works on: per query, the union of the runs' documents and, for each
run, where its documents sit in that union, their ranks and their normalised scores."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from irforge.ranking import Ranking

_NOTHING: Mapping[str, float] = {}


def rankings_of(runs: Sequence[Mapping[str, Mapping[str, float]]], query_id: str) -> list[Ranking]:
    """The query's ranking in each run (empty where a run lacks it), ordered by the tie rule."""
    return [Ranking.of(run.get(query_id, _NOTHING)) for run in runs]


@dataclass(frozen=True)
class QueryColumns:
    """One query across the runs. `doc_ids`: the union, sorted (np.unique: Python's str order);
    per run i, `positions[i]` are its documents' places in that union in its rank order (rank =
    place + 1) and `values[i]` their scores, normalised (or, for RRF, k + rank: `reciprocal`)."""
    doc_ids: np.ndarray
    positions: tuple[np.ndarray, ...]
    values: tuple[np.ndarray, ...]
    reciprocal: bool = False   # a run adds w / value (RRF's w / (k + rank)), not w * value

    @classmethod
    def of(cls, rankings: Sequence[Ranking], value: Callable[[Ranking], np.ndarray], reciprocal: bool = False) -> QueryColumns:
        doc_ids = np.concatenate([ranking.doc_ids for ranking in rankings])
        unique, inverse = np.unique(doc_ids, return_inverse=True)
        inverse = inverse.reshape(-1)
        bounds = np.cumsum([0, *(len(ranking) for ranking in rankings)])
        positions = tuple(inverse[start:end] for start, end in zip(bounds[:-1], bounds[1:]))
        return cls(unique, positions, tuple(value(ranking) for ranking in rankings), reciprocal)

    def present(self) -> np.ndarray:
        """How many runs retrieved each document of the union."""
        counts = np.zeros(len(self.doc_ids))
        for positions in self.positions:
            counts[positions] += 1
        return counts

    def weighted_sum(self, weights: Sequence[float]) -> np.ndarray:
        """sum_i w_i * value_i(d), added run by run from 0.0 (a run lacking d adds nothing): the
        order ranx's sum and a dict built run by run both add in, so the totals agree bit for bit."""
        totals = np.zeros(len(self.doc_ids))
        for positions, values, weight in zip(self.positions, self.values, weights, strict=True):
            totals[positions] += weight / values if self.reciprocal else weight * values
        return totals

    def extreme(self, pick: Callable[[np.ndarray, np.ndarray], np.ndarray], start: float) -> np.ndarray:
        """pick (np.maximum or np.minimum) of each document's values over the runs that retrieved it."""
        totals = np.full(len(self.doc_ids), start)
        for positions, values in zip(self.positions, self.values):
            totals[positions] = pick(totals[positions], values)
        return totals

    def ranked(self, totals: np.ndarray) -> Ranking:
        """The fused scores as a Ranking ordered by the tie rule (score descending, then id descending)."""
        order = np.lexsort((-np.arange(len(self.doc_ids)), -totals))
        return Ranking(self.doc_ids[order], totals[order])
