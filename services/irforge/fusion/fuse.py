"""Fusion of any number of runs by any method of the catalogue: `Fusion(method, norm, weights,
rrf_k).fuse(runs)`. Per query: each run's ranking (tie rule), its scores normalised (or its
reciprocal ranks), combined over the union of the runs' documents; a query any run has is fused,
a run lacking it contributing nothing. The fused run holds every document of the union, ordered
by the tie rule; the caller keeps its top k."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from irforge.data.types import Run
from irforge.fusion.catalogue import METHODS, NORMALISATIONS
from irforge.fusion.columns import QueryColumns, rankings_of
from irforge.fusion.normalise import min_max_tied_one, normalised
from irforge.ranking import Ranking

DEFAULT_RRF_K = 60.0   # Cormack et al.'s constant


def weights_for(weights: Sequence[float] | None, runs: int) -> tuple[float, ...]:
    """One finite, non-negative weight per run, not all 0; None: 1 for every run."""
    if runs < 2:
        raise ValueError("fusion needs at least two runs")
    weights = tuple(float(w) for w in weights) if weights is not None else (1.0,) * runs
    if len(weights) != runs or not all(math.isfinite(w) and w >= 0 for w in weights) or not any(weights):
        raise ValueError(f"need one finite weight >= 0 per run ({runs} runs), not all 0; got {list(weights)}")
    return weights


@dataclass(frozen=True)
class Fusion:
    method: str = "rrf"
    norm: str = "min-max"             # for the methods that normalise (catalogue: Method.normalised)
    weights: tuple[float, ...] | None = None   # for the weighted methods; None: 1 for every run
    rrf_k: float = DEFAULT_RRF_K

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown fusion method {self.method!r}; use one of {', '.join(METHODS)}")
        if self.norm not in NORMALISATIONS:
            raise ValueError(f"unknown fusion normalisation {self.norm!r}; use one of {', '.join(NORMALISATIONS)}")
        if self.method == "rrf" and not (math.isfinite(self.rrf_k) and self.rrf_k > 0):
            raise ValueError(f"RRF k must be positive, got {self.rrf_k}")
        if self.weights is not None and not METHODS[self.method].weighted:
            raise ValueError(f"{self.method} takes no weights (weighted methods: "
                             f"{', '.join(m.name for m in METHODS.values() if m.weighted)})")

    def fuse(self, runs: Sequence[Run]) -> Run:
        """query id -> Ranking of the fused scores, for every query of any run."""
        return combine_all(self.columns(runs), self.method, weights_for(self.weights, len(runs)))

    def columns(self, runs: Sequence[Run]) -> dict[str, QueryColumns]:
        """Every query's columns under this fusion's values (the part weights do not change, so a
        weight search computes it once)."""
        weights_for(None, len(runs))   # at least two runs
        value, reciprocal = self._value(), self.method == "rrf"
        return {query_id: QueryColumns.of(rankings_of(runs, query_id), value, reciprocal)
                for query_id in sorted(set().union(*runs))}

    def _value(self):
        if self.method == "rrf":
            k = self.rrf_k
            return lambda ranking: k + np.arange(1, len(ranking) + 1, dtype=np.float64)   # w / (k + rank)
        if self.method == "linear":
            return lambda ranking: min_max_tied_one(ranking.scores) if len(ranking) else ranking.scores
        norm = self.norm
        return lambda ranking: normalised(ranking.scores, norm)

    def describe(self) -> dict:
        method = METHODS[self.method]
        described = {"method": self.method, "ranx_method": method.ranx, "literature": method.literature}
        if self.method == "rrf":
            described["rrf_k"] = self.rrf_k
        if method.normalised:
            described.update(norm=self.norm, normalisation=NORMALISATIONS[self.norm].literature)
        if method.weighted:
            described["weights"] = list(self.weights) if self.weights is not None else "1 for every run"
        return described


def combine(columns: QueryColumns, method: str, weights: Sequence[float]) -> Ranking:
    """One query's fused ranking by `method` with one weight per run (ignored by unweighted methods)."""
    if method in ("rrf", "wsum", "linear"):
        totals = columns.weighted_sum(weights)
    elif method == "combsum":
        totals = columns.weighted_sum([1.0] * len(columns.positions))
    elif method == "combmnz":
        totals = columns.weighted_sum([1.0] * len(columns.positions)) * columns.present()
    elif method == "combanz":
        totals = columns.weighted_sum([1.0] * len(columns.positions)) / columns.present()
    elif method == "wmnz":
        # ranx's wmnz: the unweighted sum of the scores, times the sum of the retrieving runs' weights.
        retrieved_by = QueryColumns(columns.doc_ids, columns.positions, tuple(np.ones(len(p)) for p in columns.positions)
                                    ).weighted_sum(weights)
        totals = columns.weighted_sum([1.0] * len(columns.positions)) * retrieved_by
    elif method == "combmax":
        totals = columns.extreme(np.maximum, -np.inf)
    elif method == "combmin":
        totals = columns.extreme(np.minimum, np.inf)
    else:
        raise ValueError(f"unknown fusion method {method!r}")
    return columns.ranked(totals)


def combine_all(columns: dict[str, QueryColumns], method: str, weights: Sequence[float]) -> Run:
    return {query_id: combine(query, method, weights) for query_id, query in columns.items()}
