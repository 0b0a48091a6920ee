"""A job's long step writes progress lines (done/total, rate, time left) to the orchestrator's
log, not only to the watchers' event stream: a platform's log says where a 9-minute encode is."""

from __future__ import annotations

import logging

from irforge.common.progress import EVERY_VARIABLE
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator


def test_a_jobs_progress_reaches_the_log_and_the_event_stream(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(EVERY_VARIABLE, "1e-9")   # a line at every update: no waiting in a test
    orchestrator = Orchestrator(tmp_path / "state", ServiceAddresses(), cache_path=tmp_path / "cache.sqlite3")
    try:
        job_id = orchestrator.store.create_job({"name": "t"}, ["encode"])
        bar = orchestrator._progress_factory(job_id, {"step": "encode"})("encode documents", 100, "text")
        with caplog.at_level(logging.INFO, logger="irforge.progress"):
            bar.update(40)
            bar.update(20)
            bar.close()
        lines = [r.getMessage() for r in caplog.records if r.name == "irforge.progress"]
        assert lines[1].startswith(f"irforge: job {job_id} step encode: encode documents: 60/100 texts (60.0%) · ")
        assert lines[1].endswith(" left") and lines[-1].split(" · ")[-1].startswith("done in ")
        progress = [e for e in orchestrator.store.events(job_id) if e.state == "progress"]
        assert progress and (progress[-1].done, progress[-1].total, progress[-1].unit) == (60, 100, "text")
    finally:
        orchestrator.shutdown()
