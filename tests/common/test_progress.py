"""Progress off a terminal: plain lines in the log, none for short steps."""

from __future__ import annotations

import io

from irforge.common.progress import LineProgress


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_long_step_writes_lines_at_intervals_and_a_last_one():
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("encode documents", 1000, "text", log, first_after_s=10, every_s=30, clock=clock)
    for second in range(1, 101):      # 10 texts a second for 100 seconds
        clock.now = float(second)
        bar.update(10)
    bar.close()
    lines = log.getvalue().splitlines()
    # At 10 s, then 40, 70 and 100 s (the 30 s interval), then the closing line.
    assert len(lines) == 5, lines
    assert lines[0] == "irforge: encode documents: 100/1,000 texts (10.0%) · 10.0/s · ~90 s left"
    assert lines[-1] == "irforge: encode documents: 1,000/1,000 texts (100.0%) · 10.0/s · done in 100 s"


def test_a_short_step_writes_nothing():
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("retrieving (bm25)", 300, "query", log, clock=clock)
    clock.now = 0.5
    bar.update(300)
    bar.close()
    assert log.getvalue() == ""


def test_an_unknown_total_counts_without_a_share():
    clock, log = Clock(), io.StringIO()
    bar = LineProgress("reading ids", None, "doc", log, first_after_s=0, clock=clock)
    clock.now = 2.0
    bar.update(50)
    assert log.getvalue() == "irforge: reading ids: 50 docs · 25.0/s\n"
