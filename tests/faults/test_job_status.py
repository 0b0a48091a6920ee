"""Status tells the truth: a job whose judge failed on some holes says so with the counts, and
`irforge watch` exits 1 as `irforge eval` does; `watch` outlives an orchestrator restart; the team
SDK's channels send request ids and retry UNAVAILABLE like irforge's own. Real servers on
127.0.0.1; the LLM judge is the scripted OpenAI-compatible server of tests/judge, failing on
about half of the pairs."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
import yaml

from irforge.cli.main import main
from irforge.common.grpc_server import RETRY_POLICY, start_server
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.core import Evaluator
from irforge.orchestrator import server as orchestrator_server
from irforge.orchestrator.client import OrchestratorClient
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "clients" / "python"))

import irforge_client  # noqa: E402
from irforge_client import _channel as sdk_channel  # noqa: E402

_spec = importlib.util.spec_from_file_location("irforge_faults_scripted_chat", ROOT / "tests" / "judge" / "scripted_chat.py")
scripted = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = scripted
_spec.loader.exec_module(scripted)

LISTENING = re.compile(r"listening on (\S+)")


def fails_on_odd_hash(prompt: str):
    """The judge answers a label for about half of the pairs and a 400 for the others (a client
    error: not retried), decided by the prompt so that a re-run fails on the same pairs."""
    return scripted.status(400) if hashlib.sha256(prompt.encode()).digest()[0] % 2 else "2"


@pytest.fixture()
def half_failing_judge(tmp_path):
    chat = scripted.ScriptedChat(responder=fails_on_odd_hash).start()
    spec = tmp_path / "judge.yaml"
    spec.write_text(yaml.safe_dump({"kind": "openai-chat", "url": chat.url, "model": "scripted-judge",
                                    "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0}))
    yield spec
    chat.stop()


# -- a job with failed holes says so ---------------------------------------------------------------

def test_a_job_whose_judge_failed_on_some_holes_warns_and_watch_exits_1_like_eval(
        services_address, half_failing_judge, scifact_tiny, tmp_path, capsys):
    orchestrator = Orchestrator(tmp_path / "state", ServiceAddresses(corpus=services_address, evaluator=services_address),
                                cache_path=tmp_path / "cache.sqlite3", backoff_s=0.05, progress_interval_s=0.0).start()
    running = start_server([orchestrator_server.binding(orchestrator)], port=0)
    address = f"127.0.0.1:{running.port}"
    try:
        spec = JobSpec.of(dataset=str(scifact_tiny), fill_holes=5, judge=str(half_failing_judge))
        with OrchestratorClient(address) as client:
            job_id = client.submit(spec)
        capsys.readouterr()
        watched = main(["watch", job_id, "--server", address])
        watch_out, watch_err = capsys.readouterr()
        assert main(["jobs", "--server", address]) == 0
        listed = capsys.readouterr().out
        with irforge_client.OrchestratorClient(address) as team:
            job = team.get(job_id)
    finally:
        running.stop(grace=0)
        orchestrator.shutdown()

    assert job.state == "SUCCEEDED" and len(job.warnings) == 1
    counts = re.search(r"judge_holes: (\d+) of (\d+) holes failed and 0 got no valid label", job.warnings[0])
    assert counts, job.warnings
    failed, holes = int(counts.group(1)), int(counts.group(2))
    assert 0 < failed < holes                              # about half, decided by the prompts' hashes
    assert watched == 1
    assert f"job {job_id} SUCCEEDED with warnings" in watch_out
    assert f"irforge watch: warning: {job.warnings[0]}" in watch_err
    assert job.warnings[0] in listed

    # `irforge eval --fill-holes` on the same data and judge: exit 1, the same words and counts.
    assert main(["eval", "--dataset", str(scifact_tiny), "--out", str(tmp_path / "eval"), "--index-dir", str(tmp_path / "ix"),
                 "--fill-holes", "5", "--judge", str(half_failing_judge)]) == 1
    assert f"irforge eval: {job.warnings[0].removeprefix('judge_holes: ')}" in capsys.readouterr().err


# -- watch outlives a restart ----------------------------------------------------------------------

def start_orchestrator(state_dir, services_address, port: int = 0) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "irforge.cli.main", "service", "orchestrator", "--port", str(port), "--state-dir", str(state_dir),
         "--corpus-server", services_address, "--evaluator-server", services_address],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()
    match = LISTENING.search(line)
    assert match, f"orchestrator did not start: {line!r}"
    return process, match.group(1)


def test_watch_reconnects_when_the_orchestrator_restarts_and_misses_no_event(services_address, beir_dir, tmp_path):
    state = tmp_path / "state"
    first, address = start_orchestrator(state, services_address)
    watcher = None
    try:
        with OrchestratorClient(address) as client:
            job_id = client.submit(JobSpec.of(dataset=str(beir_dir / "scifact")))
            watcher = subprocess.Popen([sys.executable, "-m", "irforge.cli.main", "watch", job_id, "--server", address,
                                        "--reconnect-timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for event in client.watch(job_id):
                if (event.step, event.state) == ("retrieve", "running"):
                    first.send_signal(signal.SIGKILL)     # mid-job, while `irforge watch` follows it
                    break
        first.wait(10)
        time.sleep(1.0)                                   # the watcher notices the orchestrator is gone
        second, _ = start_orchestrator(state, services_address, port=int(address.rsplit(":", 1)[1]))
        try:
            out, err = watcher.communicate(timeout=180)
            with OrchestratorClient(address) as client:
                record = client.get(job_id)
                events = list(client.watch(job_id))
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(30)
    finally:
        first.kill()
        if watcher is not None and watcher.poll() is None:
            watcher.kill()

    assert record.state == JobState.SUCCEEDED, record.error
    assert watcher.returncode == 0, err
    assert "lost the orchestrator" in err and "reconnecting" in err
    assert err.count("lost the orchestrator") == 1 and "irforge watch: reconnected to the orchestrator" in err, err   # one outage
    assert f"job {job_id} SUCCEEDED" in out and "nDCG@10" in out
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))   # the record the watch resumed over


# -- the team SDK's channels ---------------------------------------------------------------------

class UnavailableAtFirst(grpc.ServerInterceptor):
    """Answers the first `failures` calls of `method` with UNAVAILABLE (a server still starting),
    records every request id it sees."""

    def __init__(self, method: str, failures: int):
        self.method, self.failures, self.calls, self.request_ids = method, failures, 0, []

    def intercept_service(self, continuation, details):
        if not details.method.endswith(self.method):
            return continuation(details)
        self.calls += 1
        self.request_ids.append(dict(details.invocation_metadata).get("x-request-id"))
        if self.calls <= self.failures:
            def refuse(request, context):
                context.abort(grpc.StatusCode.UNAVAILABLE, "starting")
            return grpc.unary_unary_rpc_method_handler(refuse)
        return continuation(details)


def test_the_sdk_retries_unavailable_and_sends_request_ids(caplog):
    from concurrent import futures

    from irforge.v1 import evaluator_pb2_grpc

    gate = UnavailableAtFirst("ListMeasures", failures=2)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), interceptors=[gate])
    evaluator_pb2_grpc.add_EvaluatorServicer_to_server(evaluator_server.binding(Evaluator()).servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with irforge_client.EvaluatorClient(f"127.0.0.1:{port}") as client:
            with irforge_client.request_id("team-run-42"):
                ir_names, _ = client.list_measures()
            client.list_measures()
    finally:
        server.stop(grace=0)
    assert "nDCG" in ir_names
    assert gate.calls == 4                                 # 2 refused, the retry that passed, then the next call
    assert gate.request_ids[:3] == ["team-run-42"] * 3     # a retry is the same call: the same id
    assert re.fullmatch(r"[0-9a-f]{32}", gate.request_ids[3])


def test_the_sdk_retry_policy_is_the_services_own():
    assert sdk_channel.RETRY_POLICY == RETRY_POLICY


# -- a reader that goes away -----------------------------------------------------------------------

def test_output_into_a_closed_pipe_ends_quietly(conformance_dir):
    # `irforge metrics -q ... | head -1`: head exits after one line, irforge keeps writing.
    argv = ["metrics", "-q", str(conformance_dir / "qrels.test"), str(conformance_dir / "results.test")]
    process = subprocess.Popen([sys.executable, "-m", "irforge.cli.main", *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(60) == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_results_into_a_file_is_a_clear_error(tmp_path, capsys):
    # `irforge results JOB --out FILE` checks OUT before asking the orchestrator for anything.
    target = tmp_path / "a-file"
    target.write_text("x")
    assert main(["results", "some-job", "--out", str(target), "--server", "127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "exists and is not a folder" in err and "Traceback" not in err
