"""Two teams and an operator against a real `irforge service orchestrator --auth tokens` process
on 127.0.0.1: who may call, who sees which job, what the audit log holds, and that no token
reaches a log or a state file."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import uuid
from pathlib import Path

import grpc
import pytest

from irforge.accounts.client import AccountsClient
from irforge.accounts.identity import Forbidden, Unauthenticated
from irforge.common.grpc_server import open_channel, wait_until_serving
from irforge.orchestrator.client import OrchestratorClient
from irforge.orchestrator.errors import JobNotFound
from irforge.orchestrator.spec import JobSpec
from irforge.v1 import accounts_pb2, accounts_pb2_grpc, orchestrator_pb2, orchestrator_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def platform(tmp_path_factory, job_services, orchestrator_process):
    process = orchestrator_process(tmp_path_factory.mktemp("platform") / "state", job_services, "--auth", "tokens")
    yield process
    process.stop()


@pytest.fixture(scope="module")
def tokens(platform) -> dict[str, str]:
    """Every token this module handles, by holder: what must never reach a log or a file."""
    operator = (platform.state_dir / "operator.token").read_text().strip()
    with AccountsClient(platform.address, token=operator) as admin:
        return {"admin": operator, "team-a": admin.create_team("team-a").token,
                "team-b": admin.create_team("team-b", daily_submission_limit=10).token}


@pytest.fixture(scope="module")
def job_of_a(platform, tokens, scifact_tiny) -> str:
    with OrchestratorClient(platform.address, token=tokens["team-a"]) as team_a:
        job_id = team_a.submit(JobSpec.of(dataset=str(scifact_tiny), name="team a's"))
        assert list(team_a.watch(job_id))[-1].state == "SUCCEEDED"
    return job_id


def _raw_calls(stub, job_id: str) -> dict[str, tuple[grpc.StatusCode, str]]:
    """Each Orchestrator call about `job_id`: its status code and details (the id replaced by ID)."""
    calls = {
        "GetJob": lambda: stub.GetJob(orchestrator_pb2.JobRef(job_id=job_id), timeout=10),
        "CancelJob": lambda: stub.CancelJob(orchestrator_pb2.JobRef(job_id=job_id), timeout=10),
        "WatchJob": lambda: list(stub.WatchJob(orchestrator_pb2.WatchJobRequest(job_id=job_id), timeout=10)),
        "GetResults": lambda: list(stub.GetResults(orchestrator_pb2.JobRef(job_id=job_id), timeout=10)),
    }
    answers = {}
    for name, call in calls.items():
        try:
            call()
            answers[name] = (grpc.StatusCode.OK, "")
        except grpc.RpcError as error:
            answers[name] = (error.code(), error.details().replace(job_id, "ID"))
    return answers


def test_the_first_operator_token_is_written_for_its_owner_alone(platform, tokens):
    path = platform.state_dir / "operator.token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f"operator token written to {path}" in platform.log.read_text()
    with AccountsClient(platform.address, token=tokens["admin"]) as admin:
        caller = admin.whoami()
    assert (caller.name, caller.role, caller.via) == ("admin", "operator", "token")


def test_a_call_without_a_valid_token_is_unauthenticated(platform, tokens, job_of_a):
    wait_until_serving(platform.address, "irforge.v1.Orchestrator")   # health checks need no token (probes)
    for token in (None, "irf_" + "x" * 43, "not even a token"):
        with open_channel(platform.address, token=token) as channel:
            stub = orchestrator_pb2_grpc.OrchestratorStub(channel)
            answers = _raw_calls(stub, job_of_a)
            with pytest.raises(grpc.RpcError) as listed:
                stub.ListJobs(orchestrator_pb2.ListJobsRequest(), timeout=10)
            with pytest.raises(grpc.RpcError) as submitted:
                stub.SubmitJob(JobSpec.of(dataset="/anything").to_proto(), timeout=10)
            with pytest.raises(grpc.RpcError) as asked:
                accounts_pb2_grpc.AccountsStub(channel).Whoami(accounts_pb2.WhoamiRequest(), timeout=10)
        codes = {code for code, _ in answers.values()} | {e.value.code() for e in (listed, submitted, asked)}
        assert codes == {grpc.StatusCode.UNAUTHENTICATED}, (token, answers)
    with AccountsClient(platform.address) as nobody, pytest.raises(Unauthenticated, match="IRFORGE_TOKEN"):
        nobody.whoami()


def test_a_revoked_token_is_refused_and_the_teams_other_token_still_works(platform, tokens):
    with AccountsClient(platform.address, token=tokens["admin"]) as admin:
        second = admin.issue_token("team-b")
        tokens["team-b second"] = second.token
        with AccountsClient(platform.address, token=second.token) as team_b:
            assert team_b.whoami().name == "team-b"
            assert admin.revoke("team-b", second.token_id) == [second.token_id]
            with pytest.raises(Unauthenticated, match="not valid"):
                team_b.whoami()
        assert second.token_id not in next(t for t in admin.teams() if t.name == "team-b").token_ids
    with AccountsClient(platform.address, token=tokens["team-b"]) as team_b:
        assert team_b.whoami().name == "team-b"


def test_another_teams_job_answers_exactly_as_a_missing_one(platform, tokens, job_of_a, tmp_path):
    missing = uuid.uuid4().hex[:12]     # the shape of a real job id
    with open_channel(platform.address, token=tokens["team-b"]) as channel:
        stub = orchestrator_pb2_grpc.OrchestratorStub(channel)
        of_a, of_nobody = _raw_calls(stub, job_of_a), _raw_calls(stub, missing)
    assert of_a == of_nobody
    assert {code for code, _ in of_a.values()} == {grpc.StatusCode.NOT_FOUND}
    assert of_a["GetJob"][1] == "JobNotFound: no job 'ID' (list jobs with `irforge jobs`)"
    with OrchestratorClient(platform.address, token=tokens["team-b"]) as team_b, pytest.raises(JobNotFound):
        team_b.results(job_of_a, tmp_path / "stolen")
    assert not (tmp_path / "stolen").exists()
    with OrchestratorClient(platform.address, token=tokens["team-a"]) as team_a:   # B's cancel did nothing
        assert team_a.get(job_of_a).state.value == "SUCCEEDED"
        assert sorted(p.name for p in team_a.results(job_of_a, tmp_path / "mine")) == ["results.json", "run.trec"]


def test_each_team_lists_its_own_jobs_and_the_operator_all(platform, tokens, job_of_a, scifact_tiny):
    with OrchestratorClient(platform.address, token=tokens["team-b"]) as team_b:
        job_of_b = team_b.submit(JobSpec.of(dataset=str(scifact_tiny), name="team b's"))
        assert [job.job_id for job in team_b.list()] == [job_of_b]
        list(team_b.watch(job_of_b))
    with OrchestratorClient(platform.address, token=tokens["team-a"]) as team_a:
        assert [job.job_id for job in team_a.list()] == [job_of_a]
    with OrchestratorClient(platform.address, token=tokens["admin"]) as admin:
        owners = {job.job_id: job.owner for job in admin.list()}
        assert owners == {job_of_a: "team:team-a", job_of_b: "team:team-b"}
        assert admin.get(job_of_a).state.value == "SUCCEEDED"


def test_the_sdk_sends_the_token_from_the_environment(platform, tokens, job_of_a, monkeypatch):
    sys.path.insert(0, str(ROOT / "clients" / "python"))
    try:
        from irforge_client import JobError, OrchestratorClient as SdkClient
    finally:
        sys.path.pop(0)
    monkeypatch.setenv("IRFORGE_TOKEN", tokens["team-b"])
    with SdkClient(platform.address) as team_b:
        assert job_of_a not in [job.job_id for job in team_b.list()]
        with pytest.raises(JobError) as error:
            team_b.get(job_of_a)
        assert error.value.code == grpc.StatusCode.NOT_FOUND
    with SdkClient(platform.address, token=tokens["team-a"]) as team_a:
        assert team_a.get(job_of_a).owner == "team:team-a"
    monkeypatch.delenv("IRFORGE_TOKEN")
    with SdkClient(platform.address) as nobody, pytest.raises(JobError) as error:
        nobody.list()
    assert error.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_the_command_line_reads_the_token_from_the_environment_only(platform, tokens, job_of_a, monkeypatch, capsys):
    from irforge.cli.main import main

    server = ["--server", platform.address]
    monkeypatch.delenv("IRFORGE_TOKEN", raising=False)
    assert main(["whoami", *server]) == 2
    assert "no credential" in capsys.readouterr().err
    monkeypatch.setenv("TEAM_B_TOKEN", tokens["team-b"])
    assert main(["whoami", *server, "--token-env", "TEAM_B_TOKEN"]) == 0
    assert capsys.readouterr().out == "team-b (team, via token)\n"
    assert main(["jobs", *server, "--token-env", "TEAM_B_TOKEN"]) == 0
    assert job_of_a not in capsys.readouterr().out
    assert main(["cancel", job_of_a, *server, "--token-env", "TEAM_B_TOKEN"]) == 2
    assert f"no job '{job_of_a}'" in capsys.readouterr().err
    assert main(["admin", "team", "list", *server, "--token-env", "TEAM_B_TOKEN"]) == 2
    assert "listing teams is for operators; you are team 'team-b'" in capsys.readouterr().err
    assert main(["whoami", *server, "--token-env", "UNSET_VARIABLE"]) == 2
    assert "UNSET_VARIABLE is not set" in capsys.readouterr().err
    monkeypatch.setenv("IRFORGE_TOKEN", tokens["admin"])
    assert main(["admin", "team", "add", "team-c", *server]) == 0
    printed = capsys.readouterr()
    tokens["team-c"] = printed.out.strip()
    assert tokens["team-c"] not in printed.err and "shown this once" in printed.err
    monkeypatch.setenv("IRFORGE_TOKEN", tokens["team-c"])
    assert main(["whoami", *server]) == 0 and capsys.readouterr().out == "team-c (team, via token)\n"


def test_the_operators_commands(platform, tokens, tmp_path, monkeypatch, capsys):
    from irforge.cli.main import main

    server = ["--server", platform.address]
    monkeypatch.setenv("IRFORGE_TOKEN", tokens["admin"])
    saved = tmp_path / "team-b.token"
    assert main(["admin", "team", "token", "team-b", "--save", str(saved), *server]) == 0
    assert capsys.readouterr().out == "" and stat.S_IMODE(saved.stat().st_mode) == 0o600
    tokens["team-b saved"] = saved.read_text().strip()
    token_id = hashlib.sha256(tokens["team-b saved"].encode()).hexdigest()[:12]
    assert main(["admin", "team", "token", "team-b", "--save", str(saved), *server]) == 2   # never overwritten
    assert "exists" in capsys.readouterr().err and saved.read_text().strip() == tokens["team-b saved"]
    assert main(["admin", "team", "revoke", "team-b", "--token-id", token_id, *server]) == 0
    assert capsys.readouterr().out == f"team team-b: revoked {token_id}\n"
    assert main(["admin", "team", "limit", "team-a", "20", *server]) == 0
    assert main(["admin", "team", "cert", "team-a", "team-a-ci.example.org", *server]) == 0
    assert main(["admin", "team", "list", *server]) == 0
    listed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "limit 20" in listed["team-a"] and "certificates team-a-ci.example.org" in listed["team-a"]
    assert "limit 10" in listed["team-b"] and token_id not in listed["team-b"]
    assert main(["admin", "audit", "--who", "admin", "--action", "team.limit", *server]) == 0
    assert "admin (operator, token)  team.limit team-a  ok  daily submission limit 20" in capsys.readouterr().out


def test_the_audit_log_names_who_did_what_and_how_it_ended(platform, tokens, job_of_a):
    with AccountsClient(platform.address, token=tokens["team-a"]) as team_a, pytest.raises(Forbidden):
        team_a.audit()
    with AccountsClient(platform.address, token=tokens["admin"]) as admin:
        rows = {(r.who, r.role, r.via, r.action, r.target, r.outcome) for r in admin.audit(limit=500)}
        refused = [r for r in admin.audit(who="team-b", action="results") if r.target == job_of_a]
    expected = {
        ("admin", "operator", "token", "team.add", "team-a", "ok"),
        ("admin", "operator", "token", "team.add", "team-b", "ok"),
        ("admin", "operator", "token", "token.revoke", "team-b", "ok"),
        ("team-a", "team", "token", "submit", job_of_a, "ok"),
        ("team-a", "team", "token", "results", job_of_a, "ok"),
        ("team-b", "team", "token", "results", job_of_a, "refused"),
        ("team-b", "team", "token", "cancel", job_of_a, "refused"),
    }
    assert expected <= rows, expected - rows
    assert refused and refused[0].detail.startswith("JobNotFound: no job")


def test_no_token_reaches_a_log_or_a_state_file(platform, tokens):
    """Last: every token this module used, in the orchestrator's log and every file of its state
    (the accounts database holds each token's SHA-256 only)."""
    assert len(tokens) >= 5
    files = [platform.log, *(p for p in platform.state_dir.rglob("*") if p.is_file() and p.name != "operator.token")]
    contents = b"".join(path.read_bytes() for path in files)
    assert b"UNAUTHENTICATED" in platform.log.read_bytes()   # the log did record the refused calls
    for holder, token in tokens.items():
        assert token.encode() not in contents, f"{holder}'s token found in a log or state file"
        assert token[4:24].encode() not in contents, f"part of {holder}'s token found"
    accounts = b"".join(p.read_bytes() for p in platform.state_dir.glob("accounts.sqlite3*"))
    for holder in ("team-a", "team-b", "admin"):
        assert hashlib.sha256(tokens[holder].encode()).hexdigest().encode() in accounts
    assert stat.S_IMODE(os.stat(platform.state_dir / "accounts.sqlite3").st_mode) == 0o600
