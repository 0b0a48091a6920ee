"""A real crash: `irforge service orchestrator` killed with SIGKILL in the middle of a job on the
full SciFact; a new orchestrator process on the same state finishes the job without redoing the
steps that had completed, and the results equal `irforge eval`'s."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest
from irforge.orchestrator.client import OrchestratorClient
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState, JobStore

LISTENING = re.compile(r"listening on (\S+)")


def start_orchestrator(state_dir, services_address) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "irforge.cli.main", "service", "orchestrator", "--port", "0", "--state-dir", str(state_dir),
         "--corpus-server", services_address, "--evaluator-server", services_address],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()
    match = LISTENING.search(line)
    assert match, f"orchestrator did not start: {line!r}"
    return process, match.group(1)


def test_a_killed_orchestrator_resumes_the_job_from_its_last_completed_step(services_address, beir_dir, tmp_path):
    state = tmp_path / "state"
    first, address = start_orchestrator(state, services_address)
    try:
        with OrchestratorClient(address) as client:
            job_id = client.submit(JobSpec.of(dataset=str(beir_dir / "scifact")))
            for event in client.watch(job_id):
                if (event.step, event.state) == ("ingest_lexical", "done"):
                    first.send_signal(signal.SIGKILL)  # mid-job: the retrieve step has just started
                    break
    finally:
        first.kill()
        first.wait()

    crashed = JobStore(state / "jobs.sqlite3")
    assert crashed.job(job_id).state == JobState.RUNNING    # what the crash left: a job half done
    crashed.close()

    second, address = start_orchestrator(state, services_address)
    try:
        with OrchestratorClient(address) as client:
            deadline = time.monotonic() + 120
            while not client.get(job_id).state.ended and time.monotonic() < deadline:
                time.sleep(0.2)
            record = client.get(job_id)
            client.results(job_id, tmp_path / "results")
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0

    assert record.state == JobState.SUCCEEDED, record.error
    steps = {step.name: step for step in record.steps}
    assert steps["ingest_lexical"].executions == 1          # committed before the crash: not redone
    assert steps["retrieve"].executions in (1, 2) and steps["evaluate"].executions == 1
    assert record.metrics["nDCG@10"] == pytest.approx(0.6762, abs=5e-4)
    assert (tmp_path / "results" / "run.trec").stat().st_size > 0
