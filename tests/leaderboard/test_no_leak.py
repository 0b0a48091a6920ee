"""THE no-leak test: a platform with a closed SciFact slice behind the real accounts front door
(--auth tokens), every RPC of every service in the orchestrator's process (Orchestrator,
Leaderboard, Accounts) called over gRPC as a team with its token, and the jobs' results files and
the service's log under the state dir: no response, file, error or log line names a pair of the
hidden qrels."""

from __future__ import annotations

import re

import grpc
from google.protobuf import json_format

from irforge.accounts.identity import acting_as
from irforge.common.grpc_server import open_channel
from irforge.orchestrator.spec import JobSpec
from irforge.v1 import (accounts_pb2, accounts_pb2_grpc, leaderboard_pb2, leaderboard_pb2_grpc, orchestrator_pb2,
                        orchestrator_pb2_grpc)

from .conftest import OPERATOR_ID, hidden_qrels, wait_done

SERVICES = {"Orchestrator": orchestrator_pb2, "Leaderboard": leaderboard_pb2, "Accounts": accounts_pb2}


class Team:
    """Calls every RPC as one caller (its bearer token), keeping every answer and error text, the
    run files it is sent, and which methods it called."""

    def __init__(self, address: str, token: str):
        self.metadata = (("authorization", f"Bearer {token}"),)
        channel = open_channel(address)
        self.jobs = orchestrator_pb2_grpc.OrchestratorStub(channel)
        self.board = leaderboard_pb2_grpc.LeaderboardStub(channel)
        self.accounts = accounts_pb2_grpc.AccountsStub(channel)
        self.texts: list[str] = []     # answers and errors: no line may name a judged pair
        self.runs: list[str] = []      # run files (a ranking names pairs): no line may be a qrels line
        self.codes: list[grpc.StatusCode] = []
        self.called: set[str] = set()

    def call(self, stub_method, request, streaming=False):
        name = stub_method._method
        self.called.add((name.decode() if isinstance(name, bytes) else name).rsplit("/", 1)[-1])
        try:
            answer = list(stub_method(request, metadata=self.metadata)) if streaming else stub_method(request, metadata=self.metadata)
        except grpc.RpcError as error:
            self.codes.append(error.code())
            self.texts.append(error.details())
            return None
        for message in answer if streaming else [answer]:
            self.texts.append(json_format.MessageToJson(message))
        return answer


def qrels_lines(qrels) -> set[str]:
    """Each judgement as a line in the layouts a qrels file is written in (BEIR TSV, TREC)."""
    forms = set()
    for query, documents in qrels.items():
        for doc, relevance in documents.items():
            forms |= {f"{query} {doc} {relevance}", f"{query} 0 {doc} {relevance}", f"{query} Q0 {doc} {relevance}"}
    return forms


def names_a_pair(text: str, qrels) -> list[str]:
    found = []
    for line in text.splitlines():
        tokens = set(re.findall(r"[A-Za-z0-9_.\-]+", line))
        found += [f"{q} {d}" for q in tokens & qrels.keys() for d in tokens & qrels[q].keys()]
    return found


def test_no_route_returns_a_line_of_the_hidden_qrels(served, scifact_subset, tmp_path):
    orchestrator, leaderboard, address, log_file = served.orchestrator, served.leaderboard, served.address, served.log_file
    token = served.team_token
    qrels = hidden_qrels(scifact_subset)
    data_dir = leaderboard.registry.data_dir("scifact")
    judged_query, judged_doc = next((q, d) for q in sorted(qrels) for d in qrels[q])
    candidates = leaderboard.candidates("scifact").read_text()

    # An operator's job on the closed dataset failing with an error that names qrels pairs (a run
    # file repeating a judged pair): what a team must not read from the jobs it can list.
    quoting = tmp_path / "quoting.run"
    quoting.write_text(f"{judged_query} Q0 {judged_doc} 1 2.0 x\n{judged_query} Q0 {judged_doc} 2 1.0 x\n")
    with acting_as(OPERATOR_ID):
        failing = orchestrator.submit(JobSpec.of(dataset=str(data_dir), runs=(str(quoting),)))
    assert judged_doc in wait_done(orchestrator, failing).error   # it does name the pair, for the operator

    team = Team(address, token)
    S = leaderboard_pb2
    team.call(team.board.ListDatasets, S.ListDatasetsRequest())
    got = team.call(team.board.GetCandidates, S.CandidatesRequest(dataset="scifact"), streaming=True)
    team.runs.append(b"".join(chunk.data for chunk in got).decode())
    team.texts.pop()   # the candidates' chunks are a run (checked as one below), not a message
    team.call(team.board.RegisterDataset, S.RegisterDatasetRequest(name="mine", source=str(scifact_subset)))
    submit = lambda kind, data, category="retrieval", system="s": team.call(  # noqa: E731
        team.board.Submit, S.SubmitRequest(dataset="scifact", system=system, category=category, kind=kind, data=data))
    good = submit("run", candidates.encode(), system="bm25")
    submit("run", quoting.read_bytes(), system="repeats")                         # refused, quoting the pair
    submit("run", (candidates + f"{judged_query} Q0 nope 1 9 x\n").encode(), category="reranking")
    submit("config", b"holes: {depth: 5}\n")
    submit("endpoint", b"kind: search-http\nurl: http://127.0.0.1:9/search\nmax_retries: 0\n", system="down")
    submit("run", b"", system="empty")
    # Straight to the orchestrator: the registered folder, its qrels as a run, hole filling.
    for pipeline in ({"dataset": str(data_dir)}, {"dataset": str(scifact_subset), "given": {"runs": [str(data_dir / "qrels" / "test.tsv")]}},
                     {"dataset": str(data_dir), "holes": {"depth": 5}}):
        spec = orchestrator_pb2.JobSpec()
        spec.pipeline.update(pipeline)
        team.call(team.jobs.SubmitJob, spec)
    assert good is not None
    wait_done(orchestrator, good.job_id)
    for submission in team.call(team.board.ListSubmissions, S.ListSubmissionsRequest()).submissions:
        if submission.job_id:
            wait_done(orchestrator, submission.job_id)
        team.call(team.board.GetSubmission, S.SubmissionRef(submission_id=submission.submission_id))
    team.call(team.board.GetBoard, S.BoardRequest())
    team.call(team.board.GetBoard, S.BoardRequest(baseline="nobody/nothing"))

    O = orchestrator_pb2
    for job in team.call(team.jobs.ListJobs, O.ListJobsRequest()).jobs:
        ref = O.JobRef(job_id=job.job_id)
        team.call(team.jobs.GetJob, ref)
        team.call(team.jobs.WatchJob, O.WatchJobRequest(job_id=job.job_id), streaming=True)
        team.call(team.jobs.CancelJob, ref)
        files = team.call(team.jobs.GetResults, ref, streaming=True) or []
        texts = team.texts[:-1] if files else team.texts
        if files:
            team.texts = texts
            by_name: dict[str, bytes] = {}
            for chunk in files:
                by_name[chunk.name] = by_name.get(chunk.name, b"") + chunk.data
            assert "qrels.judged.tsv" not in by_name
            assert '"per_query"' not in by_name["results.json"].decode()   # withheld: aggregates only
            team.texts.append(by_name.pop("results.json").decode())
            team.runs += [data.decode() for data in by_name.values()]
    team.call(team.jobs.GetJob, O.JobRef(job_id=failing))   # the operator's: NOT_FOUND, as a missing id
    A = accounts_pb2
    team.call(team.accounts.Whoami, A.WhoamiRequest())
    for method, request in (("CreateTeam", A.CreateTeamRequest(name="team-c")), ("IssueToken", A.TeamRef(name="team-a")),
                            ("RevokeToken", A.RevokeTokenRequest(team="team-a")), ("ListTeams", A.ListTeamsRequest()),
                            ("SetTeamLimit", A.SetTeamLimitRequest(name="team-a", daily_submission_limit=100)),
                            ("MapCertificate", A.MapCertificateRequest(common_name="x", team="team-a")),
                            ("AuditLog", A.AuditLogRequest())):
        team.call(getattr(team.accounts, method), request)
    every = {f"{service}.{method.name}" for service, module in SERVICES.items()
             for method in module.DESCRIPTOR.services_by_name[service].methods}
    assert {m.split(".")[1] for m in every} <= team.called, sorted({m.split(".")[1] for m in every} - team.called)

    # What the calls did: every refusal answered with its status, the closed pair never.
    assert team.codes.count(grpc.StatusCode.PERMISSION_DENIED) >= 8   # RegisterDataset, the Accounts operator calls
    assert grpc.StatusCode.NOT_FOUND in team.codes
    assert team.codes.count(grpc.StatusCode.INVALID_ARGUMENT) >= 7
    assert any("withheld" in text for text in team.texts)   # the repeated pair's refusal and the job's error
    leaks = [(pair, text[:200]) for text in team.texts for pair in names_a_pair(text, qrels)]
    assert not leaks, leaks
    forms = qrels_lines(qrels)
    assert not [line for run in team.runs for line in run.splitlines() if " ".join(line.split()) in forms]
    audit = "\n".join(str(row) for row in leaderboard_audit(orchestrator.state_dir))
    assert "leaderboard.submit" in audit and not names_a_pair(audit, qrels)
    log = log_file.read_text()
    assert f"job {failing}" in log and "FAILED" in log
    assert not names_a_pair(log, qrels)


def leaderboard_audit(state_dir):
    from irforge.accounts.store import STATE_FILE, AccountsStore

    store = AccountsStore(state_dir / STATE_FILE)
    try:
        return store.audit(limit=10_000)
    finally:
        store.close()


def test_an_audit_row_quoting_a_hidden_pair_is_kept_without_it(served, scifact_subset):
    """The audit log is read by operators only, and still holds no hidden qrels line: a row whose
    detail quotes a job's error (a refused results call on a failed job) is scrubbed as logs are."""
    from irforge.accounts import audit

    qrels = hidden_qrels(scifact_subset)
    query, doc = next((q, d) for q in sorted(qrels) for d in qrels[q])
    with acting_as(OPERATOR_ID):
        audit.record("results", "0123456789ab", audit.REFUSED, f"JobFailed: document {doc!r} appears twice for query {query!r}")
    rows = "\n".join(str(row) for row in served.accounts.audit(limit=10))
    assert "0123456789ab" in rows and "withheld" in rows     # the row is kept, its quoting line is not
    assert not names_a_pair(rows, qrels), rows
