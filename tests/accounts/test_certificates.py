"""Mutual TLS as a team's identity: the orchestrator's server verifies client certificates
against its client CA, and a certificate whose subject CN an operator mapped to a team acts as
that team (no token needed); an unmapped one is refused. In this process: the same caller check
and Accounts service `irforge service orchestrator` installs (accounts.front_door)."""

from __future__ import annotations

from contextlib import ExitStack

import grpc
import pytest

from irforge.accounts.front_door import open_front_door
from irforge.common.grpc_server import open_channel, start_server
from irforge.common.tls import ClientTls, ServerTls
from irforge.orchestrator import server as orchestrator_server
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.spec import JobSpec
from irforge.v1 import accounts_pb2, accounts_pb2_grpc, orchestrator_pb2, orchestrator_pb2_grpc


@pytest.fixture(scope="module")
def platform(tmp_path_factory, job_services, pki):
    """(address of a mutual-TLS orchestrator with --auth tokens, address of a plaintext one with
    --auth none, the operator's token), over one state folder."""
    state = tmp_path_factory.mktemp("mtls") / "state"
    with ExitStack() as stack:
        door = open_front_door(state, "tokens", stack)
        services = ServiceAddresses(corpus=job_services, evaluator=job_services)
        orchestrator = Orchestrator(state, services, cache_path=state.parent / "cache.sqlite3", progress_interval_s=0.0).start()
        stack.callback(orchestrator.shutdown)
        bindings = [orchestrator_server.binding(orchestrator), door.binding]
        tls = ServerTls(pki["server_cert"], pki["server_key"], client_ca=pki["ca"])
        secured = start_server(bindings, port=0, tls=tls, interceptors=(door.check,))
        stack.callback(secured.stop, 0)
        from irforge.accounts.front_door import CallerCheck

        open_door = start_server(bindings, port=0, interceptors=(CallerCheck("none", door.store),))
        stack.callback(open_door.stop, 0)
        yield f"127.0.0.1:{secured.port}", f"127.0.0.1:{open_door.port}", (state / "operator.token").read_text().strip()


def _stubs(address: str, pki, common_name: str, token: str | None = None):
    tls = ClientTls(pki["ca"], pki[f"{common_name}_cert"], pki[f"{common_name}_key"])
    channel = open_channel(address, tls=tls, token=token)
    return channel, accounts_pb2_grpc.AccountsStub(channel), orchestrator_pb2_grpc.OrchestratorStub(channel)


def _whoami(stub) -> tuple[str, str, str]:
    caller = stub.Whoami(accounts_pb2.WhoamiRequest(), timeout=10)
    return caller.name, caller.role, caller.via


def test_a_mapped_certificate_acts_as_its_team(platform, pki, scifact_tiny):
    address, _, operator = platform
    channel, accounts, orchestrator = _stubs(address, pki, "team-a-ci")
    with channel:
        with pytest.raises(grpc.RpcError) as unmapped:   # verified, but no team yet
            _whoami(accounts)
        assert unmapped.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "'team-a-ci' is not mapped to a team" in unmapped.value.details()
        # The operator (a token wins over the certificate it also presents) maps the name.
        admin_channel, admin, admin_jobs = _stubs(address, pki, "team-a-ci", token=operator)
        with admin_channel:
            assert _whoami(admin) == ("admin", "operator", "token")
            admin.CreateTeam(accounts_pb2.CreateTeamRequest(name="team-a"), timeout=10)
            team = admin.MapCertificate(accounts_pb2.MapCertificateRequest(team="team-a", common_name="team-a-ci"), timeout=10)
            assert list(team.certificate_names) == ["team-a-ci"]
            operators_job = admin_jobs.SubmitJob(JobSpec.of(dataset=str(scifact_tiny)).to_proto(), timeout=30).job_id
        assert _whoami(accounts) == ("team-a", "team", "mtls")
        job_id = orchestrator.SubmitJob(JobSpec.of(dataset=str(scifact_tiny)).to_proto(), timeout=30).job_id
        listed = orchestrator.ListJobs(orchestrator_pb2.ListJobsRequest(), timeout=10).jobs
        assert [(job.job_id, job.owner) for job in listed] == [(job_id, "team:team-a")]
        with pytest.raises(grpc.RpcError) as others:
            orchestrator.GetJob(orchestrator_pb2.JobRef(job_id=operators_job), timeout=10)
        assert others.value.code() == grpc.StatusCode.NOT_FOUND


def test_an_unmapped_certificate_is_refused(platform, pki):
    address, _, _ = platform
    channel, accounts, orchestrator = _stubs(address, pki, "stranger")
    with channel:
        for call in (lambda: _whoami(accounts), lambda: orchestrator.ListJobs(orchestrator_pb2.ListJobsRequest(), timeout=10)):
            with pytest.raises(grpc.RpcError) as refused:
                call()
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert "'stranger' is not mapped" in refused.value.details()


def test_auth_none_takes_every_caller_for_the_local_operator(platform):
    _, open_address, _ = platform
    with open_channel(open_address, tls=None) as channel:
        assert _whoami(accounts_pb2_grpc.AccountsStub(channel)) == ("local", "operator", "local")
        owners = {job.owner for job in orchestrator_pb2_grpc.OrchestratorStub(channel).ListJobs(
            orchestrator_pb2.ListJobsRequest(), timeout=10).jobs}
        assert owners == {"team:team-a", "operator:admin"}   # an operator sees every job
