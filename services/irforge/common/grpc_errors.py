"""The one mechanism between irforge's error types and gRPC status codes, used by servers and clients,
so a remote call raises the same exception type, with the same message, as an in-process one.

Which status each type travels as is declared by its own room, beside the type, with
`irforge.common.error_status.register_status` (corpus/errors.py, judge/errors.py, ...)."""

from __future__ import annotations

import functools

import grpc

from irforge.common.error_status import registered_type, status_name
from irforge.common.redact import redact_text


class RemoteError(RuntimeError):
    """A server error with no irforge type (a bug on the server): code and details kept."""


class ServiceUnavailable(ConnectionError):
    """An irforge server cannot be reached or did not answer in time."""


def status_for(error: Exception) -> grpc.StatusCode:
    """The status of the most specific registered type the error is an instance of; INTERNAL if none."""
    name = status_name(error)
    return grpc.StatusCode[name] if name else grpc.StatusCode.INTERNAL


def grpc_method(method):
    """Wrap a servicer method: irforge errors become status codes with the error's message.

    The error's class name is prefixed ("CorpusNotFound: ...") so the client can rebuild the type.
    """

    @functools.wraps(method)
    def wrapper(self, request, context):
        try:
            return method(self, request, context)
        except Exception as error:  # noqa: BLE001 - every error must reach the client as a status
            context.abort(status_for(error), redact_text(f"{type(error).__name__}: {error}"))

    return wrapper


def raise_from_rpc(error: grpc.RpcError, address: str) -> None:
    """Re-raise an RpcError as the irforge error the server raised."""
    code, details = error.code(), error.details() or ""
    type_name, _, message = details.partition(": ")
    error_type = registered_type(type_name)
    if error_type is not None:
        raise _rebuild(error_type, message) from None
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        raise ServiceUnavailable(
            f"no irforge server answering at {address} ({code.name}: {details}); "
            + (_tls_hint(details) or "start one with `irforge service`")
        ) from None
    raise RemoteError(f"{address}: {code.name}: {details}") from None


def _tls_hint(details: str) -> str:
    """What to do when the failure looks like TLS on one side only, or a certificate that does not verify."""
    lowered = details.lower()
    if "certificate" in lowered or "handshake" in lowered or "ssl" in lowered:
        return ("the TLS handshake failed: trust the CA that signed the server's certificate (--tls-ca / "
                "$IRFORGE_TLS_CA), and if it requires client certificates give one (--tls-client-cert / --tls-client-key)")
    if "socket closed" in lowered or "connection reset" in lowered:
        return ("the server closed the connection: if it serves TLS, call it with --tls-ca / $IRFORGE_TLS_CA "
                "(and --tls-client-cert / --tls-client-key if it requires client certificates); else start one "
                "with `irforge service`")
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
            context.abort(status_for(error), redact_text(f"{type(error).__name__}: {error}"))

    return wrapper
