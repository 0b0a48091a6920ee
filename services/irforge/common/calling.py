"""Calling a team's endpoint robustly: retries, backoff, a request budget and a circuit breaker.

    caller = RobustCaller.from_spec(spec, secrets=[key])
    vectors = caller.call(lambda: post(batch), what="embeddings request 3/40 (passages 129-192)")
    answers = caller.map(search_one, queries, spec.max_concurrency, what=lambda q: f"query {q.query_id}")

Every endpoint kind (embeddings, search, rerank) goes through one RobustCaller per run:

- retryable failures (HTTP 408/429/5xx, timeouts, connection errors, the equivalent gRPC codes)
  are retried up to `max_retries` times with capped exponential backoff and full jitter; a
  Retry-After header (seconds or HTTP-date) replaces the computed delay;
- anything else a server refuses (other 4xx) stops at once with an error naming the request;
- answer errors raised by the request function (EndpointAnswerError) are never retried: a wrong
  answer asked again is usually the same wrong answer;
- every attempt spends one unit of the per-run request budget (RequestBudgetExhausted);
- `circuit_breaker_failures` consecutive failed attempts (429s excepted: a rate limit says the
  endpoint is alive) open the breaker: the run stops with EndpointUnavailable naming the host and
  the last error, and no further request is sent. Counting attempts, not exhausted requests, is
  what makes a dead endpoint fail in seconds instead of after every request's full retry ladder.
- 429s (and gRPC's RESOURCE_EXHAUSTED) are retried, after their Retry-After; but a request that
  used its whole retry ladder on them, with no answer in between, is rate limiting beyond the
  retry budget: the breaker opens ("rate limited: N consecutive 429s"), so that callers that go
  on past one failed request (the judge fails a pair and judges the next) stop sending instead
  of spending every remaining request's ladder on a storm.
- with `units` (the request's work, e.g. its texts) the request gets a timeout scaled to the work
  in flight (irforge.common.pacing.Pace), and a timeout of a request that can be split (`split_on_timeout`)
  raises TimedOut without counting against the breaker: batching.map_batches then sends the
  work in halves. A slow server is given smaller requests and longer waits, never declared dead
  for answering slowly. A timeout message names the settings that help, with their values.

What a failure means (retryable, Retry-After, rate limited, timed out) is
irforge.common.call_failures.classify; the errors raised are irforge.common.call_errors'.

Messages never carry the API key: every text taken from the endpoint passes through `redact`.
"""

from __future__ import annotations

import random as _random
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TypeVar

from irforge.common.api_keys import no_key_hint
from irforge.common.call_errors import EndpointError, EndpointUnavailable, RequestBudgetExhausted
from irforge.common.call_failures import MAX_RETRY_AFTER_S, transport_errors, classify
from irforge.common.pacing import MARGIN, Pace
from irforge.common.redact import redact_text

T = TypeVar("T")
R = TypeVar("R")


def _seconds(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


class TimedOut(EndpointError):
    """A splittable request got no answer in time (not counted against the breaker): send its
    work in smaller requests."""


@dataclass
class CallCounters:
    requests: int = 0        # attempts sent
    retries: int = 0         # attempts after the first of a request
    failures: int = 0        # attempts that failed (retryable or not)
    rate_limited: int = 0    # 429 / RESOURCE_EXHAUSTED answers among the failures
    backoff_s: float = 0.0   # time spent waiting between attempts
    timeouts: int = 0        # attempts with no answer in time, among the failures
    splits: int = 0          # timed-out requests sent again as two halves (batching.map_batches)

    def as_dict(self) -> dict:
        return {"requests": self.requests, "retries": self.retries, "failures": self.failures,
                "rate_limited": self.rate_limited, "backoff_s": round(self.backoff_s, 3),
                "timeouts": self.timeouts, "splits": self.splits}


class RobustCaller:
    def __init__(self, endpoint: str, *, max_retries: int = 5, backoff_initial_s: float = 0.5,
                 backoff_max_s: float = 30.0, request_budget: int | None = None, breaker_failures: int = 5,
                 secrets: Iterable[str | None] = (), sleep: Callable[[float], None] | None = None,
                 random: Callable[[], float] = _random.random, timeout_s: float | None = None,
                 settings: dict[str, object] | None = None, refusal_hint: str = ""):
        self.endpoint = endpoint            # the host, for messages
        # The spec's per-request timeout: the floor of scaled timeouts, and what messages name.
        self.timeout_s = timeout_s
        self.pace = Pace(timeout_s or 60.0)
        # Spec fields a timeout message names with their current values (batching updates
        # batch_size when it halves it); which exist depends on the spec kind.
        self.settings = dict(settings or {})
        self.refusal_hint = refusal_hint    # appended to a 401/403 refusal (e.g. "no key was sent")
        self.max_retries = max_retries
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.request_budget = request_budget
        self.breaker_failures = breaker_failures
        self._secrets = [s for s in secrets if s]
        # Set when the breaker opens or a map fails: requests sleeping before a retry wake up early.
        self._wake = threading.Event()
        self._sleep = sleep or self._wake.wait
        self._random = random
        self._lock = threading.Lock()
        self._consecutive = 0
        self._consecutive_rate_limited = 0   # 429s in a row, whatever request they answered
        self._open_reason: str | None = None
        self.counters = CallCounters()
        # Import the transport libraries now, on the constructing thread: the first classify()
        # runs on a worker thread, and worker threads racing through a first import of httpx saw
        # a half-initialised module (AttributeError instead of a FAILED pair).
        transport_errors()

    @classmethod
    def from_spec(cls, spec, **overrides) -> RobustCaller:
        # The settings a timeout message names: search endpoints send one query a request.
        names = ("timeout_s", "max_concurrency") if getattr(spec, "kind", "").startswith("search-") else \
            ("timeout_s", "batch_size", "max_concurrency")
        settings = {name: getattr(spec, name) for name in names if hasattr(spec, name)}
        options = dict(max_retries=spec.max_retries, backoff_initial_s=spec.backoff_initial_s,
                       backoff_max_s=spec.backoff_max_s, request_budget=spec.request_budget,
                       breaker_failures=spec.circuit_breaker_failures, timeout_s=spec.timeout_s,
                       settings=settings, refusal_hint=no_key_hint(getattr(spec, "api_key_env", None)))
        options.update(overrides)
        return cls(spec.public()["host"], **options)

    def redact(self, text: str) -> str:
        text = redact_text(text)   # URLs a library put in its message, credentials included
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    # -- one request ------------------------------------------------------------------------
    def call(self, fn: Callable[..., T], *, what: str, cancel: threading.Event | None = None,
             units: int | None = None, split_on_timeout: bool = False) -> T:
        """fn() with retries. Raises EndpointError (refused / gave up), EndpointUnavailable,
        RequestBudgetExhausted, or fn's own EndpointAnswerError; other exceptions pass through.
        `cancel` (set by map when another request failed) stops the retry ladder early.
        With `units`, fn takes the timeout in seconds to give this attempt (scaled to the work in
        flight); with `split_on_timeout` too, a timeout raises TimedOut at once, not retried and
        not counted against the breaker."""
        attempt = 0
        while True:
            self._spend(what, attempt)
            ticket = self.pace.start(units) if units is not None else None
            try:
                result = fn(ticket.timeout_s) if ticket is not None else fn()
            except EndpointError:
                if ticket is not None:
                    self.pace.abandoned(ticket)
                self._note_failure(what, "", rate_limited=False, counts=False)
                raise
            except Exception as error:  # classified below, re-raised when unknown
                if ticket is not None:
                    self.pace.abandoned(ticket)
                failure = classify(error)
                if failure is None:
                    raise
                reason = self.redact(failure.reason)
                if failure.timeout:
                    waited = ticket.timeout_s if ticket is not None else self.timeout_s
                    if waited:
                        reason = f"no answer within {_seconds(waited)} s ({reason})"
                    with self._lock:
                        self.counters.timeouts += 1
                    if split_on_timeout:
                        self._note_failure(what, reason, False, counts=False)
                        raise TimedOut(f"endpoint {self.endpoint}: {what}: {reason}") from None
                self._note_failure(what, reason, failure.rate_limited,
                                   counts=failure.retryable and not failure.rate_limited, timeout=failure.timeout)
                if not failure.retryable:
                    unauthorised = reason.startswith(("HTTP 401", "HTTP 403"))
                    hint = f" ({self.refusal_hint})" if self.refusal_hint and unauthorised else ""
                    raise EndpointError(f"endpoint {self.endpoint} refused {what}: {reason}{hint}") from None
                if attempt >= self.max_retries and failure.rate_limited:
                    self._open_rate_limited(what, reason, attempt + 1)
                if attempt >= self.max_retries:
                    raise EndpointError(
                        f"endpoint {self.endpoint}: gave up on {what} after {attempt + 1} attempts; last error: {reason}"
                        + (f". {self.timeout_advice()}" if failure.timeout else "")
                    ) from None
                delay = self._delay(attempt, failure.retry_after, what, reason)
                with self._lock:
                    self.counters.backoff_s += delay
                self._sleep(delay)
                if cancel is not None and cancel.is_set():
                    raise _Cancelled(what) from None
                attempt += 1
                continue
            if ticket is not None:
                self.pace.answered(ticket)
            with self._lock:
                self._consecutive = self._consecutive_rate_limited = 0
            return result

    def timeout_advice(self) -> str:
        """What to change when requests time out, each setting with its current value."""
        settings = dict(self.settings)
        parts = []
        if "timeout_s" in settings:
            parts.append(f"raise `timeout_s` (now {settings.pop('timeout_s'):g}; once the endpoint has answered, a "
                         f"request waits up to {MARGIN:g} times the slowest recent answer for the work in flight)")
        for name in ("batch_size", "max_concurrency"):
            if name in settings:
                parts.append(f"lower `{name}` (now {settings.pop(name)})")
        return ("The endpoint answers too slowly for these settings: " + ", ".join(parts[:-1])
                + (" or " if len(parts) > 1 else "") + parts[-1] + " in the spec") if parts else ""

    def _spend(self, what: str, attempt: int) -> None:
        with self._lock:
            if self._open_reason is not None:
                raise EndpointUnavailable(self._open_reason)
            if self.request_budget is not None and self.counters.requests >= self.request_budget:
                raise RequestBudgetExhausted(
                    f"endpoint {self.endpoint}: the request budget of {self.request_budget} requests is used up "
                    f"({self.counters.retries} of them retries) before {what}; raise `request_budget` in the "
                    f"endpoint spec to go on (what was already fetched is kept in the caches)"
                )
            self.counters.requests += 1
            if attempt:
                self.counters.retries += 1

    def _note_failure(self, what: str, reason: str, rate_limited: bool, counts: bool, timeout: bool = False) -> None:
        with self._lock:
            self.counters.failures += 1
            self.counters.rate_limited += rate_limited
            self._consecutive_rate_limited += rate_limited
            if not counts:
                return
            self._consecutive += 1
            if self._consecutive >= self.breaker_failures and self._open_reason is None:
                slow = self.timeout_advice() if timeout else ""
                advice = (slow + "; or raise `circuit_breaker_failures`" if slow
                          else "Check that it is up and reachable, or raise `circuit_breaker_failures`")
                self._open_reason = (
                    f"endpoint {self.endpoint} {'answers too slowly or not at all' if timeout else 'looks down'}: "
                    f"{self._consecutive} consecutive requests failed (last: {reason}, during {what}); "
                    f"stopping the run. {advice}"
                )
                self._wake.set()
            opened = self._open_reason
        if opened is not None:
            raise EndpointUnavailable(opened)

    def _open_rate_limited(self, what: str, reason: str, attempts: int) -> None:
        """Open the breaker on a rate limit that outlasted a request's retries (see the module's doc)."""
        with self._lock:
            if self._open_reason is None:
                self._open_reason = (
                    f"endpoint {self.endpoint} rate limited: {self._consecutive_rate_limited} consecutive 429s "
                    f"(all {attempts} attempts of {what}; last: {reason}); stopping the run rather than retrying "
                    "further. Wait for the quota to recover, lower `max_concurrency`, or raise `max_retries` / "
                    "`backoff_max_s` in the spec")
                self._wake.set()
            opened = self._open_reason
        raise EndpointUnavailable(opened)

    def _delay(self, attempt: int, retry_after: float | None, what: str, reason: str) -> float:
        if retry_after is not None:
            if retry_after > MAX_RETRY_AFTER_S:
                raise EndpointError(
                    f"endpoint {self.endpoint} asked to retry {what} after {retry_after:.0f} s "
                    f"(more than {MAX_RETRY_AFTER_S:.0f} s: a quota, not a blip); last error: {reason}"
                )
            # A little jitter on top, so requests told the same Retry-After do not return in a herd.
            return retry_after + self._random() * min(self.backoff_initial_s, 1.0)
        return self._random() * min(self.backoff_max_s, self.backoff_initial_s * 2 ** attempt)

    # -- many requests ----------------------------------------------------------------------
    def map(self, fn: Callable[[T], R], items: Iterable[T], max_concurrency: int,
            what: Callable[[T], str] = str) -> list[R]:
        """[call(fn(item)) for item in items] with at most `max_concurrency` in flight, in input
        order. On the first error nothing new is started, requests waiting to retry give up, and
        the first failing item's error (in input order) is raised. One map at a time per caller."""
        items = list(items)
        if max_concurrency <= 1 or len(items) <= 1:
            return [self.call(lambda item=item: fn(item), what=what(item)) for item in items]
        cancel = threading.Event()
        pool = ThreadPoolExecutor(max_workers=min(max_concurrency, len(items)), thread_name_prefix="endpoint")
        futures = []
        try:
            futures += [pool.submit(self.call, lambda item=item: fn(item), what=what(item), cancel=cancel)
                       for item in items]
            wait(futures, return_when=FIRST_EXCEPTION)
        finally:
            cancel.set()
            if any(f.done() and not f.cancelled() and f.exception() is not None for f in futures):
                self.wake()
            pool.shutdown(wait=True, cancel_futures=True)
            self.settle()
        errors = [f.exception() for f in futures if not f.cancelled() and f.exception() is not None]
        real = [e for e in errors if not isinstance(e, _Cancelled)]
        if real or errors:
            raise (real or errors)[0]
        return [future.result() for future in futures]


    def wake(self) -> None:
        """Wake requests sleeping before a retry: the run is stopping (they give up)."""
        self._wake.set()

    def settle(self) -> None:
        """After a map: later requests sleep their backoff again, unless the breaker is open."""
        if self._open_reason is None:
            self._wake.clear()


class _Cancelled(EndpointError):
    """A request abandoned between attempts because another request of the same map failed."""
