"""Progress bars for long steps. Steps take a factory so other front ends (the orchestrator's
WatchJob stream, tests) can observe the same progress without tqdm."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Protocol

from tqdm import tqdm


class Progress(Protocol):
    def update(self, n: int = 1) -> None: ...
    def close(self) -> None: ...


ProgressFactory = Callable[[str, int | None, str], Progress]


def tqdm_progress(description: str, total: int | None, unit: str) -> Progress:
    # disable=None: bars on a terminal, silent in logs and CI.
    return tqdm(total=total, desc=description, unit=unit, file=sys.stderr, disable=None, dynamic_ncols=True)


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def no_progress(description: str, total: int | None, unit: str) -> Progress:
    return _Silent()
