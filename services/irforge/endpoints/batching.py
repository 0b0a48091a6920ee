"""Sending a list of texts in batches that fit the endpoint: the batch size adapts to timeouts.

    vectors = map_batches(caller, lambda start, end, what, timeout: send(texts[start:end], what, timeout),
                          len(texts), batch_size=64, max_concurrency=4, what=describe, on_answer=bar.update)

- Slow start: one request of at most FIRST_BATCH texts until the endpoint has answered one (the
  timeouts are then measured, pacing.Pace), then `batch_size` texts, `max_concurrency` in flight.
  A first full batch that times out would leave the server computing it while its halves wait
  behind it, and time out again: a small first request is measured before that can happen.
- A request that times out is not a failure yet: its range is sent again as two halves and every
  later request is at most that half's size. Only a request of one text that times out is
  retried and counted against the breaker like any failure (RobustCaller.call).
- `on_answer(n)` is called as each request is answered, so progress moves per request.
Results come back in input order whatever the order of the answers.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from irforge.common.calling import RobustCaller, TimedOut

R = TypeVar("R")

FIRST_BATCH = 8


def map_batches(caller: RobustCaller, fn: Callable[[int, int, str, float], R], count: int, *, batch_size: int,
                max_concurrency: int, what: Callable[[int, int, int, int], str],
                on_answer: Callable[[int], None] | None = None) -> list[R]:
    """[fn(start, end, what, timeout) for consecutive ranges covering range(count)], in input order.

    `what(number, total, start, end)` names a request in messages (total is the current
    estimate: it grows when a request is split). Raises the first error, as RobustCaller.call."""
    if count <= 0:
        return []
    state = _Batches(count, batch_size)
    results: dict[int, R] = {}
    cancel = threading.Event()
    running: dict[Future, tuple[int, int]] = {}
    pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="endpoint")
    failed = False
    try:
        while state.left() or running:
            measured = caller.pace.measured
            limit = max_concurrency if measured else 1
            while len(running) < limit and state.left():
                start, end = state.next(None if measured else FIRST_BATCH)
                name = what(state.sent, state.sent + state.left(), start, end)
                future = pool.submit(caller.call, functools.partial(fn, start, end, name), what=name, cancel=cancel,
                                     units=end - start, split_on_timeout=end - start > 1)
                running[future] = (start, end)
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: running[f]):
                start, end = running.pop(future)
                error = future.exception()
                if isinstance(error, TimedOut):
                    state.split(start, end)
                    caller.counters.splits += 1
                    caller.settings["batch_size"] = f"{state.size}, halved from {batch_size} after timeouts"
                elif error is not None:
                    failed = True
                    raise error
                else:
                    results[start] = future.result()
                    if on_answer is not None:
                        on_answer(end - start)
    finally:
        cancel.set()
        if failed:
            caller.wake()  # requests sleeping before a retry give up: the run is stopping
        pool.shutdown(wait=True, cancel_futures=True)
        caller.settle()
    return [results[start] for start in sorted(results)]


class _Batches:
    """The ranges still to send: halves of timed-out requests first, then the rest in order."""

    def __init__(self, count: int, size: int):
        self.count = count
        self.size = size
        self.cursor = 0
        self.sent = 0
        self.halves: deque[tuple[int, int]] = deque()

    def left(self) -> int:
        """Requests still to send at the current size."""
        return len(self.halves) + math.ceil((self.count - self.cursor) / self.size)

    def next(self, at_most: int | None = None) -> tuple[int, int]:
        self.sent += 1
        if self.halves:
            return self.halves.popleft()
        size = self.size if at_most is None else min(self.size, at_most)
        start, self.cursor = self.cursor, min(self.count, self.cursor + size)
        return start, self.cursor

    def split(self, start: int, end: int) -> None:
        middle = (start + end) // 2
        self.halves.extendleft([(middle, end), (start, middle)])  # in input order, before the rest
        self.size = max(1, min(self.size, middle - start))
