"""Channels as irforge's own services open them: the same message size cap, the same retries of
UNAVAILABLE, and an `x-request-id` on every call, so a team can quote the id of a call that went
wrong and irforge's logs find it. The SDK stays free of the server package, so these settings are
a copy of `irforge.common.grpc_server`'s; tests/faults/test_job_status.py fails if the two drift.

TLS: a client trusts a CA (and may present a certificate, for servers that require one), read from
the same variables irforge itself uses, so one setting covers the CLI and the SDK:

    IRFORGE_TLS_CA             PEM CA bundle; set: channels use TLS
    IRFORGE_TLS_CLIENT_CERT    PEM certificate for mutual TLS, with IRFORGE_TLS_CLIENT_KEY

or explicitly: `EvaluatorClient(address, tls=Tls(ca="ca.pem"))`.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import namedtuple
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class Tls:
    """What a client trusts and presents. ca None: the system's CAs."""

    ca: str | Path | None = None
    cert: str | Path | None = None
    key: str | Path | None = None

    def __post_init__(self):
        if bool(self.cert) != bool(self.key):
            raise ValueError("Tls: a client certificate needs its key (cert and key go together)")

    @classmethod
    def from_env(cls) -> Tls | None:
        ca, cert, key = (os.environ.get(name) or None for name in
                         ("IRFORGE_TLS_CA", "IRFORGE_TLS_CLIENT_CERT", "IRFORGE_TLS_CLIENT_KEY"))
        return cls(ca, cert, key) if ca or cert else None

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path):
            return Path(path).read_bytes() if path else None

        return grpc.ssl_channel_credentials(read(self.ca), read(self.key), read(self.cert))


class _Bearer(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
              grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Sends `authorization: Bearer <token>` with each call (a platform started with --auth tokens)."""

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


def channel(address: str, tls: Tls | None = None, token: str | None = None) -> grpc.Channel:
    """A channel to `address`: TLS with `tls`, else with the environment's settings, else plaintext;
    `token` (a team's or operator's) goes with every call."""
    tls = tls or Tls.from_env()
    options = [*OPTIONS, ("grpc.service_config", SERVICE_CONFIG), ("grpc.enable_retries", 1)]
    if tls is None:
        opened = grpc.insecure_channel(address, options=options)
    else:
        opened = grpc.secure_channel(address, tls.credentials(), options=options)
    return grpc.intercept_channel(opened, _RequestIds(), *([_Bearer(token)] if token else []))
