"""gRPC TLS (irforge's services, the CLI, the orchestrator's calls, the team SDK, team gRPC
endpoints) and HTTPS team endpoints with the spec's CA bundle, against real servers on 127.0.0.1
with a self-signed CA and certificates made here (subjectAltName IP:127.0.0.1)."""

from __future__ import annotations

import importlib.util
import json
import re
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from irforge.common.grpc_errors import ServiceUnavailable
from irforge.common.grpc_server import start_server, wait_until_serving
from irforge.common.tls import ClientTls, ServerTls
from irforge.corpus import server as corpus_server
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.data import BeirDataset
from irforge.endpoints.errors import EndpointError
from irforge.endpoints.search import GrpcSearchRetriever, HttpSearchRetriever
from irforge.endpoints.spec import EndpointSpec
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.client import RemoteEvaluator
from irforge.evaluator.core import Evaluator
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState
from irforge.pipeline.retrievers.base import CorpusTracker

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "clients" / "python"))
from irforge_client import EvaluatorClient, Tls, serve_retriever  # noqa: E402

from ..certificates import certificate, new_key, write_pem  # noqa: E402

QRELS = {"q1": {"d1": 1}}
RUN = {"q1": {"d1": 2.0, "d2": 1.0}}


# -- a CA and certificates, made here -------------------------------------------------------------

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """Paths: ca (a self-signed CA), server cert/key for 127.0.0.1, client cert/key, and other_ca
    (a CA that signed none of them)."""
    folder = tmp_path_factory.mktemp("pki")
    ca_key, other_key, server_key, client_key = (new_key() for _ in range(4))
    ca = certificate("irforge test CA", ca_key, "irforge test CA", ca_key, ca=True)
    other = certificate("another CA", other_key, "another CA", other_key, ca=True)
    return {
        "ca": write_pem(folder / "ca.pem", ca), "other_ca": write_pem(folder / "other-ca.pem", other),
        "server_cert": write_pem(folder / "server.pem", certificate("127.0.0.1", server_key, "irforge test CA", ca_key, server=True)),
        "server_key": write_pem(folder / "server.key", key=server_key),
        "client_cert": write_pem(folder / "client.pem", certificate("irforge client", client_key, "irforge test CA", ca_key)),
        "client_key": write_pem(folder / "client.key", key=client_key),
    }


@pytest.fixture()
def client_env(monkeypatch):
    """No TLS client settings from the environment, unless a test sets them."""
    for name in ("IRFORGE_TLS_CA", "IRFORGE_TLS_CLIENT_CERT", "IRFORGE_TLS_CLIENT_KEY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _evaluate(address: str) -> dict:
    evaluator = RemoteEvaluator(address, timeout=10)
    try:
        return evaluator.evaluate(QRELS, RUN, ["map"]).aggregate
    finally:
        evaluator.close()


# -- irforge's services ---------------------------------------------------------------------------

def test_a_tls_service_answers_clients_that_trust_its_ca_and_refuses_others(pki, client_env, tmp_path):
    command = [sys.executable, "-m", "irforge.cli.main", "service", "evaluator", "--port", "0",
               "--tls-cert", str(pki["server_cert"]), "--tls-key", str(pki["server_key"])]
    service = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = service.stdout.readline()
        assert "(TLS)" in line, line
        address = "127.0.0.1:" + re.search(r"listening on \S+:(\d+)", line).group(1)
        # Without the CA (plaintext, as before): refused, with a message that says what to set.
        with pytest.raises(ServiceUnavailable, match="IRFORGE_TLS_CA"):
            _evaluate(address)
        # Trusting another CA: the server's certificate does not verify.
        client_env.setenv("IRFORGE_TLS_CA", str(pki["other_ca"]))
        with pytest.raises(ServiceUnavailable, match="(?i)certificate|handshake|ssl"):
            _evaluate(address)
        client_env.setenv("IRFORGE_TLS_CA", str(pki["ca"]))
        assert _evaluate(address)["map"] == pytest.approx(1.0)
        wait_until_serving(address)
        # The team SDK: explicitly, and from the same variable.
        assert EvaluatorClient(address, tls=Tls(ca=pki["ca"])).evaluate(QRELS, RUN, ["map"]).aggregate["map"] == 1.0
        assert EvaluatorClient(address).evaluate(QRELS, RUN, ["map"]).aggregate["map"] == 1.0
    finally:
        service.terminate()
        service.wait(timeout=30)


def test_mutual_tls_requires_a_clientcertificate(pki, client_env):
    tls = ServerTls(pki["server_cert"], pki["server_key"], client_ca=pki["ca"])
    running = start_server([evaluator_server.binding(Evaluator())], port=0, tls=tls)
    address = f"127.0.0.1:{running.port}"
    try:
        client_env.setenv("IRFORGE_TLS_CA", str(pki["ca"]))
        with pytest.raises(ServiceUnavailable):
            _evaluate(address)          # trusts the server, presents nothing
        client_env.setenv("IRFORGE_TLS_CLIENT_CERT", str(pki["client_cert"]))
        client_env.setenv("IRFORGE_TLS_CLIENT_KEY", str(pki["client_key"]))
        assert _evaluate(address)["map"] == pytest.approx(1.0)
        sdk = Tls(ca=pki["ca"], cert=pki["client_cert"], key=pki["client_key"])
        assert EvaluatorClient(address, tls=sdk).evaluate(QRELS, RUN, ["map"]).aggregate["map"] == 1.0
    finally:
        running.stop(grace=0)


def test_half_a_tls_setting_is_refused_clearly(pki, client_env):
    from irforge.common.tls import TlsConfigError

    with pytest.raises(TlsConfigError, match="--tls-cert and --tls-key"):
        ServerTls.from_settings(pki["server_cert"], None)
    with pytest.raises(TlsConfigError, match="needs its key"):
        ClientTls.from_settings(pki["ca"], pki["client_cert"], None)
    out = subprocess.run([sys.executable, "-m", "irforge.cli.main", "service", "evaluator", "--port", "0",
                          "--tls-cert", str(pki["server_cert"])], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--tls-key" in out.stderr


def test_the_orchestrator_and_the_cli_over_tls(pki, client_env, scifact_tiny, tmp_path, capsys):
    """Services serving TLS only; the orchestrator calls them trusting the CA (IRFORGE_TLS_CA), and
    serves TLS itself to the CLI, which is given the CA by flag."""
    from irforge.cli.main import main
    from irforge.orchestrator import server as orchestrator_server

    tls = ServerTls(pki["server_cert"], pki["server_key"])
    services = start_server([corpus_server.binding(CorpusService(EmbeddedBackend(tmp_path / "indexes"))),
                             evaluator_server.binding(Evaluator())], port=0, tls=tls)
    address = f"127.0.0.1:{services.port}"
    client_env.setenv("IRFORGE_TLS_CA", str(pki["ca"]))
    orchestrator = Orchestrator(tmp_path / "state", ServiceAddresses(corpus=address, evaluator=address, call_timeout_s=30),
                                cache_path=tmp_path / "cache.sqlite3", progress_interval_s=0.0).start()
    front = start_server([orchestrator_server.binding(orchestrator)], port=0, tls=tls)
    try:
        job_id = orchestrator.submit(JobSpec.of(dataset=str(scifact_tiny)))
        deadline = time.monotonic() + 120
        list(orchestrator.watch(job_id, is_active=lambda: time.monotonic() < deadline))
        record = orchestrator.get(job_id)
        assert record.state == JobState.SUCCEEDED, record.error
        client_env.delenv("IRFORGE_TLS_CA")
        capsys.readouterr()
        assert main(["jobs", "--server", f"127.0.0.1:{front.port}", "--tls-ca", str(pki["ca"])]) == 0
        assert job_id in capsys.readouterr().out
    finally:
        front.stop(grace=0)
        orchestrator.shutdown()
        services.stop(grace=0)


# -- a team's endpoints ---------------------------------------------------------------------------

def _search_servers():
    spec = importlib.util.spec_from_file_location("irforge_tls_search_servers", ROOT / "tests" / "endpoints" / "search_servers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def team_search(scifact_tiny, tmp_path):
    servers = _search_servers()
    search = servers.Bm25Search(scifact_tiny, tmp_path / "team-index")
    yield servers, search
    search.close()


def _retrieve(retriever, dataset_dir: Path) -> dict:
    dataset = BeirDataset.open(dataset_dir)
    try:
        retriever.prepare(dataset, dataset.corpus_fingerprint(), CorpusTracker(judged=set()))
        return retriever.retrieve(list(dataset.queries()), 10)
    finally:
        retriever.close()


def _spec(folder: Path, **fields) -> EndpointSpec:
    path = folder / "endpoint.yaml"
    path.write_text(yaml.safe_dump({"max_retries": 0, **fields}))
    return EndpointSpec.from_file(path)


def test_an_https_team_endpoint_is_reached_with_the_specs_ca_bundle(pki, team_search, scifact_tiny, tmp_path):
    servers, search = team_search
    server = servers.HttpSearchServer(search)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki["server_cert"], pki["server_key"])
    server._server.socket = context.wrap_socket(server._server.socket, server_side=True)
    url = server.url.replace("http://", "https://")
    try:
        # ca_bundle relative to the spec's folder, as a team writes it.
        (tmp_path / "certs").mkdir()
        (tmp_path / "certs" / "team-ca.pem").write_bytes(pki["ca"].read_bytes())
        run = _retrieve(HttpSearchRetriever(_spec(tmp_path, kind="search-http", url=url, ca_bundle="certs/team-ca.pem")),
                        scifact_tiny)
        assert len(run) == 3 and all(run.values())
        with pytest.raises(EndpointError, match="(?i)certificate verify failed"):
            _retrieve(HttpSearchRetriever(_spec(tmp_path, kind="search-http", url=url)), scifact_tiny)
    finally:
        server.stop()


def test_a_grpc_team_endpoint_over_tls_served_by_the_sdk(pki, team_search, scifact_tiny, tmp_path):
    _, search = team_search

    def answer(query_id, query, k):
        return search.hits(query_id, query, k, None)

    team = serve_retriever(answer, tls_cert=pki["server_cert"], tls_key=pki["server_key"], client_ca=pki["ca"])
    url = f"127.0.0.1:{team.port}"
    try:
        run = _retrieve(GrpcSearchRetriever(_spec(tmp_path, kind="search-grpc", url=url, ca_bundle=str(pki["ca"]),
                                                  client_cert=str(pki["client_cert"]), client_key=str(pki["client_key"]))),
                        scifact_tiny)
        assert len(run) == 3 and all(run.values())
        # Plaintext to a TLS endpoint, then TLS without a client certificate: refused, saying what to set.
        with pytest.raises(EndpointError, match="tls: true"):
            _retrieve(GrpcSearchRetriever(_spec(tmp_path, kind="search-grpc", url=url)), scifact_tiny)
        with pytest.raises(EndpointError, match="client_cert"):
            _retrieve(GrpcSearchRetriever(_spec(tmp_path, kind="search-grpc", url=url, ca_bundle=str(pki["ca"]))), scifact_tiny)
    finally:
        team.stop()


def test_an_https_judge_endpoint_with_the_specs_ca_bundle(pki, tmp_path):
    """The LLM judge's openai client verifies the chat server against the judge spec's ca_bundle."""
    from irforge.judge.backends.llm import OpenAIChatJudge
    from irforge.judge.base import JudgePair
    from irforge.judge.spec import JudgeSpec

    scripted = importlib.util.spec_from_file_location("irforge_tls_scripted_chat", ROOT / "tests" / "judge" / "scripted_chat.py")
    module = importlib.util.module_from_spec(scripted)
    sys.modules[scripted.name] = module
    scripted.loader.exec_module(module)
    chat = module.ScriptedChat().start()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki["server_cert"], pki["server_key"])
    chat._server.socket = context.wrap_socket(chat._server.socket, server_side=True)
    url = chat.url.replace("http://", "https://")
    try:
        chat.script("2")
        spec = {"kind": "openai-chat", "url": url, "model": "m", "max_retries": 0, "ca_bundle": str(pki["ca"])}
        judge = OpenAIChatJudge(JudgeSpec.from_dict(spec))
        [judgement] = judge.judge([JudgePair("q1", "a query", "d1", "a document")])
        assert judgement.label == 2, judgement
        judge.close()
    finally:
        chat.stop()
    assert json.dumps(JudgeSpec.from_dict(spec).public())  # the record names the CA file, nothing secret
