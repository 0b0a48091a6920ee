"""Progress of long steps. Steps take a factory so other front ends (the orchestrator's WatchJob
stream, tests) can observe the same progress without tqdm. On a terminal a tqdm bar; off one (a
log file, `| tee`, CI, a pod's or a job's log) plain lines through logging, so a run of many
minutes says in its log how much is done, how fast and how long is left.

The line interval is `IRFORGE_PROGRESS_EVERY` seconds (default 10)."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Protocol

from tqdm import tqdm

EVERY_VARIABLE = "IRFORGE_PROGRESS_EVERY"
DEFAULT_EVERY_S = 10.0
log = logging.getLogger("irforge.progress")


class Progress(Protocol):
    def update(self, n: int = 1) -> None: ...
    def close(self) -> None: ...


ProgressFactory = Callable[[str, int | None, str], Progress]


def tqdm_progress(description: str, total: int | None, unit: str) -> Progress:
    """A bar on a terminal; lines in a log (LineProgress). Unit "B": sizes in KiB/MiB."""
    if not sys.stderr.isatty():
        return LineProgress(description, total, unit)
    return tqdm(total=total, desc=description, unit=unit, file=sys.stderr, dynamic_ncols=True,
                unit_scale=unit == "B", unit_divisor=1024)


def quiet_library_bars() -> None:
    """Off a terminal, turn off the model libraries' own bars (transformers' "Loading weights"),
    which would be redrawn into a log as one long line of carriage returns; on a terminal they stay.
    Called where a model is loaded."""
    if sys.stderr.isatty():
        return
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:   # an install without the model libraries loads no model either
        return
    transformers_logging.disable_progress_bar()


def line_interval_s() -> float:
    """Seconds between two progress lines: IRFORGE_PROGRESS_EVERY, or 10."""
    value = os.environ.get(EVERY_VARIABLE, "").strip()
    if not value:
        return DEFAULT_EVERY_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:   # also NaN
        log.warning("%s=%r is not a positive number of seconds; using %g", EVERY_VARIABLE, value, DEFAULT_EVERY_S)
        return DEFAULT_EVERY_S
    return seconds


class LineProgress:
    """Progress as plain lines for a log, e.g.
    `irforge: encode documents: 1,024/5,183 texts (19.8%) · 34.1 texts/s · ~2 min left`.

    - The pace is measured from the first update on: what came before it (loading a model or
      vectors, warming up) is not the work's pace, and counting it made a 4-second step announce
      "~16 min left".
    - As soon as a measured batch says the step will outlast one interval, a line stating the
      work and the estimate; a step that will be done sooner writes nothing (short steps keep
      logs quiet). Then a line every `every_s` seconds, the estimate refreshed, and a last one at
      close once any was written.
    - Between updates a heartbeat (a thread, with the real clock only) writes a line once an
      interval passed without one: a first batch that takes minutes (an endpoint's concurrent
      requests, a loaded machine) says "waiting for the first batch" instead of nothing.
    - Lines go to `stream` when given (tests), else to logging ("irforge.progress", INFO): the
      orchestrator's and the services' log handlers carry them with the job id. A process that
      configured no logging (the CLI) gets them on stderr."""

    def __init__(self, description: str, total: int | None, unit: str, stream=None, *,
                 every_s: float | None = None, clock: Callable[[], float] = time.monotonic,
                 heartbeat: bool | None = None):
        self.description, self.total, self.unit, self.stream = description, total, unit, stream
        self.every_s = line_interval_s() if every_s is None else every_s
        self.clock = clock
        self.done = 0
        self.started = clock()
        self.first: tuple[float, int] | None = None   # (when, done) at the first update: the pace's start
        self.last_line: float | None = None
        self._lock = threading.Lock()                 # updates may come from several threads (endpoint requests)
        self._stopped = threading.Event()
        if (clock is time.monotonic) if heartbeat is None else heartbeat:
            # The thread holds the bar weakly: one nobody closes (an exception between creating and
            # using it) is collected, and its thread ends at its next beat.
            threading.Thread(target=_heartbeat, args=(weakref.ref(self), self._stopped, self.every_s),
                             name="irforge-progress", daemon=True).start()

    def update(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            now = self.clock()
            if self.first is None:
                self.first = (now, self.done)
            if self.last_line is not None:
                due = now - self.last_line >= self.every_s
            else:
                left = self._left(now)
                due = now - self.started >= self.every_s or (left is not None and left >= self.every_s)
            if due and not (self.total and self.done >= self.total):   # all done: close() says so, with the time taken
                self._line(now)

    def stop(self) -> None:
        """No more lines, not even the last one (the caller writes its own summary)."""
        self._stopped.set()

    def close(self) -> None:
        self.stop()
        with self._lock:
            if self.last_line is not None:
                self._line(self.clock(), final=True)

    def beat(self) -> float:
        """The heartbeat: a line when an interval passed without one; the seconds until the next is due."""
        with self._lock:
            if self._stopped.is_set():
                return self.every_s
            now = self.clock()
            wait = (self.last_line if self.last_line is not None else self.started) + self.every_s - now
            if wait > 0:
                return wait
            if not (self.total and self.done >= self.total):
                self._line(now)
            return self.every_s

    def _measured(self, now: float) -> bool:
        """Whether work was done since the first update, so a pace can be measured."""
        return self.first is not None and now > self.first[0] and self.done > self.first[1]

    def _rate(self, now: float) -> float:
        """Units a second since the first update; before a second one, over all the time so far."""
        if self._measured(now):
            return (self.done - self.first[1]) / (now - self.first[0])
        return self.done / max(now - self.started, 1e-9)

    def _left(self, now: float) -> float | None:
        """Seconds left at the measured pace; None without a total or before a pace is measured
        (no estimate rather than a wrong one)."""
        rate = self._rate(now)
        return (self.total - self.done) / rate if self.total and rate > 0 and self._measured(now) else None

    def _line(self, now: float, final: bool = False) -> None:
        self.last_line = now
        elapsed = max(now - self.started, 1e-9)
        if self.done == 0 and not final:   # the heartbeat before any batch: no rate to state
            text = (progress_line(self.description, 0, self.total, self.unit, None, None)
                    + f" · waiting for the first batch ({_duration(elapsed)} so far)")
        else:
            text = progress_line(self.description, self.done, self.total, self.unit, self._rate(now),
                                 elapsed if final else self._left(now), final=final)
        if self.stream is not None:
            print(text, file=self.stream, flush=True)
        elif log.hasHandlers():
            log.info(text)
        else:
            print(text, file=sys.stderr, flush=True)


def _heartbeat(bar_ref, stopped: threading.Event, every_s: float) -> None:
    wait = every_s
    while not stopped.wait(max(wait, 0.05)):
        bar = bar_ref()
        if bar is None:
            return
        wait = bar.beat()
        del bar   # not held while waiting


def progress_line(description: str, done: int, total: int | None, unit: str, rate: float | None,
                  seconds: float | None, final: bool = False) -> str:
    """`irforge: DESCRIPTION: done/total units (share) · rate units/s · ~time left` (or `done in`
    when `final`; no time without `seconds`): the one wording of a progress line, for LineProgress
    and `irforge watch` alike."""
    count = f"{_amount(done, unit)}/{_amount(total, unit)}" if total else _amount(done, unit)
    parts = [f"irforge: {description}: {count}{_plural(unit)}"]
    if total:
        parts[0] += f" ({100 * done / total:.1f}%)"
    if rate is not None:
        parts.append(f"{_amount(rate, unit, decimals=1)}{_plural(unit)}/s")
    if seconds is not None:
        parts.append(f"done in {_duration(seconds)}" if final else f"~{_duration(seconds)} left")
    return " · ".join(parts)


def _amount(value: float, unit: str, decimals: int = 0) -> str:
    if unit == "B":   # bytes read best as sizes
        for size, name in ((1 << 30, " GiB"), (1 << 20, " MiB"), (1 << 10, " KiB")):
            if value >= size:
                return f"{value / size:,.1f}{name}"
        return f"{value:,.0f} B"
    return f"{value:,.{decimals}f}"


def _plural(unit: str) -> str:
    if unit == "B":
        return ""
    return f" {unit[:-1]}ies" if unit.endswith("y") else f" {unit}s"


def _duration(seconds: float) -> str:
    if seconds >= 5400:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 60:,.0f} min" if seconds >= 120 else f"{seconds:,.0f} s"


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def no_progress(description: str, total: int | None, unit: str) -> Progress:
    return _Silent()
