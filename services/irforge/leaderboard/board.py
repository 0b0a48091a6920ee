"""The leaderboard's board: one row per (team, system, category) with its latest done submission
on each dataset, a column per dataset (the dataset's main metric, Judged@10 beside it), the mean
over the datasets the filter keeps, the rank by that mean, and the significance of each cell and
of each neighbouring rank (irforge.leaderboard.significance).

Pure computation on `Entry` objects (app/leaderboard.py gives them, per-query values filled server
side): no I/O, nothing about who asks. The Board holds aggregates and p-values only, never a
per-query value, so it may be shown for a closed dataset. The rules are in docs/leaderboard-ranking.md."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, time, timezone

import numpy as np

from irforge.common.error_status import register_status
from irforge.compare import stats
from irforge.compare.comparison import letters
from irforge.compare.corrections import CORRECTIONS
from irforge.leaderboard import significance
from irforge.leaderboard.significance import NeighbourTest, PairTest

# AIR-Bench's main metric per task (QA: nDCG@10, Long-Doc: Recall@10), in irforge's measure names.
MAIN_METRICS = {"qa": "nDCG@10", "long-doc": "R@10"}
CATEGORIES = ("retrieval", "reranking")


class BoardError(ValueError):
    """A board that cannot be built as asked (an unknown dataset, baseline or filter): the message says which."""


register_status(BoardError, "INVALID_ARGUMENT")


def main_metric_for(task: str, explicit: str | None = None) -> str:
    """The main metric of a dataset registered for `task` (an explicit one wins)."""
    if explicit:
        return explicit
    if task not in MAIN_METRICS:
        raise BoardError(f"task {task!r} has no default main metric (known: {', '.join(MAIN_METRICS)}): name one")
    return MAIN_METRICS[task]


@dataclass(frozen=True)
class Entry:              # one done submission: one system on one dataset
    submission_id: str
    team: str
    system: str           # the team's name for it; a row is (team, system, category)
    category: str         # "retrieval" | "reranking"
    dataset: str
    task: str             # "qa" | "long-doc" | ...
    language: str
    main_metric: str      # e.g. "nDCG@10"
    value: float          # the dataset-level main metric (as results.json's metrics)
    judged_at_10: float   # Judged@10 beside every score
    per_query: Mapping[str, float]   # main metric per query id (server side only, never shown for closed)
    created: str          # ISO UTC


@dataclass(frozen=True)
class Column:
    dataset: str
    task: str
    language: str
    main_metric: str
    queries: int          # queries the column's paired tests used: those every row in it has
    best: str | None      # key of the row with the highest value (None: no row)
    note: str = ""        # why a column has no tests, if it has none


@dataclass(frozen=True)
class Score:
    """One cell: a row's latest done submission on a dataset."""
    dataset: str
    value: float
    judged_at_10: float
    submission_id: str
    created: str
    best: bool                        # the column's highest value (ties: every tied row)
    better_than: tuple[str, ...]      # letters of the rows it is significantly better than (pairs tested)
    vs_best: PairTest | None          # against the column's best row (None for the best itself)
    vs_baseline: PairTest | None      # against the baseline row (None without one, or for it)


@dataclass(frozen=True)
class Row:
    team: str
    system: str
    category: str
    letter: str                       # a, b, c ... in the board's order at build time
    scores: dict[str, Score]          # dataset -> its cell
    mean: float | None                # over the board's columns; None when a dataset is missing
    rank: int | None                  # 1 = best; tied means share a rank; None without a mean
    mean_ci: tuple[float, float] | None
    rank_interval: tuple[int, int] | None
    versus_next: NeighbourTest | None  # against the row ranked just below
    missing: tuple[str, ...]          # kept datasets it has no done submission on
    note: str = ""                    # why it has no mean or rank

    @property
    def key(self) -> str:
        return row_key(self.team, self.system, self.category)


@dataclass(frozen=True)
class Board:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    mean_metric: str | None           # the one main metric every column shares (None: no mean)
    baseline: str | None              # key of the baseline row
    filters: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def row(self, name: str) -> Row:
        """The row named `team/system/category` (or `team/system` when one category has it)."""
        key = resolve_row(self, name)
        return next(r for r in self.rows if r.key == key)

    def as_dict(self) -> dict:
        """JSON-ready (GetBoard's JSON): aggregates and p-values only, no per-query value."""
        found = asdict(self)
        for row, original in zip(found["rows"], self.rows):
            row["key"] = original.key
        return found


def row_key(team: str, system: str, category: str) -> str:
    return f"{team}/{system}/{category}"


def resolve_row(board: Board, name: str) -> str:
    """A row's key from `team/system/category`, or `team/system` when one category has it."""
    return _resolve([r.key for r in board.rows], name)


def choices(entries: Iterable[Entry]) -> dict[str, list[str]]:
    """What the filters can be set to: the datasets, categories, languages and tasks with entries."""
    entries = list(entries)
    return {name: sorted({getattr(e, attribute) for e in entries})
            for name, attribute in (("datasets", "dataset"), ("categories", "category"), ("languages", "language"),
                                    ("tasks", "task"))}


def build_board(entries: Iterable[Entry], *, category: str | None = None, datasets: Iterable[str] | None = None,
                language: str | None = None, task: str | None = None, since=None, until=None,
                baseline: str | None = None, alpha: float = 0.05, seed: int = 0, resamples: int = 10_000,
                test: str = "t", correction: str = "holm") -> Board:
    entries = list(entries)
    _check_settings(category, alpha, resamples, test, correction)
    described = _describe_datasets(entries)
    kept_names = _kept_datasets(described, datasets)
    start, end = _instant(since, "since", end=False), _instant(until, "until", end=True)
    chosen = [e for e in entries if e.dataset in kept_names and (category is None or e.category == category)
              and (language is None or e.language == language) and (task is None or e.task == task)
              and (start is None or _created(e) >= start) and (end is None or _created(e) <= end)]
    latest = _latest(chosen)
    names = [d for d in kept_names if any(k[3] == d for k in latest)]
    keys = sorted({k[:3] for k in latest})
    metrics = sorted({described[d][2] for d in names})
    mean_metric = metrics[0] if len(metrics) == 1 else None
    notes = [] if mean_metric or not names else [
        f"no mean: the datasets kept have different main metrics ({', '.join(metrics)}); filter by task for a ranking"]

    means = {}
    for key in keys:
        values = [latest[(*key, d)].value for d in names if (*key, d) in latest]
        if mean_metric and len(values) == len(names):
            means[row_key(*key)] = float(np.mean(values))
    ranks = _competition_ranks(means)
    order = sorted(keys, key=lambda k: (ranks.get(row_key(*k), len(keys) + 1), k))
    tuple_of = {row_key(*k): k for k in order}
    letter_of = dict(zip(tuple_of, letters(len(order))))
    baseline_key = _resolve(list(letter_of), baseline) if baseline is not None else None
    settings = stats.TestSettings(seed=seed)

    columns, cells = [], {}
    for dataset in names:
        column, column_cells = _column(dataset, described[dataset], tuple_of, latest, letter_of, baseline_key,
                                       test=test, correction=correction, alpha=alpha, settings=settings)
        columns.append(column)
        cells.update(column_cells)

    ranked = [row_key(*k) for k in order if row_key(*k) in means]
    mean_stats = None
    if len(ranked) >= 2:
        per_dataset = [_aligned({key: latest[(*tuple_of[key], d)].per_query for key in ranked}) for d in names]
        if all(len(next(iter(values.values()))) for values in per_dataset):
            mean_stats = significance.bootstrap_means(per_dataset, ranked, resamples=resamples, seed=seed,
                                                      confidence=1 - alpha, correction=correction, alpha=alpha)
        else:
            notes.append("no interval for the mean: a dataset has no query every ranked row has a value for")
    neighbour_of = {n.system: n for n in mean_stats.neighbours} if mean_stats else {}

    rows = []
    for key in order:
        name = row_key(*key)
        missing = tuple(d for d in names if (*key, d) not in latest)
        rows.append(Row(
            team=key[0], system=key[1], category=key[2], letter=letter_of[name],
            scores={d: cells[(name, d)] for d in names if (name, d) in cells}, mean=means.get(name), rank=ranks.get(name),
            mean_ci=mean_stats.ci.get(name) if mean_stats else None,
            rank_interval=mean_stats.rank_interval.get(name) if mean_stats else None,
            versus_next=neighbour_of.get(name), missing=missing,
            note=f"no mean: no done submission on {', '.join(missing)}" if missing and mean_metric else ""))
    return Board(
        columns=tuple(columns), rows=tuple(rows), mean_metric=mean_metric, baseline=baseline_key,
        filters={"category": category, "datasets": list(kept_names) if datasets is not None else None,
                 "language": language, "task": task, "since": _iso(start), "until": _iso(end)},
        settings={"test": test, "correction": correction, "alpha": alpha, "seed": seed, "resamples": resamples,
                  "confidence": 1 - alpha, "permutations": settings.permutations,
                  "bootstrap_samples": settings.bootstrap_samples},
        notes=tuple(notes))


def sort_board(board: Board, by: str = "rank", descending: bool | None = None) -> Board:
    """The same board, rows in another order (letters stay with their rows): by "rank" (the
    default order), "mean", "team", "system", "category" or a column's dataset name (rows without
    a value for it last, whatever the direction). Numbers sort high first unless `descending=False`."""
    columns = [c.dataset for c in board.columns]
    if by not in ("rank", "mean", "team", "system", "category") and by not in columns:
        raise BoardError(f"cannot sort by {by!r}: rank, mean, team, system, category or a dataset ({', '.join(columns)})")
    if by == "rank":   # best first; descending=False: worst ranked first (unranked rows stay last)
        return _reordered(board, _ordered_numbers(board, lambda r: None if r.rank is None else -r.rank, descending is False))
    if by in ("team", "system", "category"):
        rows = sorted(board.rows, key=lambda r: (getattr(r, by), r.key), reverse=bool(descending))
        return _reordered(board, rows)
    value = (lambda r: r.mean) if by == "mean" else (lambda r: r.scores[by].value if by in r.scores else None)
    return _reordered(board, _ordered_numbers(board, value, descending is False))


# ---- building ---------------------------------------------------------------------------------------

def _check_settings(category, alpha, resamples, test, correction) -> None:
    if category is not None and category not in CATEGORIES:
        raise BoardError(f"unknown category {category!r}: one of {', '.join(CATEGORIES)}")
    if not 0 < alpha < 1:
        raise BoardError(f"alpha must be between 0 and 1, got {alpha}")
    if resamples < 100:
        raise BoardError(f"resamples must be at least 100, got {resamples}")
    if test not in stats.TESTS:
        raise BoardError(f"unknown test {test!r}: one of {', '.join(stats.TESTS)}")
    if correction not in CORRECTIONS:
        raise BoardError(f"unknown correction {correction!r}: one of {', '.join(CORRECTIONS)}")


def _describe_datasets(entries: list[Entry]) -> dict[str, tuple[str, str, str]]:
    """dataset -> (task, language, main metric), the same in every entry of it (the registry's)."""
    described = {}
    for e in entries:
        found = (e.task, e.language, e.main_metric)
        if described.setdefault(e.dataset, found) != found:
            raise BoardError(f"dataset {e.dataset!r}: submission {e.submission_id} says task/language/main metric "
                             f"{'/'.join(found)} but another {'/'.join(described[e.dataset])}")
    return described


def _kept_datasets(described: dict, datasets) -> list[str]:
    if datasets is None:
        return sorted(described)
    kept = list(dict.fromkeys(datasets))
    unknown = [d for d in kept if d not in described]
    if unknown:
        raise BoardError(f"unknown dataset {unknown[0]!r}: the board has {', '.join(sorted(described)) or 'none'}")
    return kept


def _latest(entries: list[Entry]) -> dict[tuple[str, str, str, str], Entry]:
    """(team, system, category, dataset) -> its latest entry (created, then submission id, breaks ties)."""
    latest = {}
    for e in entries:
        key = (e.team, e.system, e.category, e.dataset)
        if key not in latest or (_created(e), e.submission_id) > (_created(latest[key]), latest[key].submission_id):
            latest[key] = e
    return latest


def _competition_ranks(means: dict[str, float]) -> dict[str, int]:
    """1 + the rows whose mean is higher by more than compare's tie tolerance: tied means share a
    rank and the next rank skips ("1, 2, 2, 4")."""
    return {key: 1 + sum(other > mean + stats.TIE_TOLERANCE for other in means.values()) for key, mean in means.items()}


def _column(dataset, description, tuple_of, latest, letter_of, baseline_key, **test_options):
    """A dataset's column and its cells: the tests of each row against the best and the baseline."""
    task, language, main_metric = description
    present = [key for key, k in tuple_of.items() if (*k, dataset) in latest]
    entry_of = {key: latest[(*tuple_of[key], dataset)] for key in present}
    top = max(e.value for e in entry_of.values())
    best = next(key for key in present if entry_of[key].value >= top - stats.TIE_TOLERANCE)
    values = _aligned({key: entry_of[key].per_query for key in present})
    queries = len(next(iter(values.values())))
    pairs, note = [], ""
    if len(present) < 2:
        note = "one row: nothing to compare"
    elif queries < 2:
        note = "fewer than two queries every row has a value for: no test"
    else:
        pairs = [(key, best) for key in present if key != best]
        if baseline_key in present and baseline_key != best:
            # (baseline, best) is among the pairs above already: each pair is tested once
            pairs += [(key, baseline_key) for key in present if key not in (best, baseline_key)]
    tests = significance.column_tests(values, pairs, **test_options) if pairs else []
    cells = {}
    for key in present:
        entry = entry_of[key]
        mine = [t for t in tests if key in (t.system, t.against)]
        better = [letter_of[t.against] if t.system == key else letter_of[t.system]
                  for t in mine if t.significant and (t.difference > 0) == (t.system == key) and t.difference != 0]
        cells[(key, dataset)] = Score(
            dataset=dataset, value=entry.value, judged_at_10=entry.judged_at_10, submission_id=entry.submission_id,
            created=entry.created, best=entry.value >= top - stats.TIE_TOLERANCE,
            better_than=tuple(sorted(set(better), key=lambda x: (len(x), x))),
            vs_best=_oriented(tests, key, best), vs_baseline=_oriented(tests, key, baseline_key))
    return Column(dataset, task, language, main_metric, queries, best, note), cells


def _oriented(tests: list[PairTest], key: str, other: str | None) -> PairTest | None:
    """The test of `key` against `other`, as key - other (a test run the other way round is turned)."""
    if other is None or other == key:
        return None
    for t in tests:
        if (t.system, t.against) == (key, other):
            return t
        if (t.system, t.against) == (other, key):
            return PairTest(key, other, t.queries, -t.difference, t.p, t.p_corrected, t.significant)
    return None


def _aligned(per_query: dict[str, Mapping[str, float]]) -> dict[str, np.ndarray]:
    """row key -> values on the queries every row has, sorted by query id."""
    shared = sorted(set.intersection(*(set(values) for values in per_query.values())))
    return {key: np.array([float(values[q]) for q in shared]) for key, values in per_query.items()}


def _resolve(keys: list[str], name: str) -> str:
    if name in keys:
        return name
    found = [k for k in keys if k.rsplit("/", 1)[0] == name]
    if len(found) == 1:
        return found[0]
    if found:
        raise BoardError(f"{name!r} names rows in several categories ({', '.join(found)}): give team/system/category")
    raise BoardError(f"no row {name!r} on this board (team/system or team/system/category): {', '.join(keys) or 'no rows'}")


# ---- dates ------------------------------------------------------------------------------------------

def _created(entry: Entry) -> datetime:
    try:
        return _utc(datetime.fromisoformat(entry.created))
    except (TypeError, ValueError):
        raise BoardError(f"submission {entry.submission_id}: created {entry.created!r} is not an ISO date and time") from None


def _instant(value, name: str, end: bool) -> datetime | None:
    """since/until as a UTC instant: a datetime, a date (until: the end of that day) or ISO text."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = date.fromisoformat(value) if len(value) == 10 else datetime.fromisoformat(value)
        except ValueError:
            raise BoardError(f"{name} {value!r} is not an ISO date (2026-11-27) or date and time") from None
    if isinstance(value, datetime):
        return _utc(value)
    if isinstance(value, date):
        return datetime.combine(value, time.max if end else time.min, tzinfo=timezone.utc)
    raise BoardError(f"{name} must be a date or an ISO text, got {type(value).__name__}")


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


# ---- sorting ----------------------------------------------------------------------------------------

def _ordered_numbers(board: Board, value, ascending: bool) -> list[Row]:
    have = [r for r in board.rows if value(r) is not None]
    lacking = [r for r in board.rows if value(r) is None]
    have.sort(key=lambda r: r.key)
    have.sort(key=value, reverse=not ascending)       # stable: equal values stay in key order
    return have + lacking


def _reordered(board: Board, rows: list[Row]) -> Board:
    return Board(board.columns, tuple(rows), board.mean_metric, board.baseline, board.filters, board.settings, board.notes)
