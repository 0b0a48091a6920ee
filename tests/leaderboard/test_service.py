"""The Leaderboard service over gRPC behind the accounts front door, and the CLI on it: the limit
as RESOURCE_EXHAUSTED (a team's own limit from the accounts store) and exit status 2, the
candidates download, registration and the board."""

from __future__ import annotations

import hashlib
import json

import grpc
import pytest

from irforge.cli.main import main
from irforge.leaderboard.client import LeaderboardClient
from irforge.leaderboard.errors import LeaderboardError, LimitReached
from irforge.v1 import leaderboard_pb2, leaderboard_pb2_grpc

from .conftest import wait_done


def test_a_teams_own_limit_answers_resource_exhausted_and_the_cli_exits_2(served, tmp_path, monkeypatch, capsys):
    served.accounts.set_limit("team-a", 2)
    run = tmp_path / "run.trec"
    run.write_bytes(served.leaderboard.candidates("scifact").read_bytes())
    with LeaderboardClient(served.address, token=served.team_token) as client:
        client.submit(dataset="scifact", system="bm25", category="retrieval", kind="run", data=run.read_bytes())
        with pytest.raises(LeaderboardError, match="sets fill_holes"):   # refused, and counted
            client.submit(dataset="scifact", system="holes", category="retrieval", kind="config", data=b"holes: {depth: 3}")
        with pytest.raises(LimitReached, match="used 2 of its 2 submissions"):
            client.submit(dataset="scifact", system="third", category="retrieval", kind="run", data=run.read_bytes())
    stub = leaderboard_pb2_grpc.LeaderboardStub(grpc.insecure_channel(served.address))
    with pytest.raises(grpc.RpcError) as raw:
        stub.Submit(leaderboard_pb2.SubmitRequest(dataset="scifact", system="x", category="retrieval", kind="run", data=b"x"),
                    metadata=(("authorization", f"Bearer {served.team_token}"),))
    assert raw.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    monkeypatch.setenv("IRFORGE_TOKEN", served.team_token)
    code = main(["leaderboard", "submit", "--server", served.address, "--dataset", "scifact", "--system", "cli",
                 "--run", str(run)])
    assert code == 2
    assert "irforge leaderboard: error: team 'team-a' has used 2 of its 2 submissions" in capsys.readouterr().err


def test_the_cli_submits_lists_and_shows_the_board(served, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IRFORGE_TOKEN", served.team_token)
    flags = ["--server", served.address]
    assert main(["leaderboard", "candidates", "scifact", "--out", str(tmp_path / "c.trec"), *flags]) == 0
    candidates = (tmp_path / "c.trec").read_bytes()
    assert candidates == served.leaderboard.candidates("scifact").read_bytes()
    with LeaderboardClient(served.address, token=served.team_token) as client:
        [dataset] = client.datasets()
    assert dataset.candidates_sha256 == hashlib.sha256(candidates).hexdigest()
    assert (dataset.name, dataset.main_metric, dataset.closed, dataset.per_query) == ("scifact", "nDCG@10", True, "withheld")
    capsys.readouterr()
    assert main(["leaderboard", "submit", "--dataset", "scifact", "--system", "bm25", "--category", "reranking",
                 "--run", str(tmp_path / "c.trec"), *flags]) == 0
    job_id = capsys.readouterr().out.strip()
    wait_done(served.orchestrator, job_id)
    assert main(["leaderboard", "submissions", "--json", *flags]) == 0
    [listed] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (listed["job_id"], listed["state"], listed["team"]) == (job_id, "SUCCEEDED", "team-a")
    assert listed["fingerprint"] == hashlib.sha256(candidates).hexdigest() and "per_query" not in listed
    assert main(["leaderboard", "show", "--json", *flags]) == 0
    board = json.loads(capsys.readouterr().out)
    [row] = board["rows"]
    assert (row["team"], row["system"], row["category"]) == ("team-a", "bm25", "reranking")
    assert row["scores"]["scifact"]["value"] == pytest.approx(listed["metrics"]["nDCG@10"])
    assert main(["leaderboard", "show", "--markdown", *flags]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("| rank |") and "scifact nDCG@10" in table[0]
    assert f"{listed['metrics']['nDCG@10']:.4f}" in next(line for line in table if "| bm25 |" in line)


def test_registering_over_grpc_is_an_operators(served, scifact_tiny, monkeypatch, capsys):
    flags = ["--server", served.address]
    monkeypatch.setenv("IRFORGE_TOKEN", served.team_token)
    assert main(["admin", "dataset", "register", "tiny", "--from", str(scifact_tiny), *flags]) == 2
    assert "operator" in capsys.readouterr().err
    monkeypatch.setenv("IRFORGE_TOKEN", served.operator_token)
    assert main(["admin", "dataset", "register", "tiny", "--from", str(scifact_tiny), "--task", "long-doc", "--open",
                 *flags]) == 0
    assert "registered tiny: 3 queries" in capsys.readouterr().out
    assert main(["leaderboard", "datasets", *flags]) == 0
    assert "tiny  test  long-doc  R@10  en  open  per-query shown" in capsys.readouterr().out
