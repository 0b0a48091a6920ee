"""The orchestrator core over real corpus and evaluator gRPC services, on real SciFact data:
jobs give what `irforge eval` gives, state survives a restart, finished steps are never redone,
cancel stops a job, and a failing, unreachable or silent service fails the job (never hangs it)."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time

import pytest
from irforge.cli.main import main
from irforge.common.logs import ContextFilter
from irforge.corpus.client import RemoteCorpus
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState, JobStore
from irforge.pipeline.retrievers.bm25 import corpus_id_for

from .conftest import wait_for


def steps_of(record) -> dict:
    return {step.name: step for step in record.steps}


def results_of(orchestrator, job_id) -> dict:
    return json.loads((orchestrator.results_dir(job_id) / "results.json").read_text())


def test_a_job_gives_what_irforge_eval_gives(make_orchestrator, scifact_subset, tmp_path, caplog, request):
    from prometheus_client import REGISTRY

    caplog.set_level(logging.INFO, logger="irforge.orchestrator")
    caplog.set_level(logging.INFO, logger="irforge.grpc")
    stamp = ContextFilter("orchestrator")   # what the service's log handler stamps
    caplog.handler.addFilter(stamp)
    # pytest keeps one capture handler for the session: a filter left on it stamps later tests' records.
    request.addfinalizer(lambda: caplog.handler.removeFilter(stamp))
    orchestrator = make_orchestrator()
    job_id = orchestrator.submit(JobSpec.of(dataset=str(scifact_subset)))
    record, events = wait_for(orchestrator, job_id)
    assert record.state == JobState.SUCCEEDED, record.error
    # Logs carry the job id (bound for the job's thread); the jobs gauge counts it.
    assert any(r.getMessage() == f"job {job_id} SUCCEEDED" for r in caplog.records)
    step_lines = [r for r in caplog.records if r.getMessage().startswith(f"job {job_id} step ingest_lexical done")]
    assert step_lines and all(r.job_id == job_id for r in step_lines)
    # ... and so do the services' request logs: the job id travels with every call the job makes.
    calls = [r for r in caplog.records if r.name == "irforge.grpc" and ("BatchSearch" in r.getMessage() or "Evaluate" in r.getMessage())]
    assert len(calls) >= 2 and all(r.job_id == job_id for r in calls)
    assert [s.name for s in record.steps] == ["ingest_lexical", "retrieve", "evaluate"]
    assert all(s.state == "done" and s.executions == 1 for s in record.steps)

    out = tmp_path / "eval"
    assert main(["eval", "--dataset", str(scifact_subset), "--retriever", "bm25", "--out", str(out),
                 "--index-dir", str(tmp_path / "eval-index")]) == 0
    expected = json.loads((out / "results.json").read_text())
    got = results_of(orchestrator, job_id)
    assert got["metrics"] == pytest.approx(expected["metrics"], abs=1e-12)
    assert got["per_query"] == expected["per_query"]
    assert (orchestrator.results_dir(job_id) / "run.trec").read_bytes() == (out / "run.trec").read_bytes()
    for key in ("dataset", "split", "evaluation", "data"):
        assert got[key] == expected[key], key
    # Latency: the orchestrator's retrieve step timed the stage irforge eval times, and its queries.
    assert set(got["latency"]["stages"]) == set(expected["latency"]["stages"]) == {"bm25 search"}
    assert got["latency"]["end_to_end"]["count"] == expected["latency"]["end_to_end"]["count"] == got["data"]["queries_in_split"]
    assert {k: v for k, v in got["retriever"].items() if k != "bm25s_version"} == \
           {k: v for k, v in expected["retriever"].items() if k != "bm25s_version"}
    assert got["counts"]["documents_ingested"] == expected["counts"]["documents_ingested"] > 0
    assert record.metrics == got["metrics"]

    # Progress events carry done/total, a rate and an ETA for each long step.
    progress = [e for e in events if e.state == "progress" and e.step == "retrieve"]
    assert progress and progress[-1].done == progress[-1].total == got["data"]["queries_in_split"]
    assert progress[-1].rate > 0 and progress[-1].unit == "query"
    assert events[-1].state == "SUCCEEDED" and [e.sequence for e in events] == sorted({e.sequence for e in events})

    orchestrator.shutdown(wait=True)  # the worker has finished its bookkeeping
    assert REGISTRY.get_sample_value("irforge_jobs", {"state": "SUCCEEDED"}) == 1
    assert REGISTRY.get_sample_value("irforge_jobs", {"state": "RUNNING"}) == 0


def test_restart_resumes_from_the_last_completed_step(make_orchestrator, scifact_subset, tmp_path):
    state = tmp_path / "resume-state"
    first = make_orchestrator(state_dir=state)
    # Stop the orchestrator the moment the ingest step has committed: like a crash between steps.
    stopped = threading.Event()

    def stop_after_ingest(event):
        if (event.step, event.state) == ("ingest_lexical", "done"):
            first.request_stop()
            stopped.set()

    first.subscribe(stop_after_ingest)
    job_id = first.submit(JobSpec.of(dataset=str(scifact_subset)))
    assert stopped.wait(60)
    first.shutdown(wait=True)

    stored = JobStore(state / "jobs.sqlite3")  # what the next orchestrator will find
    assert stored.job(job_id).state == JobState.RUNNING
    before = steps_of(stored.job(job_id))
    stored.close()
    assert before["ingest_lexical"].state == "done" and before["ingest_lexical"].executions == 1
    assert before["evaluate"].executions == 0

    second = make_orchestrator(state_dir=state)  # the same SQLite state: a restarted orchestrator
    record, events = wait_for(second, job_id)

    assert record.state == JobState.SUCCEEDED, record.error
    after = steps_of(record)
    assert after["ingest_lexical"].executions == 1                                  # not redone
    assert after["ingest_lexical"].finished_at == before["ingest_lexical"].finished_at
    assert after["evaluate"].executions == 1
    assert any(e.state == "resumed" and "ingest_lexical" in e.message for e in events)
    # The results still count the documents that first ingest indexed (its persisted output).
    assert results_of(second, job_id)["counts"]["documents_ingested"] > 0


def test_cancel_stops_a_running_job_inside_retrieval(make_orchestrator, scifact_subset):
    orchestrator = make_orchestrator()
    job_ids = []
    orchestrator.subscribe(lambda e: orchestrator.cancel(e.job_id)
                           if (e.step, e.state) == ("retrieve", "progress") and e.done == 1 else None)
    job_ids.append(orchestrator.submit(JobSpec.of(dataset=str(scifact_subset))))
    record, events = wait_for(orchestrator, job_ids[0])
    assert record.state == JobState.CANCELLED
    steps = steps_of(record)
    assert steps["ingest_lexical"].state == "done"
    assert steps["retrieve"].state == "failed" and steps["evaluate"].executions == 0
    # It stopped within the step: at most a query or two after the cancel.
    assert max(e.done for e in events if e.step == "retrieve" and e.state == "progress") < 5
    assert orchestrator.cancel(job_ids[0]).state == JobState.CANCELLED  # no-op once ended


def test_a_queued_job_is_cancelled_before_it_starts(make_orchestrator, scifact_subset):
    orchestrator = make_orchestrator(workers=1)
    release = threading.Event()
    # Hold the single worker inside the first job until the second one is cancelled.
    orchestrator.subscribe(lambda e: release.wait(30) if (e.step, e.state) == ("ingest_lexical", "running") else None)
    first = orchestrator.submit(JobSpec.of(dataset=str(scifact_subset)))
    second = orchestrator.submit(JobSpec.of(dataset=str(scifact_subset), top_k=10))
    assert orchestrator.cancel(second).state == JobState.CANCELLED
    release.set()
    assert wait_for(orchestrator, first)[0].state == JobState.SUCCEEDED
    record, _ = wait_for(orchestrator, second)
    assert record.state == JobState.CANCELLED and all(s.executions == 0 for s in record.steps)


def test_a_service_error_fails_the_job_with_its_message(make_orchestrator, scifact_subset, services_address):
    dataset = BeirDataset.open(scifact_subset)
    corpus_id = corpus_id_for(dataset.name, dataset.corpus_fingerprint(), Bm25Settings())
    # Someone else's corpus under the same id: the corpus service refuses to build over it.
    RemoteCorpus(services_address).create_corpus(corpus_id, "0" * 64, Bm25Settings())
    orchestrator = make_orchestrator()
    record, _ = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(scifact_subset))))
    assert record.state == JobState.FAILED
    assert record.error.startswith("step ingest_lexical: CorpusConflict:") and "exists with fingerprint 000000000000" in record.error
    assert steps_of(record)["ingest_lexical"].executions == 1  # not a transient error: no retry


def test_an_unreachable_service_is_retried_then_fails_the_job(make_orchestrator, scifact_subset, unused_port):
    orchestrator = make_orchestrator(corpus=f"127.0.0.1:{unused_port}", max_attempts=3)
    started = time.monotonic()
    record, events = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(scifact_subset))), timeout=60)
    assert record.state == JobState.FAILED
    assert f"127.0.0.1:{unused_port}" in record.error and "gave up after 3 attempts" in record.error
    assert steps_of(record)["ingest_lexical"].executions == 3
    assert [e.state for e in events if e.step == "ingest_lexical"].count("retrying") == 2
    assert time.monotonic() - started < 30


def test_a_silent_service_hits_the_deadline_instead_of_hanging(make_orchestrator, scifact_subset):
    with socket.socket() as silent:  # accepts connections, never answers a byte
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        orchestrator = make_orchestrator(corpus=address, call_timeout_s=1.0, max_attempts=2)
        started = time.monotonic()
        record, _ = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(scifact_subset))), timeout=60)
    assert record.state == JobState.FAILED and address in record.error
    assert "DEADLINE_EXCEEDED" in record.error and steps_of(record)["ingest_lexical"].executions == 2
    assert time.monotonic() - started < 20


def test_two_jobs_on_one_corpus_share_one_index(make_orchestrator, scifact_subset):
    orchestrator = make_orchestrator(workers=2)
    jobs: dict[str, str] = {}

    def start_second_while_first_builds(event):
        if event.job_id == jobs.get("first") and (event.step, event.state) == ("ingest_lexical", "progress") and "second" not in jobs:
            jobs["second"] = orchestrator.submit(JobSpec.of(dataset=str(scifact_subset), top_k=100))
            deadline = time.monotonic() + 30  # keep building until the second job waits on the lock
            while time.monotonic() < deadline and not any(e.state == "waiting" for e in orchestrator.store.events(jobs["second"])):
                time.sleep(0.02)

    orchestrator.subscribe(start_second_while_first_builds)
    jobs["first"] = orchestrator.submit(JobSpec.of(dataset=str(scifact_subset)))
    first, _ = wait_for(orchestrator, jobs["first"])
    second, second_events = wait_for(orchestrator, jobs["second"])
    assert first.state == second.state == JobState.SUCCEEDED
    assert any(e.state == "waiting" for e in second_events)
    assert results_of(orchestrator, jobs["first"])["counts"]["documents_ingested"] > 0
    shared = results_of(orchestrator, jobs["second"])["counts"]
    assert shared["ingest_skipped"] is True and shared["documents_ingested"] == 0


def test_results_before_success_and_unknown_jobs_are_clear_errors(make_orchestrator, scifact_subset):
    from irforge.orchestrator.errors import JobNotFound, JobSpecError, ResultsNotReady

    orchestrator = make_orchestrator()
    with pytest.raises(JobNotFound, match="nope"):
        orchestrator.get("nope")
    with pytest.raises(JobSpecError, match="'pipeline.split'.*qrels/dev.tsv"):
        orchestrator.submit(JobSpec.of(dataset=str(scifact_subset), split="dev"))
    with pytest.raises(JobSpecError, match="encoder service"):
        orchestrator.submit(JobSpec.of(dataset=str(scifact_subset), retriever="dense"))
    release = threading.Event()
    orchestrator.subscribe(lambda e: release.wait(30) if e.state == "RUNNING" else None)
    job_id = orchestrator.submit(JobSpec.of(dataset=str(scifact_subset)))
    with pytest.raises(ResultsNotReady, match=job_id):
        orchestrator.results_dir(job_id)
    release.set()
    assert wait_for(orchestrator, job_id)[0].state == JobState.SUCCEEDED


def test_a_reranking_job_gives_what_irforge_eval_gives(make_orchestrator, scifact_tiny, cross_encoder_dir, tmp_path):
    orchestrator = make_orchestrator()
    spec = JobSpec.of(dataset=str(scifact_tiny), reranker=str(cross_encoder_dir), rerank_depth=5, top_k=10)
    record, _ = wait_for(orchestrator, orchestrator.submit(spec))
    assert record.state == JobState.SUCCEEDED, record.error
    assert [s.name for s in record.steps] == ["ingest_lexical", "retrieve", "rerank", "evaluate"]
    out = tmp_path / "eval"
    assert main(["eval", "--dataset", str(scifact_tiny), "--out", str(out), "--index-dir", str(tmp_path / "index"),
                 "--reranker", str(cross_encoder_dir), "--rerank-depth", "5", "--top-k", "10"]) == 0
    expected = json.loads((out / "results.json").read_text())
    got = results_of(orchestrator, record.job_id)
    assert (orchestrator.results_dir(record.job_id) / "run.trec").read_bytes() == (out / "run.trec").read_bytes()
    assert got["metrics"] == pytest.approx(expected["metrics"], abs=1e-12)
    assert got["retriever"]["name"] == "bm25-rerank" and got["counts"]["rerank_queries"] == 3


def _search_servers():
    """tests/endpoints/search_servers.py: a team's search endpoint (irforge BM25 over HTTP), real."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "endpoints" / "search_servers.py"
    spec = importlib.util.spec_from_file_location("irforge_orchestrator_tests_search_servers", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_job_on_a_team_search_endpoint_gives_what_irforge_eval_gives(make_orchestrator, scifact_tiny, tmp_path):
    servers = _search_servers()
    server = servers.HttpSearchServer(servers.Bm25Search(scifact_tiny, tmp_path / "team-index"))
    try:
        endpoint = tmp_path / "team.yaml"
        endpoint.write_text(f"kind: search-http\nurl: {server.url}\ntimeout_s: 30\n")
        orchestrator = make_orchestrator()
        record, _ = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(scifact_tiny), endpoint=str(endpoint))))
        assert record.state == JobState.SUCCEEDED, record.error
        assert [s.name for s in record.steps] == ["retrieve", "evaluate"]  # the endpoint retrieves: nothing to index
        out = tmp_path / "eval"
        assert main(["eval", "--dataset", str(scifact_tiny), "--endpoint", str(endpoint), "--out", str(out)]) == 0
    finally:
        server.stop()
    expected = json.loads((out / "results.json").read_text())
    got = results_of(orchestrator, record.job_id)
    assert got["metrics"] == pytest.approx(expected["metrics"], abs=1e-12)
    assert (orchestrator.results_dir(record.job_id) / "run.trec").read_bytes() == (out / "run.trec").read_bytes()
    assert got["retriever"]["probe"]["sha256"] == expected["retriever"]["probe"]["sha256"]


def test_allowed_roots_refuse_paths_outside_them(make_orchestrator, scifact_tiny, tmp_path):
    """On a shared platform a client must not make the orchestrator read or write anywhere else:
    the dataset, spec files and output must resolve inside an allowed root (symlinks and .. included)."""
    from irforge.orchestrator.errors import JobSpecError

    root = tmp_path / "datasets"
    root.mkdir()
    inside = root / "scifact"
    inside.symlink_to(scifact_tiny)                     # a link inside the root that points out of it
    orchestrator = make_orchestrator(allowed_roots=(root, tmp_path / "runs"))
    for spec, field in [
        (JobSpec.of(dataset=str(scifact_tiny), retriever="bm25"), "pipeline.dataset"),
        (JobSpec.of(dataset=str(inside), retriever="bm25"), "pipeline.dataset"),
        (JobSpec.of(dataset=str(root / ".." / "elsewhere"), retriever="bm25"), "pipeline.dataset"),
    ]:
        with pytest.raises(JobSpecError, match=f"'{field}'.*outside the orchestrator's allowed roots"):
            orchestrator.submit(spec)
    copied = root / "copy"
    copied.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        (copied / name).write_bytes((scifact_tiny / name).read_bytes())
    (copied / "qrels").mkdir()
    (copied / "qrels" / "test.tsv").write_bytes((scifact_tiny / "qrels" / "test.tsv").read_bytes())
    with pytest.raises(JobSpecError, match="'output'.*outside"):
        orchestrator.submit(JobSpec.of(dataset=str(copied), retriever="bm25", output=str(tmp_path / "other")))
    job_id = orchestrator.submit(JobSpec.of(dataset=str(copied), retriever="bm25", output=str(tmp_path / "runs" / "a")))
    record, _ = wait_for(orchestrator, job_id)
    assert record.state == JobState.SUCCEEDED
