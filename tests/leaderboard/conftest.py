"""A platform with a closed-book SciFact slice: an orchestrator over real corpus and evaluator
services, its leaderboard, and identities to call it as (the accounts room's Identity, bound with
acting_as as a front door would)."""

from __future__ import annotations

import logging
import shutil
import time
from contextlib import ExitStack
from types import SimpleNamespace

import pytest

from irforge.accounts import audit
from irforge.accounts.front_door import open_front_door
from irforge.accounts.identity import OPERATOR, TEAM, Identity, acting_as
from irforge.app.leaderboard import Leaderboard
from irforge.common.grpc_server import start_server
from irforge.data import BeirDataset
from irforge.leaderboard import server as leaderboard_server
from irforge.leaderboard.disclosure import scrub_logs
from irforge.orchestrator import server as orchestrator_server
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


@pytest.fixture()
def served(platform):
    """The platform's gRPC server as `irforge service orchestrator --auth tokens` builds it (the
    accounts front door's caller check, the Orchestrator with the leaderboard's disclosure, the
    Accounts and Leaderboard services), a log file under the state dir with the log scrubber, and
    team-a's token (and an operator's)."""
    orchestrator, leaderboard = platform
    log_file = orchestrator.state_dir / "logs" / "orchestrator.log"
    log_file.parent.mkdir()
    handler = logging.FileHandler(log_file)
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    scrubber = scrub_logs(leaderboard.disclosure, root)
    with ExitStack() as stack:
        door = open_front_door(orchestrator.state_dir, "tokens", stack)
        leaderboard.team_limit = lambda team: door.store.team(team).daily_submission_limit   # as the service does
        audit.filter_details(leaderboard.disclosure.scrub_all)                                # as the service does
        stack.callback(audit.filter_details, None)
        running = start_server([orchestrator_server.binding(orchestrator, leaderboard.disclosure), door.binding,
                                leaderboard_server.binding(leaderboard)], port=0, interceptors=(door.check,))
        yield SimpleNamespace(orchestrator=orchestrator, leaderboard=leaderboard, address=f"127.0.0.1:{running.port}",
                              log_file=log_file, accounts=door.store, team_token=door.store.create_team("team-a"),
                              operator_token=door.store.add_operator_token("ops"))
        running.stop(grace=0)
    root.removeHandler(handler)
    root.setLevel(level)
    for each in root.handlers:
        each.removeFilter(scrubber)
    handler.close()


def hidden_qrels(scifact_subset) -> dict[str, dict[str, int]]:
    return BeirDataset.open(scifact_subset).qrels("test")


def wait_done(orchestrator, job_id: str, timeout: float = 120.0):
    """Follow a job to its end, as an operator (a process with a front door refuses unbound calls)."""
    deadline = time.monotonic() + timeout
    with acting_as(OPERATOR_ID):
        list(orchestrator.watch(job_id, is_active=lambda: time.monotonic() < deadline))
        record = orchestrator.get(job_id)
    assert record.state.ended, f"job {job_id} still {record.state.value}"
    return record
