"""The one mechanism between irforge's error types and gRPC status codes, used by servers and clients,
so a remote call raises the same exception type, with the same message, as an in-process one.

Which status each type travels as is declared by its own room, beside the type, with
`irforge.common.error_status.register_status` (corpus/errors.py, judge/errors.py, ...)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from irforge.common.error_status import registered_type, status_name
from irforge.common.redact import redact_text

if TYPE_CHECKING:   # grpc is the platform extra's: imported where a status is made or read
    import grpc


class RemoteError(RuntimeError):
    """A server error with no irforge type (a bug on the server): code and details kept."""


class ServiceUnavailable(ConnectionError):
    """An irforge server cannot be reached or did not answer in time."""


def status_for(error: Exception) -> grpc.StatusCode:
    """The status of the most specific registered type the error is an instance of; INTERNAL if none."""
    import grpc

    name = status_name(error)
    return grpc.StatusCode[name] if name else grpc.StatusCode.INTERNAL


# A status's details travel in a trailer, and a client refuses trailers over 16 KiB (8 KiB soft),
# percent-encoded: one longer message (a 100 KB id quoted in it) reached the caller as
# RESOURCE_EXHAUSTED instead of the error. What users give (ids, paths, lines) is quoted in
# messages, so each long quoted value is cut to its start and its length, and the whole is capped.
MAX_QUOTED_CHARS = 120
MAX_DETAILS_BYTES = 2000
_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")


def bounded_text(text: str, max_quoted: int = MAX_QUOTED_CHARS, max_bytes: int = MAX_DETAILS_BYTES) -> str:
    """`text` with every quoted value longer than `max_quoted` characters cut ("'abc…' (100000
    characters)") and the whole cut to `max_bytes` of UTF-8: what an error may carry to a client."""
    def cut(match: re.Match) -> str:
        quoted = match[0]
        if len(quoted) <= max_quoted + 2:
            return quoted
        return f"{quoted[:max_quoted + 1]}…{quoted[0]} ({len(quoted) - 2} characters)"

    text = _QUOTED.sub(cut, text)
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    kept = encoded[:max_bytes - 64].decode("utf-8", errors="ignore")
    return f"{kept}… ({len(text)} characters in all)"


def status_details(error: BaseException) -> str:
    """The details a server sends for `error`: its class name (the client rebuilds the type from it),
    its message without URL credentials, bounded to what a status can carry (bounded_text)."""
    return bounded_text(redact_text(f"{type(error).__name__}: {error}"))


def abort(context: grpc.ServicerContext, error: BaseException):
    """End the call with `error`'s registered status and bounded details: the one place an irforge
    server sets a status from an error."""
    context.abort(status_for(error), status_details(error))


class RequestStream:
    """The requests of a client-streaming call, remembering why producing them failed. gRPC reads
    them on its own thread and reports a failure there (a qrels value protobuf refuses, a bad corpus
    line, a cancel) only as UNKNOWN "Exception iterating requests!": the caller raises the real
    error instead (`raise_from_rpc(error, address, sent=stream)`)."""

    def __init__(self, requests: Iterable):
        self._requests = requests
        self.failure: BaseException | None = None

    def __iter__(self) -> Iterator:
        try:
            yield from self._requests
        except GeneratorExit:
            raise  # gRPC stopped reading (the server answered with an error): its error counts
        except BaseException as error:
            self.failure = error
            raise


def grpc_method(method):
    """Wrap a servicer method: irforge errors become status codes with the error's message.

    The error's class name is prefixed ("CorpusNotFound: ...") so the client can rebuild the type.
    """

    @functools.wraps(method)
    def wrapper(self, request, context):
        try:
            return method(self, request, context)
        except Exception as error:  # noqa: BLE001 - every error must reach the client as a status
            abort(context, error)

    return wrapper


# What to run when nothing answers: the whole platform on this machine is `irforge serve` (one
# service alone, as a deployment runs them, is `irforge service NAME`).
START_HINT = "start the platform with `irforge serve` (or one service with `irforge service NAME`), or point --server at a running one"


def raise_from_rpc(error: grpc.RpcError, address: str, sent: RequestStream | None = None, channel: str = "") -> None:
    """Re-raise an RpcError as the irforge error the server raised (or, with `sent`, the error that
    stopped the client producing its requests). `channel` (common.tls.CHANNELS) names the service
    in the messages of failures that are the connection's, with its own TLS setting."""
    import grpc

    if sent is not None and sent.failure is not None:
        raise sent.failure from None
    code, details = error.code(), error.details() or ""
    type_name, _, message = details.partition(": ")
    error_type = registered_type(type_name)
    if error_type is not None:
        raise _rebuild(error_type, message) from None
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        raise ServiceUnavailable(
            f"no irforge {f'{channel} service' if channel else 'server'} answering at {address} ({code.name}: {details}); "
            + (_tls_hint(details, channel) or START_HINT)
        ) from None
    raise RemoteError(f"{f'the {channel} service at ' if channel else ''}{address}: {code.name}: {details}") from None


def _tls_hint(details: str, channel: str = "") -> str:
    """What to do when the failure looks like TLS on one side only, or a certificate that does not verify."""
    lowered = details.lower()
    alone = (f"; for this channel alone: --channel-tls {channel}=PEM or {channel}=plaintext ($IRFORGE_TLS_CHANNELS)"
             if channel else "")
    if "certificate" in lowered or "handshake" in lowered or "ssl" in lowered:
        return ("the TLS handshake failed: trust the CA that signed the server's certificate (--tls-ca / "
                "$IRFORGE_TLS_CA), and if it requires client certificates give one (--tls-client-cert / --tls-client-key); "
                "if the server speaks plaintext, do not call it over TLS" + alone)
    if "socket closed" in lowered or "connection reset" in lowered:
        return ("the server closed the connection: if it serves TLS, call it with --tls-ca / $IRFORGE_TLS_CA "
                "(and --tls-client-cert / --tls-client-key if it requires client certificates); else "
                + START_HINT + alone)
    return ""


def _rebuild(error_type: type[Exception], message: str) -> Exception:
    error = Exception.__new__(error_type)
    Exception.__init__(error, message)
    return error


def grpc_stream_method(method):
    """Like grpc_method, for methods that return a stream (errors surface while iterating)."""

    @functools.wraps(method)
    def wrapper(self, request, context):
        try:
            yield from method(self, request, context)
        except Exception as error:  # noqa: BLE001
            abort(context, error)

    return wrapper
