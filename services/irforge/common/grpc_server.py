"""One way to stand up an irforge gRPC server: the services, plus standard health checking
(grpc.health.v1) and server reflection, so grpcurl, grpc_health_probe and Kubernetes probes work,
and request ids, metrics and request logs (irforge.common.grpc_interceptors) on every call.
One way to open a channel to one: message size limits, retries of UNAVAILABLE, request ids passed on.
Both speak TLS when configured (irforge.common.tls): a server given a ServerTls, a channel given a
ClientTls or, by default, the one the environment configures."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from irforge.common.grpc_interceptors import BearerToken, ClientTelemetry, ServerTelemetry
from irforge.common.tls import ClientTls, ServerTls, TlsConfigError, channel_tls

# Runs and batches of documents can be large; chunked streams keep messages well under this.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]

# Channel-level retries for transient transport failures: a server restarting, a pod being
# rescheduled, a connection refused for a moment. Only UNAVAILABLE is retried because it is the one
# code that says the call was not processed (not reached, refused, or rejected before any work), so
# retrying is safe even for calls that are not idempotent (Ingest, UpsertVectors, SubmitJob);
# DEADLINE_EXCEEDED, INTERNAL or ABORTED may come after the work was done, and are the caller's call.
# gRPC retries only until the first response arrives, so a stream is never replayed mid-way.
RETRY_POLICY = {
    "maxAttempts": 4,
    "initialBackoff": "0.2s",      # attempt n waits a random time up to min(0.2 * 2**(n-1), 2) s
    "maxBackoff": "2s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}
# A team's Retriever or Reranker endpoint is called through irforge.endpoints' RobustCaller, which
# retries with its own backoff and counts every attempt against the request budget: channel
# retries under it would multiply attempts behind its back, so those services get none.
SELF_RETRYING_SERVICES = ("irforge.v1.Retriever", "irforge.v1.Reranker")
SERVICE_CONFIG = json.dumps({
    "methodConfig": [
        {"name": [{}], "retryPolicy": RETRY_POLICY},   # {}: every method without a closer match
        {"name": [{"service": name} for name in SELF_RETRYING_SERVICES]},
    ],
})


class PortUnavailable(OSError):
    """The server's address cannot be bound (most often: something already listens there)."""


@dataclass(frozen=True)
class ServiceBinding:
    full_name: str                                   # e.g. "irforge.v1.Corpus"
    add_to_server: Callable[[object, grpc.Server], None]
    servicer: object


@dataclass
class RunningServer:
    server: grpc.Server
    port: int
    health: health.HealthServicer

    def stop(self, grace: float = 5.0) -> None:
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()


def start_server(bindings: list[ServiceBinding], host: str = "127.0.0.1", port: int = 0, max_workers: int = 16,
                 tls: ServerTls | None = None, interceptors: tuple[grpc.ServerInterceptor, ...] = ()) -> RunningServer:
    """Start serving `bindings` on host:port (port 0 picks a free one); returns once listening.
    With `tls`, only TLS connections (client certificates required when it names a client CA).
    `interceptors` run inside the telemetry (the orchestrator's caller check: a refused call is
    still counted and logged)."""
    # SO_REUSEPORT off: with it (gRPC's default on Linux) a second server binds a port that one
    # is already serving, says "listening", and the kernel splits connections between the two.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers),
                         options=[*CHANNEL_OPTIONS, ("grpc.so_reuseport", 0)], interceptors=[ServerTelemetry(), *interceptors])
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for binding in bindings:
        binding.add_to_server(binding.servicer, server)
    credentials = tls.credentials() if tls else None   # read first: a bad file fails before binding
    try:
        address = f"{host}:{port}"
        bound = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    except RuntimeError:  # grpcio raises this when the address cannot be bound
        bound = 0
    if bound == 0:
        raise PortUnavailable(f"cannot listen on {host}:{port}: the port is in use (another irforge service?) or "
                              "the address is not this machine's; choose another --port, or stop what holds it")
    names = [b.full_name for b in bindings]
    reflection.enable_server_reflection([*names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME], server)
    server.start()
    for name in ["", *names]:  # "" is the server as a whole
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningServer(server, bound, health_servicer)


FROM_ENVIRONMENT = "environment"


def open_channel(address: str, tls: ClientTls | None | str = FROM_ENVIRONMENT, channel: str = "",
                 token: str | None = None) -> grpc.Channel:
    """A channel to an irforge server; `tls`: the environment's client TLS settings (default, for
    irforge's own services: those of `channel`, one of common.tls.CHANNELS, when it has its own),
    explicit ones, or None for plaintext (a team endpoint without TLS). `token`: sent as a bearer
    token with every call (an orchestrator started with --auth tokens)."""
    options = [*CHANNEL_OPTIONS, ("grpc.service_config", SERVICE_CONFIG), ("grpc.enable_retries", 1)]
    if tls == FROM_ENVIRONMENT:
        tls = channel_tls(channel) if channel else ClientTls.from_env()
    try:
        credentials = tls.credentials() if tls else None
    except TlsConfigError as error:
        raise TlsConfigError(f"the {channel} channel to {address}: {error}" if channel else str(error)) from None
    opened = (grpc.secure_channel(address, credentials, options=options) if credentials
              else grpc.insecure_channel(address, options=options))
    return grpc.intercept_channel(opened, ClientTelemetry(), *([BearerToken(token)] if token else []))


def wait_until_serving(address: str, service: str = "", timeout: float = 10.0, channel: str = "") -> None:
    """Block until the server's health check says SERVING; raise ConnectionError otherwise.
    `channel` (common.tls.CHANNELS): the TLS setting of the channels to that service."""
    with open_channel(address, channel=channel) as opened:
        try:
            grpc.channel_ready_future(opened).result(timeout=timeout)
            reply = health_pb2_grpc.HealthStub(opened).Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except (grpc.FutureTimeoutError, grpc.RpcError) as error:
            raise ConnectionError(f"no irforge {channel + ' service' if channel else 'server'} answering at {address}: "
                                  f"{error}") from None
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            raise ConnectionError(f"server at {address} is not serving {service or 'requests'}")
