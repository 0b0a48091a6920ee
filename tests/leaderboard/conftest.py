"""A platform with a closed-book SciFact slice: an orchestrator over real corpus and evaluator
services, its leaderboard, and identities to call it as (the accounts room's Identity, bound with
acting_as as a front door would)."""

from __future__ import annotations

import shutil
import time

import pytest

from irforge.accounts.identity import OPERATOR, TEAM, Identity, acting_as
from irforge.app.leaderboard import Leaderboard
from irforge.data import BeirDataset
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator

OPERATOR_ID = Identity("ops", OPERATOR, "token")
TEAM_A = Identity("team-a", TEAM, "token")
TEAM_B = Identity("team-b", TEAM, "token")


@pytest.fixture(scope="session")
def registered_state(tmp_path_factory, scifact_subset):
    """A state dir where an operator registered `scifact` closed from the 40-query SciFact slice
    (once per session: each platform starts from a copy of it)."""
    state = tmp_path_factory.mktemp("registered") / "state"
    orchestrator = Orchestrator(state, ServiceAddresses(), cache_path=state / "cache.sqlite3")
    leaderboard = Leaderboard(orchestrator)
    with acting_as(OPERATOR_ID):
        leaderboard.register_dataset("scifact", scifact_subset, task="qa", language="en", closed=True)
    leaderboard.close()
    orchestrator.shutdown(wait=True)
    shutil.rmtree(state / "leaderboard" / "indexes")
    return state


@pytest.fixture()
def platform(tmp_path, services_address, registered_state):
    """(orchestrator, leaderboard) over real corpus and evaluator services, `scifact` registered
    closed from the SciFact slice; the platform's daily limit 10."""
    state = tmp_path / "state"
    state.mkdir()
    shutil.copytree(registered_state / "leaderboard", state / "leaderboard")
    shutil.copyfile(registered_state / "leaderboard.sqlite3", state / "leaderboard.sqlite3")
    services = ServiceAddresses(corpus=services_address, evaluator=services_address, call_timeout_s=60.0,
                                long_call_timeout_s=60.0)
    orchestrator = Orchestrator(state, services, cache_path=tmp_path / "cache.sqlite3", backoff_s=0.05,
                                progress_interval_s=0.0).start()
    leaderboard = Leaderboard(orchestrator, daily_limit=10)
    yield orchestrator, leaderboard
    orchestrator.shutdown(wait=True)
    leaderboard.close()


def hidden_qrels(scifact_subset) -> dict[str, dict[str, int]]:
    return BeirDataset.open(scifact_subset).qrels("test")


def wait_done(orchestrator, job_id: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    list(orchestrator.watch(job_id, is_active=lambda: time.monotonic() < deadline))
    record = orchestrator.get(job_id)
    assert record.state.ended, f"job {job_id} still {record.state.value}"
    return record
