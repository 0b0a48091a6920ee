"""Channels as irforge's own services open them: the same message size cap, the same retries of
UNAVAILABLE, and an `x-request-id` on every call, so a team can quote the id of a call that went
wrong and irforge's logs find it.

The SDK stays free of the server package, so these settings are a copy of
`irforge.common.grpc_server`'s; tests/clients/test_client_sdk.py fails if the two drift.
"""

from __future__ import annotations

import json
import uuid
from collections import namedtuple
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import grpc

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES), ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]

# UNAVAILABLE means the call was not processed (server restarting, connection refused), so it is
# safe to retry for every method; gRPC retries only until the first response, never mid-stream.
RETRY_POLICY = {
    "maxAttempts": 4,
    "initialBackoff": "0.2s",
    "maxBackoff": "2s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}
SERVICE_CONFIG = json.dumps({"methodConfig": [{"name": [{}], "retryPolicy": RETRY_POLICY}]})

REQUEST_ID_HEADER = "x-request-id"
_request_id: ContextVar[str | None] = ContextVar("irforge_client_request_id", default=None)


@contextmanager
def request_id(value: str) -> Iterator[str]:
    """Calls made in this block carry `value` as their x-request-id (letters, digits and . _ : / -,
    at most 128 characters, or the server mints its own). Outside a block each call gets a new one."""
    token = _request_id.set(value)
    try:
        yield value
    finally:
        _request_id.reset(token)


class _CallDetails(namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready",
                                               "compression")), grpc.ClientCallDetails):
    pass


class _RequestIds(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                  grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds an x-request-id to each call that has none."""

    @staticmethod
    def _with_id(details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = list(details.metadata or ())
        if any(key.lower() == REQUEST_ID_HEADER for key, _ in metadata):
            return details
        metadata.append((REQUEST_ID_HEADER, _request_id.get() or uuid.uuid4().hex))
        return _CallDetails(details.method, details.timeout, metadata, details.credentials,
                            getattr(details, "wait_for_ready", None), getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, client_call_details, request):
        return continuation(self._with_id(client_call_details), request)

    def intercept_unary_stream(self, continuation, client_call_details, request):
        return continuation(self._with_id(client_call_details), request)

    def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        return continuation(self._with_id(client_call_details), request_iterator)

    def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return continuation(self._with_id(client_call_details), request_iterator)


def channel(address: str) -> grpc.Channel:
    options = [*OPTIONS, ("grpc.service_config", SERVICE_CONFIG), ("grpc.enable_retries", 1)]
    return grpc.intercept_channel(grpc.insecure_channel(address, options=options), _RequestIds())
