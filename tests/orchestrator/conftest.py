"""Real corpus and evaluator services on loopback gRPC, and orchestrators over them."""

from __future__ import annotations

import time

import pytest
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator


@pytest.fixture()
def make_orchestrator(tmp_path, services_address):
    """make_orchestrator(**options) -> a started Orchestrator on tmp_path/state; shut down after the test."""
    made = []

    def make(state_dir=None, corpus=None, evaluator=None, call_timeout_s=30.0, **options):
        services = ServiceAddresses(corpus=corpus or services_address, evaluator=evaluator or services_address,
                                    call_timeout_s=call_timeout_s, long_call_timeout_s=call_timeout_s)
        options = {"backoff_s": 0.05, "progress_interval_s": 0.0, **options}
        orchestrator = Orchestrator(state_dir or tmp_path / "state", services, cache_path=tmp_path / "cache.sqlite3", **options)
        made.append(orchestrator)
        return orchestrator.start()

    yield make
    for orchestrator in made:
        orchestrator.shutdown(wait=True)


def wait_for(orchestrator, job_id, timeout=120.0):
    """Follow the job to its end (the watch stream ends with it); its final record and events.
    Fails, rather than hangs, if the job has not ended within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    events = list(orchestrator.watch(job_id, is_active=lambda: time.monotonic() < deadline))
    record = orchestrator.get(job_id)
    assert record.state.ended, f"job {job_id} still {record.state.value} after {timeout}s: {events[-3:]}"
    return record, events
