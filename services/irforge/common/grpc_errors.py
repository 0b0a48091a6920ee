"""One mapping between irforge's error types and gRPC status codes, used by servers and clients,
so a remote call raises the same exception type, with the same message, as an in-process one."""

from __future__ import annotations

import functools

import grpc

from irforge.common.redact import redact_text
from irforge.corpus.errors import (BackendUnavailable, CorpusBusy, CorpusConflict, CorpusError, CorpusNotFound,
                                   CorpusNotReady, IngestAborted, IngestStreamsExhausted)
from irforge.corpus.vectors.base import DimensionMismatch
from irforge.data.errors import DataFormatError
from irforge.endpoints.errors import (EndpointAnswerError, EndpointError, EndpointSpecError, EndpointUnavailable,
                                      RequestBudgetExhausted)
from irforge.evaluator.core import EvaluationError
from irforge.evaluator.measures import MeasureError
from irforge.judge.errors import JudgeError, JudgeRequestError, JudgeSpecError, JudgeStoreError, TokenBudgetExhausted
from irforge.models.errors import EncodingError, ModelNotFound, RerankError, RerankerUnavailable

# Most specific first. Clients turn a code back into the first type listed for it.
_ERRORS: list[tuple[type[Exception], grpc.StatusCode]] = [
    (DimensionMismatch, grpc.StatusCode.INVALID_ARGUMENT),
    (CorpusNotFound, grpc.StatusCode.NOT_FOUND),
    (ModelNotFound, grpc.StatusCode.NOT_FOUND),
    (EncodingError, grpc.StatusCode.INTERNAL),
    (RerankError, grpc.StatusCode.INTERNAL),
    (RerankerUnavailable, grpc.StatusCode.UNAVAILABLE),
    (CorpusNotReady, grpc.StatusCode.FAILED_PRECONDITION),
    (CorpusBusy, grpc.StatusCode.FAILED_PRECONDITION),
    (IngestAborted, grpc.StatusCode.ABORTED),
    (IngestStreamsExhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (CorpusConflict, grpc.StatusCode.ALREADY_EXISTS),
    (BackendUnavailable, grpc.StatusCode.UNAVAILABLE),
    (MeasureError, grpc.StatusCode.INVALID_ARGUMENT),
    (EvaluationError, grpc.StatusCode.INVALID_ARGUMENT),
    (DataFormatError, grpc.StatusCode.INVALID_ARGUMENT),
    (CorpusError, grpc.StatusCode.FAILED_PRECONDITION),
    # A team endpoint irforge calls: its answers or its availability, never irforge's own state.
    (EndpointSpecError, grpc.StatusCode.INVALID_ARGUMENT),
    (EndpointAnswerError, grpc.StatusCode.FAILED_PRECONDITION),
    (EndpointUnavailable, grpc.StatusCode.UNAVAILABLE),
    (RequestBudgetExhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (EndpointError, grpc.StatusCode.FAILED_PRECONDITION),
    # The judge: a malformed spec or request, a spent token budget, an unusable store.
    (JudgeSpecError, grpc.StatusCode.INVALID_ARGUMENT),
    (JudgeRequestError, grpc.StatusCode.INVALID_ARGUMENT),
    (TokenBudgetExhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (JudgeStoreError, grpc.StatusCode.FAILED_PRECONDITION),
    (JudgeError, grpc.StatusCode.FAILED_PRECONDITION),
    (ValueError, grpc.StatusCode.INVALID_ARGUMENT),
]


class RemoteError(RuntimeError):
    """A server error with no irforge type (a bug on the server): code and details kept."""


class ServiceUnavailable(ConnectionError):
    """An irforge server cannot be reached or did not answer in time."""


def status_for(error: Exception) -> grpc.StatusCode:
    for error_type, code in _ERRORS:
        if isinstance(error, error_type):
            return code
    return grpc.StatusCode.INTERNAL


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
    for error_type, _ in _ERRORS:
        if error_type.__name__ == type_name:
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
