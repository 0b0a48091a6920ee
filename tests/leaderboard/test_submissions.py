"""Submissions to a closed SciFact slice: the score a team gets equals pytrec_eval's on the same
run and the hidden qrels, the daily limit (refusals counted), the kept bytes and their SHA-256,
the reranking category's candidates, and what a configuration may not name."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

import pytest
import pytrec_eval

from irforge.accounts.identity import acting_as
from irforge.leaderboard.errors import DatasetNotFound, LeaderboardError, LimitReached, SubmissionNotFound
from irforge.orchestrator.spec import JobSpec

from .conftest import OPERATOR_ID, TEAM_A, TEAM_B, hidden_qrels, wait_done


def shuffled_run(candidates: str) -> bytes:
    """The candidates re-scored so the ranking differs from BM25's: every third document of each
    query moved to the top (a run file of the team's own, in TREC format)."""
    lines = []
    for line in candidates.splitlines():
        query, _, doc, rank, score, _ = line.split()
        boosted = float(score) + (100.0 if int(rank) % 3 == 0 else 0.0)
        lines.append(f"{query} Q0 {doc} 0 {boosted:.6f} team-run")
    return ("\n".join(lines) + "\n").encode()


def test_a_run_files_ndcg_is_pytrec_evals_on_the_hidden_qrels(platform, scifact_subset):
    orchestrator, leaderboard = platform
    data = shuffled_run(leaderboard.candidates("scifact").read_text())
    with acting_as(TEAM_A):
        submitted = leaderboard.submit(dataset="scifact", system="shuffled", category="retrieval", kind="run", data=data)
        wait_done(orchestrator, submitted.record.job_id)
        done = leaderboard.submission(submitted.record.submission_id)
    run = {}
    for line in data.decode().splitlines():
        query, _, doc, _, score, _ = line.split()
        run.setdefault(query, {})[doc] = float(score)
    qrels = hidden_qrels(scifact_subset)
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    expected = sum(scores[q]["ndcg_cut_10"] if q in scores else 0.0 for q in qrels) / len(qrels)
    assert done.state == "SUCCEEDED"
    assert done.metrics["nDCG@10"] == pytest.approx(expected, abs=1e-12)
    assert "Judged@10" in done.metrics
    assert done.per_query == {}   # closed, withheld: aggregates only
    [entry] = leaderboard.entries()
    assert (entry.team, entry.system, entry.value) == ("team-a", "shuffled", done.metrics["nDCG@10"])
    assert entry.per_query == {q: pytest.approx(scores.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"]) for q in qrels}


def test_the_submitted_bytes_are_kept_with_their_sha256(platform):
    _, leaderboard = platform
    data = leaderboard.candidates("scifact").read_bytes()
    bad = b"retriever: bm25\ndataset: /elsewhere\n"
    with acting_as(TEAM_A):
        kept = leaderboard.submit(dataset="scifact", system="bm25", category="retrieval", kind="run", data=data).record
        with pytest.raises(LeaderboardError):
            leaderboard.submit(dataset="scifact", system="bad", category="retrieval", kind="config", data=bad)
        refused = leaderboard.submissions()[0].record
    for record, sent in ((kept, data), (refused, bad)):
        assert record.fingerprint == hashlib.sha256(sent).hexdigest()
        assert (leaderboard.root / "submissions" / record.submission_id / record.file).read_bytes() == sent
    assert refused.state == "refused" and "names dataset '/elsewhere'" in refused.reason


def test_the_eleventh_submission_of_the_day_is_refused_before_any_work(platform):
    orchestrator, leaderboard = platform
    good = leaderboard.candidates("scifact").read_bytes()
    jobs_before = len(orchestrator.list())
    with acting_as(TEAM_A):
        leaderboard.submit(dataset="scifact", system="bm25", category="retrieval", kind="run", data=good)
        for n in range(9):   # refused for what they hold: they count all the same
            with pytest.raises((LeaderboardError, DatasetNotFound)):
                leaderboard.submit(dataset="scifact" if n % 2 else "nope", system=f"probe{n}", category="retrieval",
                                   kind="config", data=b"fill_holes: 10\n" if n % 2 else b"{}")
        before = datetime.now(timezone.utc)
        with pytest.raises(LimitReached) as refused:
            leaderboard.submit(dataset="scifact", system="eleventh", category="retrieval", kind="run", data=good)
        listed = leaderboard.submissions()
    tomorrow = (before + timedelta(days=1)).strftime("%Y-%m-%dT00:00:00Z")
    message = str(refused.value)
    assert "team 'team-a' has used 10 of its 10 submissions" in message
    assert f"for {before:%Y-%m-%d} (UTC day; refused submissions count too)" in message
    assert f"the next is accepted from {tomorrow}" in message
    assert len(listed) == 10 and "eleventh" not in {s.record.system for s in listed}   # nothing kept, no job
    assert len(orchestrator.list()) == jobs_before + 1
    assert not (leaderboard.root / "submissions").joinpath("eleventh").exists()
    with acting_as(TEAM_B):   # another team's day is its own
        leaderboard.submit(dataset="scifact", system="bm25", category="retrieval", kind="run", data=good)
    with acting_as(OPERATOR_ID):   # operators (baselines) are not limited
        leaderboard.submit(dataset="scifact", system="baseline", category="retrieval", kind="run", data=good)


def test_a_team_limit_overrides_the_platform_default(platform):
    _, leaderboard = platform
    leaderboard.team_limit = {"team-a": 1}.get
    good = leaderboard.candidates("scifact").read_bytes()
    with acting_as(TEAM_A):
        leaderboard.submit(dataset="scifact", system="one", category="retrieval", kind="run", data=good)
        with pytest.raises(LimitReached, match="used 1 of its 1 submissions"):
            leaderboard.submit(dataset="scifact", system="two", category="retrieval", kind="run", data=good)


def test_reranking_runs_rank_only_the_bm25_candidates(platform):
    orchestrator, leaderboard = platform
    candidates = leaderboard.candidates("scifact").read_text()
    first_query = candidates.split()[0]
    outsider = "1-not-a-candidate"
    with acting_as(TEAM_A):
        with pytest.raises(LeaderboardError, match=f"query '{first_query}' ranks 1 document\\(s\\) outside its BM25 top 100"):
            leaderboard.submit(dataset="scifact", system="cheat", category="reranking", kind="run",
                               data=(candidates + f"{first_query} Q0 {outsider} 1 999 x\n").encode())
        reversed_run = "".join(f"{q} Q0 {d} 0 {-float(s)} rev\n" for q, _, d, _, s, _ in
                               (line.split() for line in candidates.splitlines()))
        fine = leaderboard.submit(dataset="scifact", system="reversed", category="reranking", kind="run",
                                  data=reversed_run.encode())
        assert wait_done(orchestrator, fine.record.job_id).state.value == "SUCCEEDED"


def test_a_reranking_configuration_reranks_the_registered_candidates(platform):
    _, leaderboard = platform
    dataset = leaderboard.store.dataset("scifact")
    stored = leaderboard.root / "x.yaml"
    spec = leaderboard_job(leaderboard, dataset, "reranking", b"rerank: {model: some/cross-encoder, depth: 20}\n", stored)
    assert spec.pipeline.rerank.candidates == str(leaderboard.candidates("scifact"))
    assert spec.pipeline.dataset == str(leaderboard.registry.data_dir("scifact"))
    assert spec.pipeline.measures() == ("nDCG@10", "R@100", "AP@100", "RR@10", "P@10", "Judged@10")
    with pytest.raises(LeaderboardError, match="has no reranker"):
        leaderboard_job(leaderboard, dataset, "reranking", b"retriever: bm25\n", stored)


def leaderboard_job(leaderboard, dataset, category, data, stored) -> JobSpec:
    from irforge.leaderboard.submissions import job_spec

    return job_spec(dataset, leaderboard.registry.data_dir(dataset.name), leaderboard.candidates(dataset.name),
                    category=category, kind="config", stored=stored, data=data, name="x")


@pytest.mark.parametrize(("data", "refusal"), [
    (b"dataset: beir/nfcorpus\n", "names dataset 'beir/nfcorpus'"),
    (b"split: dev\n", "names split 'dev'"),
    (b"holes: {depth: 10}\n", "sets fill_holes: hole filling writes labels"),
    (b"given: {runs: [/etc/passwd]}\n", "sets runs"),
    (b"endpoint: {spec: /srv/secret.yaml}\n", "sets endpoint"),
    (b"services: {server: 10.0.0.1:1}\n", "configure the services"),
    (b"retriever: [\n", "not YAML or JSON"),
])
def test_a_configuration_may_not_name_another_dataset_or_server_files(platform, data, refusal):
    _, leaderboard = platform
    with acting_as(TEAM_A), pytest.raises(LeaderboardError, match=refusal.replace("(", "\\(")):
        leaderboard.submit(dataset="scifact", system="c", category="retrieval", kind="config", data=data)


def test_an_endpoint_spec_may_not_read_the_servers_secrets_or_files(platform):
    _, leaderboard = platform
    with acting_as(TEAM_A):
        with pytest.raises(LeaderboardError, match="api_key_env name files or variables on the server"):
            leaderboard.submit(dataset="scifact", system="e", category="retrieval", kind="endpoint",
                               data=b"kind: search-http\nurl: http://127.0.0.1:9/search\napi_key_env: HOME\n")
        with pytest.raises(LeaderboardError, match="the reranking category needs a rerank-http or rerank-grpc"):
            leaderboard.submit(dataset="scifact", system="e", category="reranking", kind="endpoint",
                               data=b"kind: search-http\nurl: http://127.0.0.1:9/search\n")


def test_a_team_sees_its_own_submissions_only(platform):
    _, leaderboard = platform
    data = leaderboard.candidates("scifact").read_bytes()
    with acting_as(TEAM_A):
        mine = leaderboard.submit(dataset="scifact", system="bm25", category="retrieval", kind="run", data=data)
    with acting_as(TEAM_B):
        assert leaderboard.submissions() == []
        with pytest.raises(SubmissionNotFound):
            leaderboard.submission(mine.record.submission_id)
    with acting_as(OPERATOR_ID):
        assert [s.record.team for s in leaderboard.submissions()] == ["team-a"]


def test_coarsened_per_query_values_are_floored_to_tenths(platform, scifact_tiny):
    """A closed dataset whose policy is `coarsened`: the team reads each query's nDCG@10 floored to
    its 0.1 bucket (pytrec_eval's value, floored here by hand), the operator the exact value."""
    import math

    orchestrator, leaderboard = platform
    with acting_as(OPERATOR_ID):
        leaderboard.register_dataset("tiny", scifact_tiny, per_query="coarsened")
    data = shuffled_run(leaderboard.candidates("tiny").read_text())
    with acting_as(TEAM_A):
        submitted = leaderboard.submit(dataset="tiny", system="s", category="retrieval", kind="run", data=data)
        wait_done(orchestrator, submitted.record.job_id)
        seen = leaderboard.submission(submitted.record.submission_id).per_query
    with acting_as(OPERATOR_ID):
        exact = leaderboard.submission(submitted.record.submission_id).per_query
    run = {}
    for line in data.decode().splitlines():
        query, _, doc, _, score, _ = line.split()
        run.setdefault(query, {})[doc] = float(score)
    qrels = hidden_qrels(scifact_tiny)
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    assert exact == {q: pytest.approx(scores[q]["ndcg_cut_10"]) for q in qrels}
    assert seen == {q: pytest.approx(math.floor(scores[q]["ndcg_cut_10"] * 10 + 1e-9) / 10) for q in qrels}
    assert any(seen[q] != pytest.approx(exact[q]) for q in qrels)   # the coarsening did something here
