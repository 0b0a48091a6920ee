"""The services and their callers under hostile input (issue 24): an error raised while a client
streams its requests arrives as itself, not as gRPC's "Exception iterating requests!"; a 100 KB id
quoted in an error still lets the error through the status trailer; every number and text a
user gives a job or a listing is bounded before protobuf or SQLite sees it. Real servers on
127.0.0.1, real files."""

from __future__ import annotations

import json

import grpc
import pytest

from irforge.cli.main import main
from irforge.common import grpc_errors
from irforge.common.grpc_server import open_channel, start_server
from irforge.common.tls import CLIENT_VARIABLES, ServerTls
from irforge.corpus import server as corpus_server
from irforge.corpus.client import RemoteCorpus
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.client import RemoteEvaluator
from irforge.evaluator.core import EvaluationError, Evaluator
from irforge.judge.backends.llm import OpenAIChatJudge
from irforge.judge.base import JudgePair, Verdict
from irforge.judge.spec import JudgeSpec
from irforge.orchestrator import server as orchestrator_server
from irforge.orchestrator.client import OrchestratorClient
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator import errors as orchestrator_errors
from irforge.orchestrator.errors import JobNotFound, JobSpecError
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState
from irforge.v1 import orchestrator_pb2, orchestrator_pb2_grpc

from ..judge import scripted_chat as scripted
from .test_tls import pki   # noqa: F401 (a fixture) the self-signed CA and 127.0.0.1 certificates test_tls.py makes


HUGE = 99_999_999_999   # past int32 (protobuf) and, squared, past int64 (SQLite)


@pytest.fixture()
def tiny_dataset(tmp_path):
    """Five documents, one query, qrels written by each test."""
    root = tmp_path / "ds"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"apple word{i}"}) + "\n"
                                               for i in range(5)))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "apple"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


@pytest.fixture()
def orchestrator(tmp_path, services_address):
    made = Orchestrator(tmp_path / "state", ServiceAddresses(corpus=services_address, evaluator=services_address),
                        cache_path=tmp_path / "cache.sqlite3", backoff_s=0.05, progress_interval_s=0.0).start()
    yield made
    made.shutdown(wait=True)


def wait_for(orchestrator, job_id):
    list(orchestrator.watch(job_id))   # ends with the job
    return orchestrator.get(job_id)


@pytest.fixture()
def orchestrator_address(orchestrator):
    running = start_server([orchestrator_server.binding(orchestrator)], port=0)
    yield f"127.0.0.1:{running.port}", orchestrator
    running.stop(grace=0)


# -- 1. an error while streaming requests arrives as itself -----------------------------------------

def test_a_qrels_value_the_wire_cannot_carry_fails_the_job_with_its_own_error(orchestrator, tiny_dataset):
    (tiny_dataset / "qrels" / "test.tsv").write_text(f"query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t{HUGE}\n")
    record = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(tiny_dataset))))
    assert record.state == JobState.FAILED
    assert "Exception iterating requests" not in record.error
    # The reader refuses the value where it is, before any step streams it: the job's error names
    # the file and line (the client re-raising a streaming error is the next test's).
    assert "DataFormatError" in record.error and f"qrels/test.tsv:3: relevance {HUGE}" in record.error, record.error


def test_the_evaluator_client_raises_the_error_that_stopped_its_requests(services_address):
    with pytest.raises(EvaluationError, match=f"document 'd2': relevance {HUGE}") as raised:
        RemoteEvaluator(services_address).evaluate({"q1": {"d1": 1, "d2": HUGE}}, {"q1": {"d1": 1.0}}, ["P@1"])
    assert grpc_errors.status_for(raised.value) == grpc.StatusCode.INVALID_ARGUMENT   # how a server would pass it on


# -- 2. a huge value quoted in an error does not hide the error ------------------------------------

def test_a_100kb_corpus_id_reaches_the_client_as_the_servers_error(tmp_path):
    running = start_server([corpus_server.binding(CorpusService(EmbeddedBackend(tmp_path / "indexes")))], port=0)
    try:
        with pytest.raises(ValueError, match=r"corpus id 'xxxx+…' \(100000 characters\) must start with") as raised:
            RemoteCorpus(f"127.0.0.1:{running.port}").get_corpus("x" * 100_000)
    finally:
        running.stop(grace=0)
    assert len(str(raised.value)) < 1000


def test_a_100kb_job_id_is_not_found_rather_than_resource_exhausted(orchestrator_address):
    address, _ = orchestrator_address
    with OrchestratorClient(address) as client, pytest.raises(JobNotFound, match=r"\(100000 characters\)"):
        client.get("j" * 100_000)


def test_bounded_text_cuts_long_quoted_values_and_the_whole():
    assert grpc_errors.bounded_text("id 'short' kept") == "id 'short' kept"
    assert grpc_errors.bounded_text("é" * 5000).endswith("… (5000 characters in all)")
    assert len(grpc_errors.bounded_text("é" * 5000).encode()) <= 2000


# -- 5. jobs --limit --------------------------------------------------------------------------------

def test_jobs_limit_out_of_range_is_refused_by_the_cli_and_the_server(orchestrator_address, capsys):
    address, _ = orchestrator_address
    assert main(["jobs", "--limit", "100000000000", "--server", address]) == 2
    assert "argument --limit: must be within 1..1000, got 100000000000" in capsys.readouterr().err
    with OrchestratorClient(address) as client, pytest.raises(orchestrator_errors.RequestError, match="'limit': must be within 1..1000"):
        client.list(100_000_000_000)
    stub = orchestrator_pb2_grpc.OrchestratorStub(open_channel(address))   # a client that does not check
    with pytest.raises(grpc.RpcError) as refused:
        stub.ListJobs(orchestrator_pb2.ListJobsRequest(limit=2**31 - 1), timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "RequestError: ListJobs field 'limit'" in refused.value.details()


# -- 6. every number and text of a job bounded before protobuf and SQLite --------------------------

@pytest.mark.parametrize("mapping, message", [
    ({"pipeline": {"top_k": 1e30}}, "'pipeline.top_k': --top-k must be at most 2147483647"),
    ({"pipeline": {"rerank": {"depth": 2**40}}}, "--rerank-depth must be at most 2147483647"),
    ({"pipeline": {"holes": {"depth": 2**63}}}, "--fill-holes must be at most 2147483647"),
    ({"pipeline": {"vectors": {"hnsw_m": 2**31}}}, "--hnsw-m must be at most 2147483647"),
    ({"pipeline": {"retriever": "dense"}, "shards": 2**31 - 1}, "'shards': must be within 0..1024"),
    ({"name": "n" * 100_000}, "'name': 100000 characters; at most 200"),
])
def test_job_spec_numbers_and_texts_are_bounded(tiny_dataset, mapping, message):
    mapping = {**mapping, "pipeline": {"dataset": str(tiny_dataset), **mapping.get("pipeline", {})}}
    with pytest.raises(JobSpecError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        JobSpec.from_mapping(mapping)


def test_submit_refuses_huge_numbers_with_exit_2_before_any_call(tiny_dataset, capsys):
    assert main(["submit", "--dataset", str(tiny_dataset), "--top-k", str(HUGE), "--server", "127.0.0.1:1"]) == 2
    assert f"job spec field 'pipeline.top_k': --top-k must be at most 2147483647, got {HUGE}" in capsys.readouterr().err
    assert main(["submit", "--dataset", str(tiny_dataset), "--shards", str(HUGE), "--server", "127.0.0.1:1"]) == 2
    assert "argument --shards: must be within 0..1024" in capsys.readouterr().err


def test_the_orchestrator_refuses_a_limit_sqlite_cannot_hold(orchestrator):
    with pytest.raises(orchestrator_errors.RequestError, match="got 100000000000000000000"):
        orchestrator.list(10**20)


# -- 3. TLS per channel -----------------------------------------------------------------------------

CHANNELS_VARIABLE = "IRFORGE_TLS_CHANNELS"


@pytest.fixture()
def tls_env(monkeypatch):
    """The TLS client variables unset, and restored after a test whose CLI run sets them."""
    for name in (*CLIENT_VARIABLES.values(), CHANNELS_VARIABLE):
        monkeypatch.setenv(name, "")
    return monkeypatch


@pytest.fixture()
def plaintext_corpus_and_tls_evaluator(pki, tmp_path):
    corpus = start_server([corpus_server.binding(CorpusService(EmbeddedBackend(tmp_path / "indexes")))], port=0)
    evaluator = start_server([evaluator_server.binding(Evaluator())], port=0,
                             tls=ServerTls(pki["server_cert"], pki["server_key"]))
    yield f"127.0.0.1:{corpus.port}", f"127.0.0.1:{evaluator.port}"
    corpus.stop(grace=0)
    evaluator.stop(grace=0)


def test_a_plaintext_corpus_beside_a_tls_evaluator_with_tls_set_per_channel(
        pki, tls_env, plaintext_corpus_and_tls_evaluator, tiny_dataset, tmp_path, capsys):
    corpus, evaluator = plaintext_corpus_and_tls_evaluator
    flags = ["eval", "--dataset", str(tiny_dataset), "--corpus-server", corpus, "--evaluator-server", evaluator,
             "--tls-ca", str(pki["ca"]), "--out", str(tmp_path / "out")]
    # --tls-ca alone applies to both: the corpus channel fails, and the error says which channel.
    assert main(flags) == 2
    err = capsys.readouterr().err
    assert f"no irforge corpus service answering at {corpus}" in err
    assert "--channel-tls corpus=PEM or corpus=plaintext" in err
    assert not (tmp_path / "out").exists()
    # The corpus channel plaintext, the evaluator's still trusting --tls-ca.
    assert main([*flags, "--channel-tls", "corpus=plaintext"]) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "out" / "results.json").read_text())["metrics"]
    # The same from the environment alone, as a service process (the orchestrator) reads it.
    tls_env.setenv(CHANNELS_VARIABLE, f"corpus=plaintext,evaluator={pki['ca']}")
    tls_env.setenv(CLIENT_VARIABLES["ca"], "")
    assert RemoteEvaluator(evaluator).evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}}, ["P@1"]).aggregate["P@1"] == 1.0
    assert RemoteCorpus(corpus).find_corpus("nothing") is None


def test_a_bad_channel_tls_setting_is_a_user_error(tls_env, tiny_dataset, tmp_path, capsys):
    assert main(["eval", "--dataset", str(tiny_dataset), "--channel-tls", "coprus=plaintext", "--out", str(tmp_path / "o")]) == 2
    assert "--channel-tls: 'coprus=plaintext' is not CHANNEL=PEM or CHANNEL=plaintext (channels: corpus, evaluator" \
        in capsys.readouterr().err


# -- 4. a storm of 429s opens the breaker ---------------------------------------------------------


@pytest.fixture()
def chat_judge():
    """judge(pairs) with the LLM judge on a scripted OpenAI-compatible server on 127.0.0.1; (judge, chat)."""
    chat = scripted.ScriptedChat().start()
    spec = JudgeSpec.from_dict({"kind": "openai-chat", "url": chat.url, "model": "scripted-judge", "max_retries": 2,
                                "max_concurrency": 1, "backoff_initial_s": 0.01, "backoff_max_s": 0.02, "timeout_s": 5.0},
                               source="test judge spec")
    judge = OpenAIChatJudge(spec)
    yield judge, chat
    judge.close()
    chat.stop()


PAIRS = [JudgePair(f"q{n}", "what causes rain", f"d{n}", f"clouds and rain, document {n}") for n in range(10)]


def test_a_storm_of_429s_opens_the_breaker_instead_of_hammering(chat_judge):
    judge, chat = chat_judge
    chat.responder = lambda prompt: scripted.status(429, retry_after=0)
    judgements = judge.judge(PAIRS)
    # One request's whole retry ladder (3 attempts), then no further request for the 9 other pairs.
    assert len(chat.chat_requests) == 3
    assert all(j.verdict is Verdict.FAILED for j in judgements)
    assert "rate limited: 3 consecutive 429s" in judgements[-1].error, judgements[-1].error


def test_a_single_429_with_retry_after_is_still_retried(chat_judge):
    judge, chat = chat_judge
    chat.script(scripted.status(429, retry_after=0), scripted.status(429, retry_after=0), "2")
    judgements = judge.judge(PAIRS[:3])
    assert all(j.verdict is Verdict.LABELLED for j in judgements) and len(chat.chat_requests) == 5


def test_a_watch_from_a_sequence_sqlite_cannot_hold_is_refused(orchestrator_address):
    address, orchestrator = orchestrator_address
    with pytest.raises(orchestrator_errors.RequestError, match="'after_sequence': must be within"):
        list(orchestrator.watch("000000000000", after=2**64))
    with OrchestratorClient(address) as client, pytest.raises(orchestrator_errors.RequestError):
        list(client.watch("000000000000", after=2**64))


def test_evaluation_options_past_int32_are_refused_in_words(services_address):
    from irforge.evaluator.core import EvaluationOptions

    with pytest.raises(EvaluationError, match="relevance_level must be at most 2147483647"):
        RemoteEvaluator(services_address).evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}}, ["P@1"],
                                                    EvaluationOptions(relevance_level=2**40))
