"""The board's significance: paired tests per dataset column, and a bootstrap of the mean.

Per column (one dataset), each row is tested against the column's best row and against the
chosen baseline, over the queries every row in the column has: compare's tests
(irforge.compare.stats, the paired t-test by default as `irforge compare`) and its corrections
(Holm by default), with the family = every pair tested in that column (compare's family is every
pair compared for one measure; a board column is one measure on one dataset).

For the mean over datasets (the rank), a stratified paired bootstrap: each resample draws every
dataset's queries with replacement, within that dataset, the same draw for every row (paired),
and recomputes each row's mean of per-dataset means. The datasets themselves are the fixed suite
the board was asked for, not resampled (MTEB issue #5208 and PR #5117 resample tasks instead;
see docs/leaderboard-ranking.md for why). From the resamples: a percentile interval of each
row's mean, a percentile rank interval, and for each pair of neighbouring ranks a p-value for
"the higher row's mean is not higher", corrected over the neighbour pairs.

Seed protocol (the tests re-implement it with numpy): `rng = numpy.random.default_rng(seed)`;
for each dataset in board column order, its queries sorted by id, `rng.integers(0, n, size=(resamples, n))`
(drawn in batches of rows of that array, which yields the same numbers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irforge.compare import stats
from irforge.compare.corrections import adjust

# Query draws held in memory at once by one bootstrap batch (resamples x queries).
BATCH_NUMBERS = 4_000_000


@dataclass(frozen=True)
class PairTest:
    """One paired test in a dataset column: `system` against `against` (row keys)."""
    system: str
    against: str
    queries: int
    difference: float         # mean over the queries of (system - against)
    p: float
    p_corrected: float
    significant: bool         # p_corrected < alpha


@dataclass(frozen=True)
class NeighbourTest:
    """The bootstrap of the mean: a row against the row ranked just below it."""
    system: str
    below: str
    difference: float         # observed mean of means, system - below
    ci: tuple[float, float]   # percentile interval of the resampled difference
    p: float                  # two-sided percentile-bootstrap p-value
    p_corrected: float
    significant: bool


@dataclass(frozen=True)
class MeanBootstrap:
    ci: dict[str, tuple[float, float]]             # row key -> interval of its mean of means
    rank_interval: dict[str, tuple[int, int]]      # row key -> (best, worst) rank in the central resamples
    neighbours: list[NeighbourTest]                # in rank order, one per neighbouring pair


def column_tests(values: dict[str, np.ndarray], pairs: list[tuple[str, str]], *, test: str, correction: str,
                 alpha: float, settings: stats.TestSettings) -> list[PairTest]:
    """Each (system, against) pair tested on `values` (row key -> per-query values, aligned on the
    same queries); p-values corrected together (one family)."""
    raw = []
    for system, against in pairs:
        diff = stats.differences(values[system], values[against])
        raw.append((system, against, len(diff), float(diff.mean()) if len(diff) else 0.0,
                    stats.run_tests((test,), diff, settings)[test]["p"]))
    corrected = adjust([p for *_, p in raw], correction)
    return [PairTest(system, against, n, difference, p, q, q < alpha)
            for (system, against, n, difference, p), q in zip(raw, corrected)]


def bootstrap_means(per_dataset: list[dict[str, np.ndarray]], order: list[str], *, resamples: int, seed: int,
                    confidence: float, correction: str, alpha: float) -> MeanBootstrap:
    """`per_dataset`: for each dataset in column order, row key -> per-query values aligned on the
    same queries (sorted by id); `order`: the rows in rank order. Every row must be in every dataset."""
    replicates = _replicate_means(per_dataset, order, resamples, seed)          # rows x resamples
    observed = np.array([np.mean([float(np.mean(d[key])) for d in per_dataset]) for key in order])
    low_q, high_q = (1 - confidence) / 2, 1 - (1 - confidence) / 2
    ci = {key: (float(np.quantile(replicates[i], low_q)), float(np.quantile(replicates[i], high_q)))
          for i, key in enumerate(order)}
    # Competition rank in each resample: 1 + the rows strictly ahead (within compare's tie tolerance).
    ranks = np.stack([1 + (replicates > row + stats.TIE_TOLERANCE).sum(axis=0) for row in replicates])
    rank_interval = {key: (int(np.quantile(ranks[i], low_q, method="lower")),
                           int(np.quantile(ranks[i], high_q, method="higher"))) for i, key in enumerate(order)}
    raw = []
    for i in range(len(order) - 1):
        diff = replicates[i] - replicates[i + 1]
        diff[np.abs(diff) <= stats.TIE_TOLERANCE] = 0.0
        tail = min(int((diff <= 0).sum()), int((diff >= 0).sum()))
        p = min(1.0, 2 * (tail + 1) / (resamples + 1))
        raw.append((order[i], order[i + 1], float(observed[i] - observed[i + 1]),
                    (float(np.quantile(diff, low_q)), float(np.quantile(diff, high_q))), p))
    corrected = adjust([r[-1] for r in raw], correction)
    neighbours = [NeighbourTest(system, below, difference, interval, p, q, q < alpha)
                  for (system, below, difference, interval, p), q in zip(raw, corrected)]
    return MeanBootstrap(ci, rank_interval, neighbours)


def _replicate_means(per_dataset: list[dict[str, np.ndarray]], order: list[str], resamples: int, seed: int) -> np.ndarray:
    """rows x resamples: each row's mean over datasets of its mean over the resampled queries."""
    rng = np.random.default_rng(seed)
    total = np.zeros((len(order), resamples))
    for dataset in per_dataset:
        matrix = np.stack([np.asarray(dataset[key], dtype=float) for key in order])   # rows x queries
        n = matrix.shape[1]
        batch = max(1, BATCH_NUMBERS // n)
        for start in range(0, resamples, batch):
            size = min(batch, resamples - start)
            drawn = rng.integers(0, n, size=(size, n))
            # How often each query was drawn, then one matrix product for every row at once: the
            # same means as gathering each row's drawn values, at a cost that grows with the rows
            # by a BLAS product instead of a gather (30 rows x 5 datasets x 1,000 queries: 25 s -> 2 s).
            counts = np.bincount((drawn + n * np.arange(size)[:, None]).ravel(), minlength=size * n).reshape(size, n)
            total[:, start:start + size] += (counts @ matrix.T).T / n
    return total / len(per_dataset)
