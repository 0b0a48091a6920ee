"""Cancel a client stream that stops sending: an idle stream holds a server worker thread.

gRPC's Python server reads a client stream with a blocking iterator that no deadline bounds unless
the client set one. IdleWatchdog cancels the call when no message has arrived for `timeout_s`;
the blocked read then raises and the handler's thread is free again. Only time spent waiting
for the client counts: a server busy with what it received (a long commit) is not idle.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")


class IdleWatchdog:
    def __init__(self, context, timeout_s: float):
        self.context = context
        self.timeout_s = timeout_s
        self._waiting_since: float | None = None
        self._done = threading.Event()
        self.fired = False
        self._thread = threading.Thread(target=self._watch, name="idle-watchdog", daemon=True)

    def __enter__(self) -> "IdleWatchdog":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> bool:
        self._done.set()
        return False

    def waiting(self, yes: bool) -> None:
        self._waiting_since = time.monotonic() if yes else None

    def _watch(self) -> None:
        while not self._done.wait(min(1.0, self.timeout_s / 4)):
            since = self._waiting_since
            if since is not None and time.monotonic() - since > self.timeout_s:
                self.fired = True
                self.context.cancel()
                return


def watched(messages: Iterator[T], watchdog: IdleWatchdog) -> Iterator[T]:
    """`messages`, with the watchdog told whenever the reader is waiting for the next one."""
    iterator = iter(messages)
    while True:
        watchdog.waiting(True)
        try:
            message = next(iterator)
        except StopIteration:
            return
        finally:
            watchdog.waiting(False)
        yield message
