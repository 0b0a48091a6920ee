"""What `irforge watch` shows of a job's events: state changes only, on stderr.

A job's record repeats itself: a progress bar's close() reports the state its last update
reported, a quiet interval reports an unchanged count, and a watch replays every event from the
start (a finished job's whole history arrives in milliseconds). Each redraw was a line in a log
and a flicker on a terminal. So:

- a step's bar is drawn only when its state (message, done, total, unit) changes;
- a bar appears only `delay_s` after its step started (tqdm's delay): a replayed step, read in
  milliseconds, draws no bar at all;
- a step that is done leaves one line: "ingest_lexical: indexing scifact (bm25) 5183/5183 doc ·
  done in 1.2s";
- retrying / waiting / interrupted / resumed: one line each;
- a lost orchestrator: one line per outage, not one per reconnection attempt, and one line when
  events flow again.
"""

from __future__ import annotations

import sys
from typing import TextIO

from tqdm import tqdm

from irforge.orchestrator.store import JobEvent

NOTICES = ("retrying", "waiting", "interrupted", "resumed")


def _progress_text(event: JobEvent) -> str:
    count = f"{event.done}/{event.total}" if event.total else str(event.done)
    return " ".join(part for part in (event.message, count, event.unit) if part)


class WatchView:
    def __init__(self, file: TextIO | None = None, delay_s: float = 0.5, mininterval_s: float = 0.1):
        self.file = file or sys.stderr
        self.delay_s, self.mininterval_s = delay_s, mininterval_s
        self.step: str | None = None
        self.bar: tqdm | None = None
        self.last: JobEvent | None = None   # the current step's last progress event that changed its state
        self.outage = False

    def show(self, event: JobEvent) -> None:
        if self.outage:
            self.outage = False
            self._write("irforge watch: reconnected to the orchestrator")
        if event.state in NOTICES:
            self._write(f"{event.step or 'job'}: {event.state}: {event.message}")
        elif event.step and event.state in ("running", "progress"):
            if event.step != self.step:   # a retried step's new attempt keeps its bar
                self._start(event.step)
            if event.state == "progress":
                self._progress(event)
        elif event.step and event.state == "done" and event.step == self.step:
            self._finish(event)

    def lost(self, error: Exception) -> None:
        """The orchestrator did not answer; follow() retries, and says so at every attempt."""
        if not self.outage:
            self.outage = True
            self._write(f"irforge watch: lost the orchestrator ({error}); reconnecting")

    def close(self) -> None:
        """The stream ended: a bar still open (a step that failed) stays, showing where it stopped."""
        if self.bar is not None:
            self.bar.close()
        self.step, self.bar, self.last = None, None, None

    def _start(self, step: str) -> None:
        self.close()
        self.step = step
        self.bar = tqdm(desc=step, unit="", file=self.file, dynamic_ncols=True, delay=self.delay_s,
                        mininterval=self.mininterval_s)

    def _progress(self, event: JobEvent) -> None:
        state = (event.message, event.done, event.total, event.unit)
        last = self.last
        if last is not None and state == (last.message, last.done, last.total, last.unit):
            return
        self.last = event
        bar = self.bar
        bar.total, bar.unit = event.total or None, event.unit
        bar.set_description(event.message or self.step, refresh=False)
        if event.done != bar.n:
            bar.update(event.done - bar.n)   # drawn when tqdm's delay and mininterval allow
        elif bar.last_print_t >= bar.start_t + bar.delay:
            bar.refresh()                    # a new message or total on a bar already shown

    def _finish(self, event: JobEvent) -> None:
        self.bar.leave = False               # the line below replaces it
        summary = f"{_progress_text(self.last)} · " if self.last is not None else ""
        self.close()
        self._write(f"{event.step}: {summary}done in {event.message}")

    def _write(self, text: str) -> None:
        tqdm.write(text, file=self.file)
