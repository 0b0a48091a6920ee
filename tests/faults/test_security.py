"""Security of a shared orchestrator: every file a job opens must lie inside the allowed roots
(links followed, at the time it is opened), and credentials in endpoint URLs never reach
results.json, the job record, its events, logs or error messages.

Real corpus and evaluator services on 127.0.0.1, a real HTTP search endpoint, real SciFact data."""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import sys
import time
from pathlib import Path

import pytest
import yaml

from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.errors import JobSpecError
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState

ENDPOINT_TESTS = Path(__file__).resolve().parent.parent / "endpoints"


def _search_servers():
    """tests/endpoints/search_servers.py: a team's real BM25 served over HTTP."""
    spec = importlib.util.spec_from_file_location("irforge_security_search_servers", ENDPOINT_TESTS / "search_servers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def make_orchestrator(tmp_path, services_address):
    made = []

    def make(state_dir=None, **options):
        services = ServiceAddresses(corpus=services_address, evaluator=services_address, call_timeout_s=30.0,
                                    long_call_timeout_s=30.0)
        orchestrator = Orchestrator(state_dir or tmp_path / "state", services, cache_path=tmp_path / "cache.sqlite3",
                                    backoff_s=0.05, progress_interval_s=0.0, **options)
        made.append(orchestrator)
        return orchestrator.start()

    yield make
    for orchestrator in made:
        orchestrator.shutdown(wait=True)


def wait_for(orchestrator, job_id, timeout=120.0):
    deadline = time.monotonic() + timeout
    events = list(orchestrator.watch(job_id, is_active=lambda: time.monotonic() < deadline))
    record = orchestrator.get(job_id)
    assert record.state.ended, f"job {job_id} still {record.state.value} after {timeout}s"
    return record, events


@pytest.fixture()
def roots(tmp_path, scifact_tiny):
    """(allowed root, a folder outside it); the root holds a copy of the tiny SciFact dataset."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    shutil.copytree(scifact_tiny, root / "data")
    outside.mkdir()
    return root, outside


# -- 1. allowed roots: every file opened ----------------------------------------------------------

def test_a_dataset_file_linked_outside_the_roots_is_refused(make_orchestrator, roots):
    root, outside = roots
    secret = outside / "queries.jsonl"
    (root / "data" / "queries.jsonl").rename(secret)
    (root / "data" / "queries.jsonl").symlink_to(secret)
    orchestrator = make_orchestrator(allowed_roots=(root,))
    with pytest.raises(JobSpecError) as raised:
        orchestrator.submit(JobSpec.of(dataset=str(root / "data")))
    message = str(raised.value)
    # Names the file, where it points, and the roots.
    assert str(root / "data" / "queries.jsonl") in message and str(secret) in message and str(root) in message
    assert orchestrator.list() == []


def test_a_qrels_file_linked_outside_is_refused_too(make_orchestrator, roots):
    root, outside = roots
    qrels = root / "data" / "qrels" / "test.tsv"
    qrels.rename(outside / "test.tsv")
    qrels.symlink_to(outside / "test.tsv")
    with pytest.raises(JobSpecError, match="outside the allowed roots"):
        make_orchestrator(allowed_roots=(root,)).submit(JobSpec.of(dataset=str(root / "data")))


def test_a_link_made_after_submission_fails_the_job_when_the_file_is_opened(make_orchestrator, roots, tmp_path):
    root, outside = roots
    first = make_orchestrator(allowed_roots=(root,))
    first.request_stop()  # the job is accepted and stays QUEUED: nothing is opened yet
    job_id = first.submit(JobSpec.of(dataset=str(root / "data")))
    first.shutdown(wait=True)
    corpus = root / "data" / "corpus.jsonl"
    corpus.rename(outside / "corpus.jsonl")
    corpus.symlink_to(outside / "corpus.jsonl")
    record, _ = wait_for(make_orchestrator(allowed_roots=(root,)), job_id)
    assert record.state == JobState.FAILED
    assert str(corpus) in record.error and str(outside / "corpus.jsonl") in record.error
    assert "outside the allowed roots" in record.error


def test_a_link_that_stays_inside_the_roots_is_fine(make_orchestrator, roots):
    root, _ = roots
    (root / "shared").mkdir()
    (root / "data" / "corpus.jsonl").rename(root / "shared" / "corpus.jsonl")
    (root / "data" / "corpus.jsonl").symlink_to(root / "shared" / "corpus.jsonl")
    orchestrator = make_orchestrator(allowed_roots=(root,))
    record, _ = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(root / "data"))))
    assert record.state == JobState.SUCCEEDED, record.error


def test_an_endpoint_spec_linked_outside_is_refused(make_orchestrator, roots):
    root, outside = roots
    (outside / "endpoint.yaml").write_text("kind: search-http\nurl: http://127.0.0.1:9/search\n")
    (root / "endpoint.yaml").symlink_to(outside / "endpoint.yaml")
    with pytest.raises(JobSpecError) as raised:
        make_orchestrator(allowed_roots=(root,)).submit(JobSpec.of(dataset=str(root / "data"), endpoint=str(root / "endpoint.yaml")))
    assert str(outside / "endpoint.yaml") in str(raised.value)


def test_a_judge_template_outside_the_roots_is_refused(make_orchestrator, roots):
    root, outside = roots
    (outside / "prompt.txt").write_text("Query: {query}\nDocument: {document}\nLabel 0-3:")
    (root / "judge.yaml").write_text(yaml.safe_dump({"kind": "openai-chat", "url": "http://127.0.0.1:9/v1", "model": "m",
                                                     "template": str(outside / "prompt.txt")}))
    with pytest.raises(JobSpecError) as raised:
        make_orchestrator(allowed_roots=(root,)).submit(
            JobSpec.of(dataset=str(root / "data"), fill_holes=5, judge=str(root / "judge.yaml")))
    assert str(outside / "prompt.txt") in str(raised.value)


def test_a_tls_file_an_endpoint_spec_names_outside_the_roots_is_refused(make_orchestrator, roots):
    root, outside = roots
    (outside / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (root / "endpoint.yaml").write_text(yaml.safe_dump({"kind": "search-http", "url": "https://127.0.0.1:9/search",
                                                        "ca_bundle": "../outside/ca.pem"}))
    with pytest.raises(JobSpecError) as raised:
        make_orchestrator(allowed_roots=(root,)).submit(JobSpec.of(dataset=str(root / "data"), endpoint=str(root / "endpoint.yaml")))
    assert "ca_bundle" in str(raised.value) and str(outside / "ca.pem") in str(raised.value)


# -- 2. credentials in endpoint URLs --------------------------------------------------------------

SECRETS = ("alice", "s3cret-pass", "K3Y-123", "T0K-456", "G00GKEY")


def _credentialed(url: str) -> str:
    """`url` with a user:password and secret query keys."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://alice:s3cret-pass@{rest}?api_key=K3Y-123&token=T0K-456&key=G00GKEY&top=5"


def _assert_no_secret(where: str, text: str) -> None:
    found = [secret for secret in SECRETS if secret in text]
    assert not found, f"{where} shows {found}: {text[:2000]}"


@pytest.fixture()
def http_search(roots, tmp_path):
    servers = _search_servers()
    search = servers.Bm25Search(roots[0] / "data", tmp_path / "team-index")
    server = servers.HttpSearchServer(search)
    yield server
    server.stop()
    search.close()


@pytest.fixture()
def service_logs(caplog):
    """Every record at DEBUG, through the filters a service's log handler has (common/logs.py)."""
    from irforge.common.logs import make_handler

    caplog.set_level(logging.DEBUG)
    filters = make_handler("json").filters
    for log_filter in filters:
        caplog.handler.addFilter(log_filter)
    yield caplog
    for log_filter in filters:
        caplog.handler.removeFilter(log_filter)


def test_credentials_in_an_endpoint_url_never_reach_results_record_or_logs(make_orchestrator, roots, http_search, service_logs):
    caplog = service_logs
    root, _ = roots
    (root / "endpoint.yaml").write_text(yaml.safe_dump({"kind": "search-http", "url": _credentialed(http_search.url)}))
    orchestrator = make_orchestrator(allowed_roots=(root,))
    job_id = orchestrator.submit(JobSpec.of(dataset=str(root / "data"), endpoint=str(root / "endpoint.yaml"),
                                         output=str(root / "out")))
    record, events = wait_for(orchestrator, job_id)
    assert record.state == JobState.SUCCEEDED, record.error
    results = (orchestrator.results_dir(job_id) / "results.json").read_text()
    assert "127.0.0.1" in results  # the endpoint is still recorded, without its credentials
    _assert_no_secret("results.json", results)
    _assert_no_secret("the copied results.json", (root / "out" / "results.json").read_text())
    _assert_no_secret("the job record", json.dumps([record.spec, record.error, [s.output for s in record.steps]]))
    _assert_no_secret("the job's events", " ".join(e.message for e in events))
    _assert_no_secret("the logs", caplog.text)


def test_credentials_never_reach_the_error_of_a_failing_endpoint(make_orchestrator, roots, http_search, service_logs):
    caplog = service_logs
    root, _ = roots
    http_search.default = "401"  # the endpoint refuses every request: the job fails naming the endpoint
    (root / "endpoint.yaml").write_text(yaml.safe_dump({"kind": "search-http", "url": _credentialed(http_search.url),
                                                        "max_retries": 0}))
    orchestrator = make_orchestrator(allowed_roots=(root,))
    record, events = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(root / "data"),
                                                                        endpoint=str(root / "endpoint.yaml"))))
    assert record.state == JobState.FAILED
    assert "127.0.0.1" in record.error
    _assert_no_secret("the job's error", record.error)
    _assert_no_secret("the job's events", " ".join(e.message for e in events))
    _assert_no_secret("the logs", caplog.text)


def test_irforge_eval_never_shows_credentials(roots, http_search, tmp_path, capsys, service_logs):
    """The same without the orchestrator: `irforge eval --endpoint`, its results.json, its error
    output (a refusing endpoint) and its logs; the URL given by --endpoint-url too."""
    from irforge.cli.main import main

    root, _ = roots
    spec = tmp_path / "endpoint.yaml"
    spec.write_text(yaml.safe_dump({"kind": "search-http", "url": "http://127.0.0.1:9/unused", "max_retries": 0}))
    common = ["eval", "--dataset", str(root / "data"), "--endpoint", str(spec), "--endpoint-url", _credentialed(http_search.url)]
    assert main([*common, "--out", str(tmp_path / "ok")]) == 0
    results = (tmp_path / "ok" / "results.json").read_text()
    assert "127.0.0.1" in results
    _assert_no_secret("irforge eval's results.json", results)
    http_search.default = "403"
    assert main([*common, "--out", str(tmp_path / "refused")]) == 2
    output = capsys.readouterr()
    assert "HTTP 403" in output.err
    _assert_no_secret("irforge eval's output", output.out + output.err)
    _assert_no_secret("the logs", service_logs.text)


def test_credentials_never_reach_a_spec_error(tmp_path):
    from irforge.endpoints.errors import EndpointSpecError
    from irforge.endpoints.spec import EndpointSpec
    from irforge.judge.errors import JudgeSpecError
    from irforge.judge.spec import JudgeSpec

    with pytest.raises(EndpointSpecError) as raised:
        EndpointSpec.from_dict({"kind": "search-grpc", "url": _credentialed("grpc://127.0.0.1:9")})
    _assert_no_secret("an endpoint spec error", str(raised.value))
    with pytest.raises(JudgeSpecError) as raised:
        JudgeSpec.from_dict({"kind": "openai-chat", "url": _credentialed("ftp://127.0.0.1:9/v1"), "model": "m"})
    _assert_no_secret("a judge spec error", str(raised.value))
    judge = JudgeSpec.from_dict({"kind": "openai-chat", "url": _credentialed("http://127.0.0.1:9/v1"), "model": "m"})
    _assert_no_secret("a judge's public record", json.dumps(judge.public()))
    assert judge.public()["host"] == "127.0.0.1:9"


def test_redact_url_keeps_what_identifies_the_endpoint():
    from irforge.common.redact import redact_text, redact_url

    assert redact_url("https://u:p@example.org:8443/v1?api_key=abc&top=5") == "https://***@example.org:8443/v1?api_key=***&top=5"
    assert redact_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert redact_url("127.0.0.1:50070") == "127.0.0.1:50070"
    text = "POST http://bob:hunter2@h/x?access_token=zz failed; retry http://h/y"
    assert redact_text(text) == "POST http://***@h/x?access_token=*** failed; retry http://h/y"
