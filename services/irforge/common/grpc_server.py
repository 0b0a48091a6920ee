"""One way to stand up an irforge gRPC server: the services, plus standard health checking
(grpc.health.v1) and server reflection, so grpcurl, grpc_health_probe and Kubernetes probes work."""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

# Runs and batches of documents can be large; chunked streams keep messages well under this.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


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


def start_server(bindings: list[ServiceBinding], host: str = "127.0.0.1", port: int = 0, max_workers: int = 8) -> RunningServer:
    """Start serving `bindings` on host:port (port 0 picks a free one); returns once listening."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers), options=CHANNEL_OPTIONS)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for binding in bindings:
        binding.add_to_server(binding.servicer, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port}")
    names = [b.full_name for b in bindings]
    reflection.enable_server_reflection([*names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME], server)
    server.start()
    for name in ["", *names]:  # "" is the server as a whole
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningServer(server, bound, health_servicer)


def open_channel(address: str) -> grpc.Channel:
    return grpc.insecure_channel(address, options=CHANNEL_OPTIONS)


def wait_until_serving(address: str, service: str = "", timeout: float = 10.0) -> None:
    """Block until the server's health check says SERVING; raise ConnectionError otherwise."""
    with open_channel(address) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except (grpc.FutureTimeoutError, grpc.RpcError) as error:
            raise ConnectionError(f"no irforge server answering at {address}: {error}") from None
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            raise ConnectionError(f"server at {address} is not serving {service or 'requests'}")
