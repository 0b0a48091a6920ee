"""Request ids, metrics and one log line per request, for every irforge gRPC service and client.

`ServerTelemetry` (installed by start_server) reads x-request-id / x-irforge-job-id from the
call's metadata (minting a request id when there is none or it is unusable), binds both for the
handler's whole run, records irforge_grpc_* metrics and logs one line when the call ends.
`ClientTelemetry` (installed by open_channel) puts the current ids on every outgoing call, so a
chain orchestrator -> corpus carries one request id and one job id.

Only the two id headers are ever read from metadata: authorization and every other value a
client sends never reaches a log line or a metric label.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections import namedtuple

import grpc

from irforge.common import metrics, request_context
from irforge.common.request_context import JOB_ID_HEADER, REQUEST_ID_HEADER

log = logging.getLogger("irforge.grpc")

# gRPC's own services (health, reflection): probes call them every few seconds, so their successful
# calls are counted but logged only at DEBUG, where they do not drown the log.
_QUIET_SERVICE_PREFIX = "grpc."
# Codes that mean the server failed (rather than the caller asking for something wrong).
_SERVER_FAULTS = (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.DATA_LOSS)


class _Rpc:
    """One call being handled: its names, ids, start time; records metrics and the log line."""

    def __init__(self, full_method: str, metadata):
        self.full_method = full_method
        self.service, _, self.method = full_method.lstrip("/").rpartition("/")
        values = {key.lower(): value for key, value in (metadata or ()) if isinstance(value, str)}
        self.request_id = request_context.safe_id(values.get(REQUEST_ID_HEADER)) or request_context.new_request_id()
        self.job_id = request_context.safe_id(values.get(JOB_ID_HEADER))
        self.started = 0.0

    def context(self) -> contextvars.Context:
        """A fresh copy of the context with this call's ids, for the handler to run in. Running the
        handler (and each step of a response stream) inside it keeps the ids off the worker thread,
        which serves other calls next."""
        context = contextvars.copy_context()
        context.run(request_context.bind_in_current_context, self.request_id, self.job_id)
        return context

    def start(self, servicer_context: grpc.ServicerContext) -> None:
        self.started = time.perf_counter()
        metrics.GRPC_IN_FLIGHT.labels(self.service, self.method).inc()
        # Echo the id, so a caller can quote it when reporting an error.
        servicer_context.set_trailing_metadata(((REQUEST_ID_HEADER, self.request_id),))

    def finish(self, servicer_context: grpc.ServicerContext, error: BaseException | None) -> None:
        seconds = time.perf_counter() - self.started
        code = _final_code(servicer_context, error)
        metrics.GRPC_IN_FLIGHT.labels(self.service, self.method).dec()
        metrics.GRPC_REQUESTS.labels(self.service, self.method, code.name).inc()
        metrics.GRPC_REQUEST_SECONDS.labels(self.service, self.method).observe(seconds)
        if code in _SERVER_FAULTS:
            level = logging.ERROR
        elif self.service.startswith(_QUIET_SERVICE_PREFIX) and code == grpc.StatusCode.OK:
            level = logging.DEBUG
        else:
            level = logging.INFO
        if not log.isEnabledFor(level):
            return
        # grpc_method turns an error into context.abort(), which raises a bare Exception inside its
        # except block: the error worth a traceback is that exception's __context__.
        cause = (error.__context__ or error) if error is not None and code in _SERVER_FAULTS else None
        log.log(level, "%s %s %.1f ms", self.full_method, code.name, seconds * 1000,
                exc_info=(type(cause), cause, cause.__traceback__) if cause is not None else None,
                extra={"grpc_service": self.service, "grpc_method": self.method, "grpc_code": code.name,
                       "duration_ms": round(seconds * 1000, 3), "request_id": self.request_id, "job_id": self.job_id})


def _final_code(servicer_context: grpc.ServicerContext, error: BaseException | None) -> grpc.StatusCode:
    code = servicer_context.code()   # set by context.abort() / set_code()
    if code is not None:
        return code
    if isinstance(error, GeneratorExit):
        return grpc.StatusCode.CANCELLED  # grpc stopped pulling a response stream: the client went away
    if error is not None:
        return grpc.StatusCode.UNKNOWN     # what grpc answers for an exception it was not told about
    return grpc.StatusCode.OK if servicer_context.is_active() else grpc.StatusCode.CANCELLED


def _single_response(behavior, rpc: _Rpc):
    def handle(request, servicer_context):
        rpc.start(servicer_context)
        error = None
        try:
            return rpc.context().run(behavior, request, servicer_context)
        except BaseException as raised:
            error = raised
            raise
        finally:
            rpc.finish(servicer_context, error)

    return handle


def _response_stream(behavior, rpc: _Rpc):
    # grpc pulls a response stream lazily, step by step on the worker thread: each step runs inside
    # the call's context, so code between two yields sees the ids too.
    def handle(request, servicer_context):
        rpc.start(servicer_context)
        context = rpc.context()
        error = None
        responses = None
        try:
            responses = context.run(behavior, request, servicer_context)
            while True:
                try:
                    response = context.run(next, responses)
                except StopIteration:
                    return
                yield response
        except BaseException as raised:
            error = raised
            if isinstance(raised, GeneratorExit) and hasattr(responses, "close"):
                context.run(responses.close)
            raise
        finally:
            rpc.finish(servicer_context, error)

    return handle


class ServerTelemetry(grpc.ServerInterceptor):
    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None:
            return None  # unknown method: grpc answers UNIMPLEMENTED itself
        rpc = _Rpc(handler_call_details.method, handler_call_details.invocation_metadata)
        serialization = {"request_deserializer": handler.request_deserializer,
                         "response_serializer": handler.response_serializer}
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(_single_response(handler.unary_unary, rpc), **serialization)
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(_single_response(handler.stream_unary, rpc), **serialization)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(_response_stream(handler.unary_stream, rpc), **serialization)
        return grpc.stream_stream_rpc_method_handler(_response_stream(handler.stream_stream, rpc), **serialization)


class _CallDetails(namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready",
                                               "compression")), grpc.ClientCallDetails):
    pass


class ClientTelemetry(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                      grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds the current request id and job id to each call (ids the caller set itself win)."""

    @staticmethod
    def _with_ids(details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        ids = request_context.outgoing_metadata()
        if not ids:
            return details
        metadata = list(details.metadata or ())
        present = {key.lower() for key, _ in metadata}
        metadata += [(key, value) for key, value in ids if key not in present]
        return _CallDetails(details.method, details.timeout, metadata, details.credentials,
                            getattr(details, "wait_for_ready", None), getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, client_call_details, request):
        return continuation(self._with_ids(client_call_details), request)

    def intercept_unary_stream(self, continuation, client_call_details, request):
        return continuation(self._with_ids(client_call_details), request)

    def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        return continuation(self._with_ids(client_call_details), request_iterator)

    def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return continuation(self._with_ids(client_call_details), request_iterator)


class BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                  grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Sends `authorization: Bearer <token>` with each call: the caller's credential for a platform
    started with --auth tokens (irforge.accounts). Never logged: the server reads only ids (above)."""

    def __init__(self, token: str):
        self._header = ("authorization", f"Bearer {token}")

    def _with_token(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = [(k, v) for k, v in (details.metadata or ()) if k.lower() != "authorization"] + [self._header]
        return _CallDetails(details.method, details.timeout, metadata, details.credentials,
                            getattr(details, "wait_for_ready", None), getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, client_call_details, request):
        return continuation(self._with_token(client_call_details), request)

    def intercept_unary_stream(self, continuation, client_call_details, request):
        return continuation(self._with_token(client_call_details), request)

    def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        return continuation(self._with_token(client_call_details), request_iterator)

    def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return continuation(self._with_token(client_call_details), request_iterator)
