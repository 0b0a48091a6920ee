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

Messages never carry the API key: every text taken from the endpoint passes through `redact`.
"""

from __future__ import annotations

import email.utils
import functools
import random as _random
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TypeVar

from irforge.endpoints.errors import EndpointError, EndpointUnavailable, RequestBudgetExhausted
from irforge.endpoints.keys import no_key_hint

T = TypeVar("T")
R = TypeVar("R")

# A Retry-After beyond this is a quota, not a blip: stop and say so rather than sleep for an hour.
MAX_RETRY_AFTER_S = 300.0
RETRYABLE_HTTP = frozenset({408, 429}) | frozenset(range(500, 600))
# gRPC codes that mean "try again" (RESOURCE_EXHAUSTED is gRPC's 429; INTERNAL/UNKNOWN its 500).
RETRYABLE_GRPC = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED", "INTERNAL", "UNKNOWN"})


class TransientError(Exception):
    """Raised by a request function for a failure worth retrying that no library classifies."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Failure:
    retryable: bool
    reason: str                     # e.g. "HTTP 503: overloaded", "timeout", "connection refused"
    retry_after: float | None = None
    rate_limited: bool = False      # 429 / RESOURCE_EXHAUSTED: retried, never trips the breaker


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds or an HTTP-date; None if unusable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _retry_after_from_headers(headers) -> float | None:
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")  # OpenAI's finer-grained variant, preferred when present
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    return parse_retry_after(headers.get("retry-after"))


def _short(text: object, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


@functools.cache
def _transport_errors() -> tuple[type[BaseException], ...]:
    import httpx
    import openai

    # openai wraps its own transport's errors (httpx2) in APIConnectionError / APITimeoutError.
    return (TimeoutError, ConnectionError, httpx.TransportError, openai.APIConnectionError)


def classify(error: BaseException) -> Failure | None:
    """What a failed attempt means; None for errors that are not transport failures (re-raised)."""
    if isinstance(error, TransientError):
        return Failure(True, str(error), error.retry_after)
    status = getattr(error, "status_code", None)
    response = getattr(error, "response", None)
    if status is None and response is not None:
        status = getattr(response, "status_code", None)
    if isinstance(status, int) and status >= 400:  # openai.APIStatusError, httpx.HTTPStatusError
        body = getattr(error, "body", None)
        if body is None and response is not None:
            try:
                body = response.text
            except Exception:  # noqa: BLE001 - a streamed body may be unreadable; the status suffices
                body = ""
        reason = f"HTTP {status}" + (f": {_short(body)}" if body else "")
        retry_after = _retry_after_from_headers(getattr(response, "headers", None))
        return Failure(status in RETRYABLE_HTTP, reason, retry_after, rate_limited=status == 429)
    code = getattr(error, "code", None)
    if callable(code) and hasattr(error, "details"):  # grpc.RpcError
        name = getattr(code(), "name", str(code()))
        reason = f"gRPC {name}: {_short(error.details() or '')}"
        return Failure(name in RETRYABLE_GRPC, reason, rate_limited=name == "RESOURCE_EXHAUSTED")
    if isinstance(error, _transport_errors()):  # timeouts, refused or reset connections
        cause = error.__cause__ or error.__context__  # openai's "Connection error." hides the why
        detail = f"{error} ({type(cause).__name__}: {cause})" if cause is not None else str(error)
        return Failure(True, f"{type(error).__name__}: {_short(detail)}")
    return None


@dataclass
class CallCounters:
    requests: int = 0        # attempts sent
    retries: int = 0         # attempts after the first of a request
    failures: int = 0        # attempts that failed (retryable or not)
    rate_limited: int = 0    # 429 / RESOURCE_EXHAUSTED answers among the failures
    backoff_s: float = 0.0   # time spent waiting between attempts

    def as_dict(self) -> dict:
        return {"requests": self.requests, "retries": self.retries, "failures": self.failures,
                "rate_limited": self.rate_limited, "backoff_s": round(self.backoff_s, 3)}


class RobustCaller:
    def __init__(self, endpoint: str, *, max_retries: int = 5, backoff_initial_s: float = 0.5,
                 backoff_max_s: float = 30.0, request_budget: int | None = None, breaker_failures: int = 5,
                 secrets: Iterable[str | None] = (), sleep: Callable[[float], None] | None = None,
                 random: Callable[[], float] = _random.random, refusal_hint: str = ""):
        self.endpoint = endpoint            # the host, for messages
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
        self._open_reason: str | None = None
        self.counters = CallCounters()
        # Import the transport libraries now, on the constructing thread: the first classify()
        # runs on a worker thread, and worker threads racing through a first import of httpx saw
        # a half-initialised module (AttributeError instead of a FAILED pair).
        _transport_errors()

    @classmethod
    def from_spec(cls, spec, **overrides) -> RobustCaller:
        options = dict(max_retries=spec.max_retries, backoff_initial_s=spec.backoff_initial_s,
                       backoff_max_s=spec.backoff_max_s, request_budget=spec.request_budget,
                       breaker_failures=spec.circuit_breaker_failures,
                       refusal_hint=no_key_hint(getattr(spec, "api_key_env", None)))
        options.update(overrides)
        return cls(spec.public()["host"], **options)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    # -- one request ------------------------------------------------------------------------
    def call(self, fn: Callable[[], T], *, what: str, cancel: threading.Event | None = None) -> T:
        """fn() with retries. Raises EndpointError (refused / gave up), EndpointUnavailable,
        RequestBudgetExhausted, or fn's own EndpointAnswerError; other exceptions pass through.
        `cancel` (set by map when another request failed) stops the retry ladder early."""
        attempt = 0
        while True:
            self._spend(what, attempt)
            try:
                result = fn()
            except EndpointError:
                self._note_failure(what, "", rate_limited=False, counts=False)
                raise
            except Exception as error:  # classified below, re-raised when unknown
                failure = classify(error)
                if failure is None:
                    raise
                reason = self.redact(failure.reason)
                self._note_failure(what, reason, failure.rate_limited,
                                   counts=failure.retryable and not failure.rate_limited)
                if not failure.retryable:
                    hint = f" ({self.refusal_hint})" if self.refusal_hint and reason.startswith(("HTTP 401", "HTTP 403")) else ""
                    raise EndpointError(f"endpoint {self.endpoint} refused {what}: {reason}{hint}") from None
                if attempt >= self.max_retries:
                    raise EndpointError(
                        f"endpoint {self.endpoint}: gave up on {what} after {attempt + 1} attempts; last error: {reason}"
                    ) from None
                delay = self._delay(attempt, failure.retry_after, what, reason)
                with self._lock:
                    self.counters.backoff_s += delay
                self._sleep(delay)
                if cancel is not None and cancel.is_set():
                    raise _Cancelled(what) from None
                attempt += 1
                continue
            with self._lock:
                self._consecutive = 0
            return result

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

    def _note_failure(self, what: str, reason: str, rate_limited: bool, counts: bool) -> None:
        with self._lock:
            self.counters.failures += 1
            self.counters.rate_limited += rate_limited
            if not counts:
                return
            self._consecutive += 1
            if self._consecutive >= self.breaker_failures and self._open_reason is None:
                self._open_reason = (
                    f"endpoint {self.endpoint} looks down: {self._consecutive} consecutive requests failed "
                    f"(last: {reason}, during {what}); stopping the run. Check that it is up and reachable, "
                    f"or raise `circuit_breaker_failures`"
                )
                self._wake.set()
            opened = self._open_reason
        if opened is not None:
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
                self._wake.set()  # wake requests sleeping before a retry: the run is stopping
            pool.shutdown(wait=True, cancel_futures=True)
            if self._open_reason is None:
                self._wake.clear()
        errors = [f.exception() for f in futures if not f.cancelled() and f.exception() is not None]
        real = [e for e in errors if not isinstance(e, _Cancelled)]
        if real or errors:
            raise (real or errors)[0]
        return [future.result() for future in futures]


class _Cancelled(EndpointError):
    """A request abandoned between attempts because another request of the same map failed."""
