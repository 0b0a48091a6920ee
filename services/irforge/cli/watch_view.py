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
  events flow again;
- off a terminal (`2> file`, `| tee`, a CI log) no bar at all, whose redraws would be one long line
  of carriage returns: a live step writes common.progress's lines instead (every
  IRFORGE_PROGRESS_EVERY seconds, with rate and time left), a replayed one none.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm

from irforge.common.progress import LineProgress
from irforge.orchestrator.store import JobEvent

NOTICES = ("retrying", "waiting", "interrupted", "resumed")


def _progress_text(event: JobEvent) -> str:
    count = f"{event.done}/{event.total}" if event.total else str(event.done)
    return " ".join(part for part in (event.message, count, event.unit) if part)


class WatchView:
    def __init__(self, file: TextIO | None = None, delay_s: float = 0.5, mininterval_s: float = 0.1,
                 bars: bool | None = None, clock: Callable[[], float] = time.monotonic):
        self.file = file or sys.stderr
        self.delay_s, self.mininterval_s = delay_s, mininterval_s
        self.bars = _is_terminal(self.file) if bars is None else bars   # else LineProgress's lines
        self.clock = clock
        self.step: str | None = None
        self.bar: tqdm | LineProgress | None = None
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

    def close(self, finished: bool = False) -> None:
        """The stream ended: a bar still open (a step that failed) stays, showing where it stopped;
        off a terminal, a line says where."""
        if isinstance(self.bar, LineProgress):
            self.bar.stop()
            if not finished and self.last is not None:
                self._write(f"{self.step}: {_progress_text(self.last)} · stopped")
        elif self.bar is not None:
            self.bar.close()
        self.step, self.bar, self.last = None, None, None

    def _start(self, step: str) -> None:
        self.close()
        self.step = step
        if self.bars:
            self.bar = tqdm(desc=step, unit="", file=self.file, dynamic_ncols=True, delay=self.delay_s,
                            mininterval=self.mininterval_s)
        else:
            self.bar = LineProgress(step, None, "item", self.file, clock=self.clock)

    def _progress(self, event: JobEvent) -> None:
        state = (event.message, event.done, event.total, event.unit)
        last = self.last
        if last is not None and state == (last.message, last.done, last.total, last.unit):
            return
        self.last = event
        bar = self.bar
        if isinstance(bar, LineProgress):   # a line when one is due (never for a replayed step: too fast)
            if event.done < bar.done:       # a new attempt counts from 0 again: so does its pace
                bar.stop()
                bar = self.bar = LineProgress(self.step, None, "item", self.file, clock=self.clock)
            bar.description = f"{self.step}: {event.message}" if event.message else self.step
            bar.total, bar.unit = event.total or None, event.unit or "item"
            bar.update(event.done - bar.done)
            return
        bar.total, bar.unit = event.total or None, event.unit
        bar.set_description(event.message or self.step, refresh=False)
        if event.done != bar.n:
            bar.update(event.done - bar.n)   # drawn when tqdm's delay and mininterval allow
        elif bar.last_print_t >= bar.start_t + bar.delay:
            bar.refresh()                    # a new message or total on a bar already shown

    def _finish(self, event: JobEvent) -> None:
        if not isinstance(self.bar, LineProgress):
            self.bar.leave = False           # the line below replaces it
        summary = f"{_progress_text(self.last)} · " if self.last is not None else ""
        self.close(finished=True)
        self._write(f"{event.step}: {summary}done in {event.message}")

    def _write(self, text: str) -> None:
        if self.bars:
            tqdm.write(text, file=self.file)   # above a bar being drawn
        else:
            print(text, file=self.file, flush=True)


def _is_terminal(file: TextIO) -> bool:
    try:
        return file.isatty()
    except (AttributeError, ValueError):   # no isatty, or closed
        return False
