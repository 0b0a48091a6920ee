"""Weights chosen by a grid search, as ranx's optimize_fusion does: every vector of weights that
are multiples of `step` in [0, 1] and sum to 1, tried in itertools.product's order; the best by a
measure on a development split's qrels wins, a tie going to the later point (ranx's `>=`).

The search runs on the development split only; the split being reported never sees it (the
configuration refuses --fusion-optimize-on naming it). What was searched, how, and every point's
score are kept, so results.json can show the choice was not made on the reported queries."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from irforge.data.types import Run
from irforge.fusion.catalogue import METHODS
from irforge.fusion.fuse import Fusion, combine_all
from irforge.ranking import top_k


def weight_grid(runs: int, step: float) -> list[tuple[float, ...]]:
    """Every weight vector of `runs` multiples of `step` summing to 1, in ranx's order. Counted in
    whole steps (c / m), so no point is lost to a float sum like 0.7 + 0.2 + 0.1 != 1.0."""
    steps = round(1 / step)
    if not (0 < step <= 1) or not math.isclose(steps * step, 1.0, abs_tol=1e-9):
        raise ValueError(f"the grid step must divide 1 into whole steps (0.1, 0.05, 0.25), got {step!r}")
    return [tuple(c / steps for c in counts) for counts in itertools.product(range(steps + 1), repeat=runs)
            if sum(counts) == steps]


@dataclass(frozen=True)
class WeightSearch:
    """Where and how the weights are chosen: `split`'s qrels, maximising `measure`, on the grid of `step`."""
    split: str
    measure: str = "nDCG@10"
    step: float = 0.1

    def space(self, runs: int) -> dict:
        points = len(weight_grid(runs, self.step))
        return {"weights": f"each a multiple of {self.step:g} in [0, 1], together summing to 1 (ranx optimize_fusion's grid)",
                "step": self.step, "runs": runs, "points": points,
                "tie": "a later grid point wins a tie (itertools.product order, as ranx)"}


@dataclass(frozen=True)
class WeightChoice:
    """The search's outcome: the chosen weights, their score on the development split, every point tried."""
    search: WeightSearch
    labels: tuple[str, ...]
    weights: tuple[float, ...]
    score: float
    trials: tuple[tuple[tuple[float, ...], float], ...]
    queries: int

    def describe(self) -> dict:
        return {"split": self.search.split, "measure": self.search.measure, "queries": self.queries,
                "search_space": self.search.space(len(self.labels)),
                "weights": dict(zip(self.labels, self.weights)), "score": self.score,
                "trials": [{"weights": list(weights), "score": score} for weights, score in self.trials]}

    def line(self) -> str:
        chosen = ", ".join(f"{label} {weight:g}" for label, weight in zip(self.labels, self.weights))
        return (f"fusion weights chosen on {self.search.split} ({self.queries} queries, {len(self.trials)} grid points, "
                f"step {self.search.step:g}): {chosen} · {self.search.measure} {self.score:.4f} on {self.search.split}")


def optimise_weights(fusion: Fusion, runs: Sequence[Run], labels: Sequence[str], search: WeightSearch,
                     score: Callable[[Run], float], k: int) -> WeightChoice:
    """The grid point whose fused run (top `k` per query) scores best by `score` (the measure on the
    development split's qrels). The runs' columns are computed once; each point only re-weights them."""
    if not METHODS[fusion.method].weighted:
        raise ValueError(f"{fusion.method} takes no weights to optimise")
    columns = replace(fusion, weights=None).columns(runs)
    trials = []
    best: tuple[tuple[float, ...], float] | None = None
    for weights in weight_grid(len(runs), search.step):
        fused = combine_all(columns, fusion.method, weights)
        value = float(score({query_id: top_k(ranking, k) for query_id, ranking in fused.items()}))
        trials.append((weights, value))
        if best is None or value >= best[1]:
            best = (weights, value)
    return WeightChoice(search, tuple(labels), best[0], best[1], tuple(trials), len(columns))
