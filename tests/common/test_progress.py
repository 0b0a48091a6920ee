"""Progress off a terminal: plain lines in the log (an estimate after the first batch, then one
every IRFORGE_PROGRESS_EVERY seconds), none for short steps."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import subprocess

from irforge.common.progress import EVERY_VARIABLE, LineProgress, line_interval_s


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_long_step_states_its_estimate_after_the_first_measured_batch_then_lines_at_intervals():
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("encode documents", 1000, "text", log, every_s=30, clock=clock)
    for second in range(1, 101):      # 10 texts a second for 100 seconds
        clock.now = float(second)
        bar.update(10)
    bar.close()
    lines = log.getvalue().splitlines()
    # At 2 s (the first batch measured: 98 s left, more than one interval), then 32, 62 and 92 s, then the closing line.
    assert len(lines) == 5, lines
    assert lines[0] == "irforge: encode documents: 20/1,000 texts (2.0%) · 10.0 texts/s · ~98 s left"
    assert lines[1] == "irforge: encode documents: 320/1,000 texts (32.0%) · 10.0 texts/s · ~68 s left"
    assert lines[-1] == "irforge: encode documents: 1,000/1,000 texts (100.0%) · 10.0 texts/s · done in 100 s"


def test_the_pace_leaves_out_the_setup_before_the_first_update():
    """Vectors loaded for 3 s, then 300 queries in half a second: no "~15 min left" from 1 query in 3 s."""
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("retrieving (dense)", 300, "query", log, every_s=10, clock=clock)
    clock.now = 3.0
    bar.update(1)
    clock.now = 3.5
    bar.update(299)
    bar.close()
    assert log.getvalue() == ""


def test_the_last_update_leaves_the_last_line_to_close():
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("encode documents", 100, "text", log, every_s=1, clock=clock)
    for second in (1, 2, 3):
        clock.now = float(second)
        bar.update(50 if second < 3 else 0)   # 50, 100 (all done), then a repeated report of the same count
    bar.close()
    lines = log.getvalue().splitlines()
    assert lines == ["irforge: encode documents: 50/100 texts (50.0%) · 50.0 texts/s",   # no pace measured yet
                     "irforge: encode documents: 100/100 texts (100.0%) · 25.0 texts/s · done in 3 s"]


def test_the_estimate_is_refreshed_from_the_measured_rate():
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("judging holes", 600, "pair", log, every_s=10, clock=clock)
    clock.now = 2.0
    bar.update(10)                    # the first batch: the pace starts here
    clock.now = 4.0
    bar.update(10)                    # 5/s: 580 pairs, 116 s left
    clock.now = 14.0
    bar.update(80)                    # 90 in 12 s: 500 left at 7.5/s, ~67 s
    lines = log.getvalue().splitlines()
    assert lines == ["irforge: judging holes: 20/600 pairs (3.3%) · 5.0 pairs/s · ~116 s left",
                     "irforge: judging holes: 100/600 pairs (16.7%) · 7.5 pairs/s · ~67 s left"]


def test_a_first_batch_slower_than_an_interval_says_where_it_is_without_guessing():
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("encode documents", 1000, "text", log, every_s=10, clock=clock)
    clock.now = 20.0
    bar.update(32)                    # no pace yet (the model's warm-up is in these 20 s): no time left
    assert log.getvalue() == "irforge: encode documents: 32/1,000 texts (3.2%) · 1.6 texts/s\n"


def test_a_short_step_writes_nothing():
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("retrieving (bm25)", 300, "query", log, every_s=10, clock=clock)
    clock.now = 0.2
    bar.update(100)
    clock.now = 0.4
    bar.update(100)                   # 500/s: the 100 left take 0.2 s, less than an interval
    clock.now = 0.6
    bar.update(100)
    bar.close()
    assert log.getvalue() == ""


def test_an_unknown_total_counts_without_a_share_once_an_interval_passed():
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("reading ids", None, "query", log, every_s=2, clock=clock)
    clock.now = 1.0
    bar.update(10)                    # no total, no estimate: wait an interval
    clock.now = 2.0
    bar.update(40)
    assert log.getvalue() == "irforge: reading ids: 50 queries · 40.0 queries/s\n"


def test_bytes_read_as_sizes():
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("download beir/scifact", 4 << 20, "B", log, every_s=5, clock=clock)
    clock.now = 1.0
    bar.update(1 << 19)
    clock.now = 2.0
    bar.update(1 << 19)
    assert log.getvalue() == "irforge: download beir/scifact: 1.0 MiB/4.0 MiB (25.0%) · 512.0 KiB/s · ~6 s left\n"


def test_the_interval_comes_from_the_environment(monkeypatch, caplog):
    monkeypatch.setenv(EVERY_VARIABLE, "2.5")
    assert line_interval_s() == 2.5
    assert LineProgress("x", 1, "doc").every_s == 2.5
    monkeypatch.delenv(EVERY_VARIABLE)
    assert line_interval_s() == 10.0
    for wrong in ("soon", "0", "-3", "nan"):
        monkeypatch.setenv(EVERY_VARIABLE, wrong)
        with caplog.at_level(logging.WARNING, logger="irforge.progress"):
            assert line_interval_s() == 10.0
        assert f"{EVERY_VARIABLE}={wrong!r} is not a positive number of seconds" in caplog.text


def test_lines_go_through_logging_when_a_process_configured_it(caplog):
    clock = Clock()
    with caplog.at_level(logging.INFO, logger="irforge.progress"):
        bar = LineProgress("generating: queries", 100, "call", every_s=5, clock=clock)
        clock.now = 1.0
        bar.update(1)
        clock.now = 2.0
        bar.update(1)
    assert [r.getMessage() for r in caplog.records if r.name == "irforge.progress"] == [
        "irforge: generating: queries: 2/100 calls (2.0%) · 1.0 calls/s · ~98 s left"]


def test_a_real_encode_with_stderr_to_a_file_writes_progress_lines_with_an_eta(scifact_tiny, scifact_subset, tmp_path,
                                                                               irforge_command):
    """`irforge eval --retriever dense` as under nohup or `2> log`: stderr is a file, not a
    terminal; the log must show the encode's lines with the time left (the interval made short
    through the environment, so a small real encode writes several). The command is the
    pre-imported irforge (its own process, given this stderr file and environment; the interval
    is read when the encode starts): a fresh interpreter would only add torch's import."""
    dataset = tmp_path / "scifact-120"   # the tiny set's 3 queries, 120 documents: batches of 32, 64 and 24
    shutil.copytree(scifact_tiny, dataset)
    tiny = (scifact_tiny / "corpus.jsonl").read_text().splitlines()
    ids = {json.loads(line)["_id"] for line in tiny}
    more = [line for line in (scifact_subset / "corpus.jsonl").read_text().splitlines()
            if json.loads(line)["_id"] not in ids][:120 - len(tiny)]
    (dataset / "corpus.jsonl").write_text("\n".join(tiny + more) + "\n")
    log_path = tmp_path / "stderr.log"
    env = {**os.environ, EVERY_VARIABLE: "0.001"}
    with open(log_path, "w") as log:
        done = subprocess.run([*irforge_command, "eval", "--dataset", str(dataset),
                               "--retriever", "dense", "--model", "all-MiniLM-L6-v2",
                               "--embedding-cache", str(tmp_path / "cache.sqlite3"),
                               "--vector-dir", str(tmp_path / "vectors"), "--index-dir", str(tmp_path / "bm25"),
                               "--out", str(tmp_path / "out")], stdout=subprocess.DEVNULL, stderr=log, env=env,
                              timeout=300)
    text = log_path.read_text()
    assert done.returncode == 0, text[-2000:]
    encoding = [line for line in text.splitlines() if line.startswith("irforge: encode documents: ")]
    total = 120
    # The first batch measured (32 + 64 of 120 texts): done/total, share, the pace and the time left; then the end.
    assert any(re.fullmatch(rf"irforge: encode documents: 96/{total} texts \(80\.0%\) · [\d.,]+ texts/s · ~\d+ s left",
                            line) for line in encoding), encoding
    assert re.fullmatch(rf"irforge: encode documents: {total}/{total} texts \(100\.0%\) · [\d.,]+ texts/s · done in "
                        r"\d+ s", encoding[-1]), encoding
    assert b"\r" not in log_path.read_bytes()   # no bar (ours or a library's) redrawn into the file


def test_a_first_batch_of_minutes_is_not_silence():
    """Issue 29, Deliver 3: an endpoint's first concurrent requests took ~4 min on a loaded machine
    and nothing was written until one was answered. The heartbeat writes a line once an interval
    passes without one, saying no batch is done yet, then where the step is."""
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("encode documents", 1000, "text", log, every_s=10, clock=clock, heartbeat=False)
    clock.now = 5.0
    assert bar.beat() == 5.0 and log.getvalue() == ""          # not due: the seconds until it is
    clock.now = 10.0
    assert bar.beat() == 10.0
    clock.now = 12.0
    bar.update(32)                                              # 2 s after the last line: none
    clock.now = 19.0
    assert bar.beat() == 1.0                                    # due 10 s after the last line
    clock.now = 20.0
    bar.beat()
    assert log.getvalue().splitlines() == [
        "irforge: encode documents: 0/1,000 texts (0.0%) · waiting for the first batch (10 s so far)",
        "irforge: encode documents: 32/1,000 texts (3.2%) · 1.6 texts/s"]


def test_the_heartbeat_runs_on_its_own_and_ends_with_the_step():
    import gc
    import threading
    import time

    def beating() -> int:
        return sum(1 for thread in threading.enumerate() if thread.name == "irforge-progress")

    before = beating()
    log = io.StringIO()
    bar = LineProgress("encode documents", 10, "text", log, every_s=0.2)   # the real clock: a heartbeat
    time.sleep(0.5)
    assert "waiting for the first batch" in log.getvalue()
    bar.close()
    written = log.getvalue()
    time.sleep(0.4)
    assert log.getvalue() == written                            # nothing after close
    forgotten = LineProgress("encode queries", 10, "text", io.StringIO(), every_s=0.1)
    del forgotten                                               # never closed (an exception in between)
    gc.collect()
    deadline = time.monotonic() + 5
    while beating() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert beating() == before
