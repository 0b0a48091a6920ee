"""The board's significance against computations written here: letters and p-values against
scipy.stats and statsmodels' Holm, the bootstrap of the mean against a numpy implementation of the
same seed protocol (docs/leaderboard-ranking.md) and against the normal approximation, and a real
case: three systems on SciFact (40 test queries), scored per query by pytrec_eval."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as scipy_stats

from irforge.leaderboard.board import Entry, build_board

multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests


def entry(team, system, dataset, per_query: dict, *, created="2026-11-20T10:00:00+00:00") -> Entry:
    values = list(per_query.values())
    return Entry(f"{team}-{system}-{dataset}", team, system, "retrieval", dataset, "qa", "en", "nDCG@10",
                 float(np.mean(values)), 1.0, per_query, created)


def synthetic(systems: dict[str, float], dataset: str, queries: int, seed: int) -> list[Entry]:
    """Per-query values in [0, 1]: a shared per-query difficulty plus each system's shift and noise,
    so systems are paired as real ones are."""
    rng = np.random.default_rng(seed)
    difficulty = rng.uniform(0.1, 0.9, queries)
    ids = [f"qid-{n:04d}" for n in range(queries)]
    return [entry("team", name, dataset, dict(zip(ids, np.clip(difficulty + shift + rng.normal(0, 0.15, queries), 0, 1))))
            for name, shift in systems.items()]


def aligned(entries: list[Entry]) -> dict[str, np.ndarray]:
    shared = sorted(set.intersection(*(set(e.per_query) for e in entries)))
    return {e.system: np.array([e.per_query[q] for q in shared]) for e in entries}


def expected_letters(values: dict[str, np.ndarray], baseline: str | None, alpha=0.05, test=scipy_stats.ttest_rel):
    """Independently: letters a, b, ... by mean (high first); the family = each system against the
    best and against the baseline, Holm-corrected by statsmodels; a significant pair gives the
    higher system the lower one's letter. Returns (letters per system, {(system, against): (p, p_holm)})."""
    order = sorted(values, key=lambda s: -values[s].mean())
    letter = dict(zip(order, "abcdefghijklmnopqrstuvwxyz"))
    best = order[0]
    pairs = [(s, best) for s in order if s != best]
    if baseline and baseline != best:
        pairs += [(s, baseline) for s in order if s not in (best, baseline)]
    raw = [test(values[s], values[a]).pvalue for s, a in pairs]
    holm = multipletests(raw, alpha=alpha, method="holm")[1]
    better = {s: set() for s in order}
    for (s, a), p in zip(pairs, holm):
        if p < alpha:
            winner, loser = (s, a) if values[s].mean() > values[a].mean() else (a, s)
            better[winner].add(letter[loser])
    return {s: tuple(sorted(better[s])) for s in order}, dict(zip(pairs, zip(raw, holm)))


SYSTEMS = {"strong": 0.12, "close": 0.10, "middle": 0.03, "base": 0.0, "weak": -0.15}


@pytest.mark.parametrize("baseline", [None, "base", "strong"])
def test_letters_and_p_values_equal_scipy_and_holm(baseline):
    entries = synthetic(SYSTEMS, "d1", 60, seed=11)
    board = build_board(entries, baseline=f"team/{baseline}" if baseline else None, resamples=200)
    letters, family = expected_letters(aligned(entries), baseline)
    shown = {r.system: r.scores["d1"].better_than for r in board.rows}
    assert shown == letters
    assert any(letters.values()) and not all(letters[s] for s in letters if s != "weak")   # both outcomes occur
    for row in board.rows:
        for test in (row.scores["d1"].vs_best, row.scores["d1"].vs_baseline):
            if test is None:
                continue
            against = test.against.split("/")[1]
            p, holm = family.get((row.system, against)) or family[(against, row.system)]
            assert test.against == f"team/{against}/retrieval" and test.system == row.key
            assert test.p == pytest.approx(p, abs=1e-12) and test.p_corrected == pytest.approx(holm, abs=1e-12)
    best = board.rows[0]
    assert best.system == "strong" and best.scores["d1"].vs_best is None
    # the family is each pair once: 4 against the best, and 3 more against a baseline that is not the best
    assert len(family) == (7 if baseline == "base" else 4)
    assert board.row("team/close").scores["d1"].vs_best.difference == pytest.approx(
        (aligned(entries)["close"] - aligned(entries)["strong"]).mean(), abs=1e-12)


def test_wilcoxon_on_request_equals_scipy():
    entries = synthetic(SYSTEMS, "d1", 60, seed=12)
    board = build_board(entries, test="wilcoxon", resamples=200)
    letters, family = expected_letters(aligned(entries), None, test=scipy_stats.wilcoxon)
    assert {r.system: r.scores["d1"].better_than for r in board.rows} == letters
    for row in board.rows[1:]:
        assert row.scores["d1"].vs_best.p == pytest.approx(family[(row.system, "strong")][0], abs=1e-12)


def numpy_bootstrap(per_dataset: list[dict[str, np.ndarray]], order: list[str], resamples: int, seed: int):
    """The seed protocol, written again: one generator; per dataset in column order, one
    (resamples x queries) draw of query positions, the same for every system."""
    rng = np.random.default_rng(seed)
    sums = {s: np.zeros(resamples) for s in order}
    for values in per_dataset:
        n = len(next(iter(values.values())))
        positions = rng.integers(0, n, size=(resamples, n))
        for s in order:
            sums[s] += np.take(values[s], positions).mean(axis=1)
    return {s: sums[s] / len(per_dataset) for s in order}


def test_bootstrap_of_the_mean_equals_a_numpy_implementation_of_the_seed_protocol():
    systems = {"s1": 0.08, "s2": 0.07, "s3": 0.0, "s4": -0.1}
    entries = synthetic(systems, "alpha", 40, seed=1) + synthetic(systems, "beta", 75, seed=2) + synthetic(systems, "gamma", 23, seed=3)
    board = build_board(entries, seed=5, resamples=3000)
    order = [r.system for r in board.rows]
    per_dataset = [aligned([e for e in entries if e.dataset == d]) for d in ("alpha", "beta", "gamma")]
    replicates = numpy_bootstrap(per_dataset, order, 3000, seed=5)
    for row in board.rows:
        low, high = np.percentile(replicates[row.system], [2.5, 97.5])
        assert row.mean_ci == pytest.approx((low, high), abs=1e-12)
        assert row.mean == pytest.approx(np.mean([v[row.system].mean() for v in per_dataset]), abs=1e-12)
    raw = []
    for upper, lower in zip(order, order[1:]):
        diff = replicates[upper] - replicates[lower]
        raw.append(min(1.0, 2 * (min((diff <= 0).sum(), (diff >= 0).sum()) + 1) / 3001))
        shown = board.row(f"team/{upper}").versus_next
        assert shown.below == f"team/{lower}/retrieval"
        assert shown.ci == pytest.approx(tuple(np.percentile(diff, [2.5, 97.5])), abs=1e-12)
    holm = multipletests(raw, method="holm")[1]
    shown = [board.row(f"team/{s}").versus_next for s in order[:-1]]
    assert [n.p for n in shown] == pytest.approx(raw, abs=1e-12)
    assert [n.p_corrected for n in shown] == pytest.approx(list(holm), abs=1e-12)
    assert [n.significant for n in shown] == [bool(p < 0.05) for p in holm] == [False, True, True]
    # rank intervals: s1 and s2 trade places in the resamples, s4 is always last
    ranks = np.argsort(np.argsort(-np.stack([replicates[s] for s in order]), axis=0), axis=0) + 1
    for i, row in enumerate(board.rows):
        assert row.rank_interval == (int(np.quantile(ranks[i], 0.025, method="lower")),
                                     int(np.quantile(ranks[i], 0.975, method="higher")))
    assert board.rows[0].rank_interval == (1, 2) and board.rows[-1].rank_interval == (4, 4)


def test_bootstrap_interval_of_one_dataset_is_the_normal_interval_on_many_queries():
    # A property that holds whatever the protocol: with 400 queries the percentile interval of a
    # mean is mean +- 1.96 sd / sqrt(n) (sd with ddof 0, as the bootstrap's), to within 0.004.
    entries = synthetic({"x": 0.0, "y": -0.2}, "d1", 400, seed=9)
    board = build_board(entries, seed=1, resamples=5000)
    for row in board.rows:
        values = np.array(list(next(e for e in entries if e.system == row.system).per_query.values()))
        half = 1.959964 * values.std() / np.sqrt(len(values))
        assert row.mean_ci == pytest.approx((values.mean() - half, values.mean() + half), abs=0.004)


def test_deterministic_under_a_seed():
    entries = synthetic(SYSTEMS, "d1", 50, seed=4) + synthetic(SYSTEMS, "d2", 30, seed=5)
    one = build_board(entries, seed=3, resamples=500, test="randomization")
    assert one.as_dict() == build_board(entries, seed=3, resamples=500, test="randomization").as_dict()
    assert one.rows[0].mean_ci != build_board(entries, seed=4, resamples=500).rows[0].mean_ci


def test_identical_systems_are_tied_and_nothing_is_significant():
    per_query = {f"qid-{n}": n / 10 for n in range(10)}
    entries = [entry("t1", "same", "d1", per_query), entry("t2", "same", "d1", per_query)]
    board = build_board(entries, resamples=200, baseline="t2/same")
    assert [r.rank for r in board.rows] == [1, 1]
    assert board.rows[0].versus_next.p == 1.0 and not board.rows[0].versus_next.significant
    assert all(r.scores["d1"].better_than == () for r in board.rows)
    assert board.rows[1].scores["d1"].vs_best.p == 1.0


def test_the_board_carries_no_per_query_value():
    entries = synthetic(SYSTEMS, "d1", 30, seed=6)
    shown = json.dumps(build_board(entries, resamples=200, baseline="team/base").as_dict())
    assert "qid-" not in shown and "per_query" not in shown


# ---- a real case: SciFact, three systems, per-query nDCG@10 from pytrec_eval ---------------------------

@pytest.fixture(scope="module")
def scifact_runs(scifact_subset, tmp_path_factory):
    """BM25 (default k1=0.9 b=0.4, and Lucene's k1=1.2 b=0.75) run by irforge on a 40-query SciFact slice, and a third run:
    the default run with each query's top 10 in reverse order. Scored here by pytrec_eval."""
    import irforge
    import pytrec_eval

    root = tmp_path_factory.mktemp("leaderboard-scifact")
    runs = {}
    for label, options in {"bm25": {}, "bm25-lucene": {"k1": 1.2, "b": 0.75}}.items():
        irforge.evaluate(scifact_subset, out=root / label, index_dir=root / "indexes", measures=["nDCG@10"], **options)
        runs[label] = read_trec(root / label / "run.trec")
    runs["reversed-top10"] = {q: reverse_top10(docs) for q, docs in runs["bm25"].items()}
    qrels = {}
    for line in (scifact_subset / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, r = line.split("\t")
        qrels.setdefault(q, {})[d] = int(r)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    return {label: {q: m["ndcg_cut_10"] for q, m in evaluator.evaluate(run).items()} for label, run in runs.items()}


def read_trec(path) -> dict[str, dict[str, float]]:
    run = {}
    for line in path.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        run.setdefault(q, {})[d] = float(score)
    return run


def reverse_top10(docs: dict[str, float]) -> dict[str, float]:
    ranked = sorted(docs, key=lambda d: (-docs[d], d))[:10]
    return {d: float(n) for n, d in enumerate(ranked)}          # the old 10th now scores highest


def test_scifact_board_letters_equal_scipy_on_pytrec_eval_values(scifact_runs):
    entries = [Entry(label, team, label, "retrieval", "scifact", "qa", "en", "nDCG@10", float(np.mean(list(values.values()))),
                     1.0, values, "2026-11-20T10:00:00Z")
               for (label, values), team in zip(scifact_runs.items(), ("team-a", "team-a", "team-b"))]
    board = build_board(entries, baseline="team-b/reversed-top10", resamples=1000)
    values = {label: np.array([v[q] for q in sorted(v)]) for label, v in scifact_runs.items()}
    letters, family = expected_letters(values, "reversed-top10")
    assert {r.system: r.scores["scifact"].better_than for r in board.rows} == letters
    assert board.columns[0].queries == 40 and len(board.rows) == 3
    # BM25's two settings are not told apart on 40 queries; both beat the reversed top 10
    assert letters["bm25"] == ("c",) and letters["bm25-lucene"] == ("c",) and letters["reversed-top10"] == ()
    for row in board.rows:
        test = row.scores["scifact"].vs_baseline
        if test is not None:
            assert test.p == pytest.approx(scipy_stats.ttest_rel(values[row.system], values["reversed-top10"]).pvalue, abs=1e-12)
