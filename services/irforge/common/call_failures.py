"""What a failed call to an endpoint means: retry it or not, after how long, and why (the reason a
message gives). irforge.common.calling.RobustCaller acts on it.

- HTTP 408/429/5xx, timeouts, connection errors and the equivalent gRPC codes are retryable;
  other refusals (4xx) are not;
- a Retry-After header (seconds or HTTP-date, or OpenAI's retry-after-ms) gives the delay;
- a 429 / RESOURCE_EXHAUSTED is rate limiting (the endpoint is alive), a timeout may only mean
  the request was too big or too queued.
"""

from __future__ import annotations

import email.utils
import functools
import time
from dataclasses import dataclass

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
    rate_limited: bool = False      # 429 / RESOURCE_EXHAUSTED: retried; trips the breaker only past a request's retries
    timeout: bool = False           # no answer in time: the request may only be too big or too queued


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
def transport_errors() -> tuple[type[BaseException], ...]:
    """The transport libraries' connection and timeout errors (imported on first call, then cached)."""
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
        details = error.details() or ""
        reason = f"gRPC {name}: {_short(details)}" + _GRPC_TLS_HINTS.get(_tls_symptom(details), "")
        return Failure(name in RETRYABLE_GRPC, reason, rate_limited=name == "RESOURCE_EXHAUSTED",
                       timeout=name == "DEADLINE_EXCEEDED")
    if isinstance(error, transport_errors()):  # timeouts, refused or reset connections
        cause = error.__cause__ or error.__context__  # openai's "Connection error." hides the why
        detail = f"{error} ({type(cause).__name__}: {cause})" if cause is not None else str(error)
        return Failure(True, f"{type(error).__name__}: {_short(detail)}", timeout=isinstance(error, _timeout_errors()))
    return None


# A plaintext channel to a TLS server sees only "Socket closed"; say what that likely means.
_GRPC_TLS_HINTS = {
    "closed": " (if the endpoint serves TLS, set `tls: true` or `ca_bundle` in its endpoint spec; if it requires "
              "client certificates, `client_cert` and `client_key`)",
    "handshake": " (TLS: `ca_bundle` must be the CA that signed the endpoint's certificate; an endpoint that "
                 "requires client certificates also needs `client_cert` and `client_key`)",
}


def _tls_symptom(details: str) -> str:
    lowered = details.lower()
    if "handshake" in lowered or "certificate" in lowered:
        return "handshake"
    return "closed" if "socket closed" in lowered else ""


@functools.cache
def _timeout_errors() -> tuple[type[BaseException], ...]:
    import httpx
    import openai

    return (TimeoutError, httpx.TimeoutException, openai.APITimeoutError)
