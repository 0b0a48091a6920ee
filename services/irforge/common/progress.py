"""Progress of long steps. Steps take a factory so other front ends (the orchestrator's WatchJob
stream, tests) can observe the same progress without tqdm. On a terminal a tqdm bar; off one (a
log file, CI, a pod's log) plain lines, so a run of many minutes says where it is in its log too."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Protocol

from tqdm import tqdm


class Progress(Protocol):
    def update(self, n: int = 1) -> None: ...
    def close(self) -> None: ...


ProgressFactory = Callable[[str, int | None, str], Progress]


def tqdm_progress(description: str, total: int | None, unit: str) -> Progress:
    """A bar on a terminal; lines in a log (LineProgress)."""
    if not sys.stderr.isatty():
        return LineProgress(description, total, unit, sys.stderr)
    return tqdm(total=total, desc=description, unit=unit, file=sys.stderr, dynamic_ncols=True)


class LineProgress:
    """Progress as plain lines for a log: nothing for a step done within `first_after_s` (short
    steps keep logs quiet), then a line at most every `every_s` seconds, and a last one at close
    once any was written: `irforge: encode documents: 1,024/5,183 texts (19.8%) · 34.1/s · ~2 min left`."""

    def __init__(self, description: str, total: int | None, unit: str, stream, *, first_after_s: float = 10.0,
                 every_s: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self.description, self.total, self.unit, self.stream = description, total, unit, stream
        self.first_after_s, self.every_s, self.clock = first_after_s, every_s, clock
        self.done = 0
        self.started = clock()
        self.last_line: float | None = None

    def update(self, n: int = 1) -> None:
        self.done += n
        now = self.clock()
        due = (now - self.started >= self.first_after_s if self.last_line is None
               else now - self.last_line >= self.every_s)
        if due:
            self._line(now)

    def close(self) -> None:
        if self.last_line is not None:
            self._line(self.clock(), final=True)

    def _line(self, now: float, final: bool = False) -> None:
        self.last_line = now
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        count = f"{self.done:,}/{self.total:,}" if self.total else f"{self.done:,}"
        parts = [f"irforge: {self.description}: {count} {self.unit}s"]
        if self.total:
            parts[0] += f" ({100 * self.done / self.total:.1f}%)"
        parts.append(f"{rate:,.1f}/s")
        if final:
            parts.append(f"done in {elapsed:,.0f} s")
        elif self.total and rate > 0:
            left = (self.total - self.done) / rate
            parts.append(f"~{left / 60:,.0f} min left" if left >= 120 else f"~{left:,.0f} s left")
        print(" · ".join(parts), file=self.stream, flush=True)


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def no_progress(description: str, total: int | None, unit: str) -> Progress:
    return _Silent()
