"""Issue 27's Done-means, end to end over HTTP and in headless Chromium: a platform with two teams
and a closed-book SciFact slice (its test qrels stay on the server). Team A submits BM25 (an
irforge configuration the server runs) and a dense run (all-MiniLM-L6-v2, retrieved on the team's
side); team B submits a run file. The leaderboard shows three rows whose nDCG@10 is what
pytrec_eval computes from each run and the hidden qrels, and whose letters are what scipy's paired
t-test with statsmodels' Holm correction says; team B reads nothing of team A's jobs, results or
per-query values; no route, as either team, returns a line of the hidden qrels; every page holds no
inline script and no URL off the site. Screenshots go to $IRFORGE_SCREENSHOTS when it is set."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from scipy import stats
from statsmodels.stats.multitest import multipletests

from irforge.accounts.identity import OPERATOR, TEAM, Identity, acting_as
from irforge.cli.main import main

from ..browser import DevTools, RenderedPage
from .conftest import as_operator, assert_strict_page, screenshot_dir, wait_ended

DATASET = "scifact"


def read_run(path: Path) -> dict:
    run: dict = {}
    for line in path.read_text().splitlines():
        query, _, doc, _, score, _ = line.split()
        run.setdefault(query, {})[doc] = float(score)
    return run


def read_qrels(path: Path) -> dict:
    qrels: dict = {}
    for line in path.read_text().splitlines()[1:]:
        query, doc, grade = line.split("\t")
        qrels.setdefault(query, {})[doc] = int(grade)
    return qrels


def ndcg_per_query(qrels: dict, run: dict) -> dict[str, float]:
    """pytrec_eval's nDCG@10 for every judged query (0 where the run has none), as trec_eval -c."""
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return {q: scores.get(q, {}).get("ndcg_cut_10", 0.0) for q in qrels}


def reversed_top10(candidates: Path) -> bytes:
    """Team B's run: the dataset's public BM25 top 100 with each query's first ten turned around."""
    lines = []
    for query, docs in read_run(candidates).items():
        ranked = sorted(docs, key=lambda d: -docs[d])
        ranked = ranked[:10][::-1] + ranked[10:]
        lines += [f"{query} Q0 {doc} {rank} {100 - rank} team-b" for rank, doc in enumerate(ranked, start=1)]
    return ("\n".join(lines) + "\n").encode()


def hidden_pairs(qrels: dict) -> set[tuple[str, str]]:
    return {(q, d) for q, docs in qrels.items() for d in docs}


def leaked(text: str, qrels: dict) -> list[str]:
    """Lines of `text` naming a judged query and one of its judged documents together (a qrels line
    however it is formatted), found independently of irforge's own guard."""
    found = []
    for line in text.splitlines():
        tokens = set(re.findall(r"[A-Za-z0-9_.-]+", line))
        for query in tokens & set(qrels):
            if tokens & set(qrels[query]):
                found.append(line[:200])
                break
    return found


def dense_run(dataset: Path, out: Path, embedding_cache: Path) -> Path:
    """Team A's dense run, retrieved on its own machine with all-MiniLM-L6-v2 (the corpus and the
    queries are public; the evaluation `irforge eval` adds is not used), its vectors from `embedding_cache`."""
    assert main(["eval", "--dataset", str(dataset), "--retriever", "dense", "--model", "all-MiniLM-L6-v2",
                 "--out", str(out), "--embedding-cache", str(embedding_cache), "--vector-dir", str(out.parent / "vectors"),
                 "--index-dir", str(out.parent / "bm25")]) == 0
    return out / "run.trec"


@pytest.fixture()
def scenario(make_platform, scifact_subset, scifact_dense, scifact_dense_stores, tmp_path):
    """The platform after the three submissions have run. The dense vectors come from the suite's
    embedding cache, which the full-SciFact dense run (conftest's background `scifact_dense`) fills
    with every SciFact document and test query: this test encodes nothing itself."""
    platform = make_platform(("team-a", "team-b"))
    leaderboard = platform.leaderboard
    with acting_as(Identity("ops", OPERATOR, "token")):
        leaderboard.register_dataset(DATASET, scifact_subset, task="qa", language="en", closed=True)
    dense = dense_run(scifact_subset, tmp_path / "dense" / "out", scifact_dense_stores["--embedding-cache"])
    candidates = leaderboard.candidates(DATASET)
    submitted = {}
    with acting_as(Identity("team-a", TEAM, "token")):
        submitted["team-a/bm25"] = leaderboard.submit(dataset=DATASET, system="bm25", category="retrieval", kind="config",
                                                      data=b"retriever: bm25\n")
        submitted["team-a/minilm"] = leaderboard.submit(dataset=DATASET, system="minilm", category="retrieval", kind="run",
                                                        data=dense.read_bytes())
    with acting_as(Identity("team-b", TEAM, "token")):
        submitted["team-b/reversed"] = leaderboard.submit(dataset=DATASET, system="reversed", category="retrieval",
                                                          kind="run", data=reversed_top10(candidates))
    jobs = {name: status.record.job_id for name, status in submitted.items()}
    for name, job_id in jobs.items():
        record = wait_ended(platform.orchestrator, job_id)
        assert record.state.value == "SUCCEEDED", (name, record.error)
    qrels = read_qrels(scifact_subset / "qrels" / "test.tsv")
    with as_operator():
        runs = {name: read_run(platform.orchestrator.results_dir(job_id) / "run.trec") for name, job_id in jobs.items()}
    return platform, jobs, qrels, runs


def expected_board(qrels: dict, runs: dict, baseline: str | None = None) -> dict[str, tuple[float, str]]:
    """name -> (nDCG@10, its letters): rows lettered a, b, c by nDCG@10; every row tested against
    the best (and, given a baseline, every other row against it) with scipy's paired t-test over
    the queries, the column's tests Holm-corrected together (statsmodels); a row's letters name the
    rows it is significantly better than."""
    per_query = {name: ndcg_per_query(qrels, run) for name, run in runs.items()}
    queries = sorted(qrels)
    values = {name: np.array([scores[q] for q in queries]) for name, scores in per_query.items()}
    means = {name: float(v.mean()) for name, v in values.items()}
    order = sorted(means, key=lambda n: -means[n])
    letter = dict(zip(order, "abc"))
    best = order[0]
    pairs = [(name, best) for name in order if name != best]
    if baseline is not None:
        pairs += [(name, baseline) for name in order if name not in (best, baseline)]
    p = [stats.ttest_rel(values[x], values[y]).pvalue for x, y in pairs]
    significant = multipletests(p, alpha=0.05, method="holm")[0]
    letters = {name: set() for name in order}
    for (x, y), s in zip(pairs, significant):
        if s:
            winner, loser = (x, y) if means[x] > means[y] else (y, x)
            letters[winner].add(letter[loser])
    return {name: (means[name], ",".join(sorted(letters[name]))) for name in order}


def board_cells(dom: str) -> dict[str, tuple[float, str]]:
    """team/system -> (the nDCG@10 cell's value, its letters) as Chromium rendered the leaderboard."""
    table = re.search(r'<table[^>]*data-table="leaderboard".*?</table>', dom, flags=re.S).group(0)
    found = {}
    for row in re.findall(r"<tbody>(.*?)</tbody>", table, flags=re.S)[0].split("</tr>")[:-1]:
        cells = re.findall(r"<td([^>]*)>(.*?)</td>", row, flags=re.S)
        team = re.sub(r"<[^>]+>", "", cells[2][1])
        system = re.search(r"<a [^>]*>([^<]*)</a>", cells[3][1]).group(1)     # the link to its page (a "(baseline)" mark after it)
        value = float(re.search(r'data-sort="([^"]+)"', cells[5][0]).group(1))
        letters = re.search(r"<sup[^>]*>([^<]*)</sup>", cells[5][1])
        found[f"{team}/{system}"] = (value, letters.group(1) if letters else "")
    return found


def test_two_teams_on_a_closed_book_scifact(scenario, tmp_path):
    platform, jobs, qrels, runs = scenario
    expected = expected_board(qrels, runs)
    assert len({round(v, 4) for v, _ in expected.values()}) == 3 and any(letters for _, letters in expected.values())
    shots = screenshot_dir()

    browser = DevTools(tmp_path / "chromium")
    try:
        browser.goto(platform.url + "login")
        board_dom = browser.submit("form.login", {"token": platform.tokens["team-b"], "next": "/"})
        rendered = RenderedPage(board_dom)
        assert rendered.rows["leaderboard"] == 3
        assert rendered.body.get("data-script-errors") == "" and rendered.body.get("data-rendered") == "ok"
        cells = board_cells(board_dom)
        assert set(cells) == set(expected)
        for name, (value, letters) in expected.items():
            assert cells[name][0] == pytest.approx(value, abs=1e-9), name
            assert cells[name][1] == letters, name
        if shots:
            browser.screenshot(shots / "web-leaderboard.png", height=1000)
        # Filters are GET parameters: a link to the view; sorting by team puts team-a first.
        filtered = browser.goto(platform.url + "?dataset=scifact&category=retrieval&sort=team&order=asc")
        assert list(board_cells(filtered))[:2] == ["team-a/bm25", "team-a/minilm"]
        # A baseline adds its pairs to each column's tests: the letters of that board, as scipy and Holm say.
        with_baseline = board_cells(browser.goto(platform.url + "?baseline=team-b/reversed/retrieval"))
        assert {name: letters for name, (_, letters) in with_baseline.items()} == {
            name: letters for name, (_, letters) in expected_board(qrels, runs, "team-b/reversed").items()}

        # Team B on team A's system: the aggregates, nothing of what was submitted or per query.
        other = browser.goto(platform.url + "systems/team-a/minilm?category=retrieval")
        assert RenderedPage(other).rows["system-results"] == 1 and "Another team's system" in other
        assert 'data-table="configuration"' not in other and "per-query-" not in other and "/jobs/" + jobs["team-a/minilm"] not in other
        # Team A on its own system: configuration, the per-query values withheld (closed), difference plot refused.
        browser.goto(platform.url + "login")
        browser.submit("form.login", {"token": platform.tokens["team-a"], "next": "/"})
        own = browser.goto(platform.url + "systems/team-a/minilm?category=retrieval&against=team-a/bm25/retrieval")
        page = RenderedPage(own)
        assert page.rows["configuration"] > 0 and "withheld by the dataset" in own and page.plots["difference"] == 0
        if shots:
            browser.screenshot(shots / "web-system-team-a.png", height=1400)
        # An operator sees the per-query difference plot against another system.
        browser.goto(platform.url + "login")
        browser.submit("form.login", {"token": platform.tokens["operator"], "next": "/"})
        operator = RenderedPage(browser.goto(platform.url + "systems/team-a/minilm?against=team-b/reversed/retrieval"))
        assert operator.plots["difference"] == 1 and operator.rows["per-query-scifact"] == len(qrels)
        assert operator.body.get("data-script-errors") == ""
        if shots:
            browser.screenshot(shots / "web-system-operator-against.png", height=1600)
        assert not browser.problems(), browser.problems()
        origin = platform.url.rstrip("/")
        assert all(url.startswith(origin) for url in browser.requested() if url.startswith("http"))
    finally:
        browser.close()

    # Team B cannot read team A's jobs, results or per-query values: as if they did not exist.
    team_b = platform.client("team-b")
    missing = team_b.get("/jobs/000000000000")
    for name in ("team-a/bm25", "team-a/minilm"):
        job_id = jobs[name]
        for path in (f"/jobs/{job_id}", f"/jobs/{job_id}/report", f"/jobs/{job_id}/events"):
            response = team_b.get(path)
            assert response.status_code == 404, path
            if not path.endswith("/events"):
                assert response.text == missing.text     # word for word: no oracle of others' ids
        assert job_id not in team_b.get("/jobs").text

    # Filters that keep nothing say so; a sort the board cannot take is a 400 naming it.
    reranking = team_b.get("/?category=reranking")
    assert reranking.status_code == 200 and "No done submission matches these filters." in reranking.text
    assert "No done submission" in team_b.get("/?since=2999-01-01").text
    bad = team_b.get("/?sort=nope")
    assert bad.status_code == 400 and "cannot sort by &#x27;nope&#x27;" in bad.text

    # No route, as either team, returns a line of the hidden qrels; every page is strict.
    for team in ("team-a", "team-b"):
        client = platform.client(team)
        own = [j for n, j in jobs.items() if n.startswith(team)]
        paths = ["/", "/?dataset=scifact&sort=scifact&baseline=team-a/bm25/retrieval", "/jobs", "/login",
                 "/systems/team-a/bm25", "/systems/team-a/minilm?against=team-b/reversed/retrieval",
                 "/systems/team-b/reversed?against=team-a/bm25/retrieval", "/static/style.css", "/static/live.js"]
        paths += [f"/jobs/{j}{tail}" for j in own for tail in ("", "/report", "/events")]
        for path in paths:
            response = client.get(path)
            assert response.status_code == 200, (team, path, response.status_code)
            assert not leaked(response.text, qrels), (team, path, leaked(response.text, qrels)[:3])
            if response.headers["content-type"].startswith("text/html") and not path.endswith("/report"):
                assert_strict_page(response.text)
        # Their own report of a closed-book job holds the aggregates, no per-query section.
        report = client.get(f"/jobs/{own[0]}/report").text
        assert "nDCG@10" in report and not any(f'"{q}"' in report for q in qrels)
