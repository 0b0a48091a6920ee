"""`irforge watch` prints state changes only: a finished job replays as one line per step, a
progress event that changes nothing draws nothing, no orchestrator at all fails at once naming
`irforge serve`. A real orchestrator, corpus and evaluator on 127.0.0.1 running a real BM25 job."""

from __future__ import annotations

import io
import re
import time

import pytest

from irforge.cli.main import main
from irforge.common.grpc_server import start_server
from irforge.corpus import server as corpus_server
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.core import Evaluator
from irforge.orchestrator import server as orchestrator_server
from irforge.orchestrator.client import OrchestratorClient
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobEvent


@pytest.fixture()
def finished_job(scifact_tiny, tmp_path):
    """(orchestrator address, job id, its events) of a BM25 job that has ended; progress reported
    on every update, so the record holds progress events that repeat the state before them."""
    services = start_server([corpus_server.binding(CorpusService(EmbeddedBackend(tmp_path / "indexes"))),
                             evaluator_server.binding(Evaluator())], port=0)
    address = f"127.0.0.1:{services.port}"
    orchestrator = Orchestrator(tmp_path / "state", ServiceAddresses(corpus=address, evaluator=address),
                                cache_path=tmp_path / "cache.sqlite3", progress_interval_s=0.0).start()
    running = start_server([orchestrator_server.binding(orchestrator)], port=0)
    try:
        with OrchestratorClient(f"127.0.0.1:{running.port}") as client:
            job_id = client.submit(JobSpec.of(dataset=str(scifact_tiny)))
            events = list(client.follow(job_id))
        yield f"127.0.0.1:{running.port}", job_id, events
    finally:
        running.stop(grace=0)
        orchestrator.shutdown()
        services.stop(grace=0)


def test_a_finished_job_replays_as_one_line_per_step(finished_job, capsys):
    address, job_id, events = finished_job
    progress = [e for e in events if e.state == "progress"]
    states = [(e.step, e.message, e.done, e.total) for e in progress]
    assert len(set(states)) < len(states), "the record must hold repeated progress states for this test to mean anything"

    assert main(["watch", job_id, "--server", address]) == 0
    out, err = capsys.readouterr()
    assert f"job {job_id} SUCCEEDED" in out
    assert "\r" not in err                                   # no bar redrawn for events long past
    steps = [e.step for e in events if e.state == "done"]
    lines = err.splitlines()
    assert len(lines) == len(steps) and len(set(lines)) == len(lines), err
    for step, line in zip(steps, lines):
        assert re.fullmatch(rf"{step}: .*done in \d+\.\ds", line), line
    last_ingest = [e for e in progress if e.step == "ingest_lexical"][-1]
    assert f"ingest_lexical: {last_ingest.message} {last_ingest.done}/{last_ingest.total} {last_ingest.unit} · done in" in err


def event(sequence: int, step: str, state: str, **details) -> JobEvent:
    return JobEvent(job_id="j", sequence=sequence, time="", step=step, state=state, **details)


def test_a_progress_event_that_changes_nothing_draws_nothing():
    from irforge.cli.watch_view import WatchView

    out = io.StringIO()
    view = WatchView(out, delay_s=0.0, mininterval_s=0.0, bars=True)   # a terminal's bar
    view.show(event(1, "retrieve", "running", message="attempt 1 of 3"))
    view.show(event(2, "retrieve", "progress", done=10, total=40, message="retrieving (bm25)", unit="query"))
    drawn = out.getvalue()
    for sequence in (3, 4, 5):                   # what close() and a quiet interval report: the same state
        view.show(event(sequence, "retrieve", "progress", done=10, total=40, message="retrieving (bm25)", unit="query"))
    assert out.getvalue() == drawn
    view.show(event(6, "retrieve", "progress", done=40, total=40, message="retrieving (bm25)", unit="query"))
    assert out.getvalue() != drawn and "40/40" in out.getvalue()


def test_off_a_terminal_a_live_step_writes_lines_with_its_pace_and_never_a_bar(monkeypatch):
    """Issue 29, Deliver 3: `irforge watch 2> file` drew tqdm's bar into the file (one line of
    carriage returns). Off a terminal a live step now writes progress lines every
    IRFORGE_PROGRESS_EVERY seconds with rate and time left; a step that ends says so once; a step
    the stream left unfinished says where it stopped. Expectations are hand counts of a scripted
    clock: 100 docs every 4 s, a line every 10 s."""
    from irforge.cli.watch_view import WatchView

    monkeypatch.setenv("IRFORGE_PROGRESS_EVERY", "10")
    now = [0.0]
    out = io.StringIO()
    view = WatchView(out, clock=lambda: now[0])
    assert view.bars is False   # StringIO is not a terminal
    view.show(event(1, "ingest", "running", message="attempt 1 of 3"))
    for sequence, done in enumerate(range(100, 1001, 100), start=2):
        now[0] += 4.0
        view.show(event(sequence, "ingest", "progress", done=done, total=1000, message="indexing (bm25)", unit="doc"))
    view.show(event(20, "ingest", "done", message="40.0s"))
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    # pace measured from the first event (t=4 s, 100 docs): 25 docs/s. A line is due as soon as the
    # estimate passes 10 s (t=8 s: 800 left, ~32 s), then 10 s after the last one (t=20, t=32 s).
    assert lines == ["irforge: ingest: indexing (bm25): 200/1,000 docs (20.0%) · 25.0 docs/s · ~32 s left",
                     "irforge: ingest: indexing (bm25): 500/1,000 docs (50.0%) · 25.0 docs/s · ~20 s left",
                     "irforge: ingest: indexing (bm25): 800/1,000 docs (80.0%) · 25.0 docs/s · ~8 s left",
                     "ingest: indexing (bm25) 1000/1000 doc · done in 40.0s"]

    view.show(event(21, "retrieve", "progress", done=30, total=300, message="retrieving (bm25)", unit="query"))
    view.close()   # the stream ended mid-step (a failed job)
    assert out.getvalue().splitlines()[-1] == "retrieve: retrieving (bm25) 30/300 query · stopped"


def test_watch_with_no_orchestrator_fails_at_once_naming_irforge_serve(unused_port, capsys):
    """Issue 29: with no orchestrator ever started, watch waited its whole reconnect timeout (300 s)
    in silence and then named `irforge service`. Reconnecting is for an orchestrator lost mid-watch
    (tests/faults/test_job_status.py: one line per outage, across a real restart)."""
    started = time.monotonic()
    assert main(["watch", "0123456789ab", "--server", f"127.0.0.1:{unused_port}", "--reconnect-timeout", "60"]) == 2
    err = capsys.readouterr().err
    assert time.monotonic() - started < 10, "watch waited for an orchestrator that was never there"
    assert f"no irforge server answering at 127.0.0.1:{unused_port}" in err or "127.0.0.1" in err, err
    assert "`irforge serve`" in err and "reconnecting" not in err, err
    assert main(["submit", "--server", f"127.0.0.1:{unused_port}", "--dataset", "x", "--retriever", "bm25"]) == 2
    assert "`irforge serve`" in capsys.readouterr().err
