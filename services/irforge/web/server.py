"""The web page's HTTP server (uvicorn) on a thread of the orchestrator's process, beside gRPC."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

from irforge.common.grpc_server import PortUnavailable

STARTUP_TIMEOUT_S = 30.0


@dataclass
class RunningWeb:
    server: object          # uvicorn.Server
    thread: threading.Thread
    host: str
    port: int
    tls: bool

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else ("[::1]" if self.host == "::" else self.host)
        host = f"[{host}]" if ":" in host and not host.startswith("[") else host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/"

    def stop(self, timeout_s: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout_s)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise PortUnavailable(f"the web page cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def start_web(app, host: str = "127.0.0.1", port: int = 0, *, tls_cert: str | None = None,
              tls_key: str | None = None) -> RunningWeb:
    """Serve `app` on host:port (0: a free port) until stop(); TLS with the gRPC server's certificate if given."""
    import uvicorn

    sock = bind(host, port)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", ssl_certfile=tls_cert,
                            ssl_keyfile=tls_key, server_header=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="irforge-web", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the web page's server did not start")
        time.sleep(0.02)
    return RunningWeb(server, thread, host, sock.getsockname()[1], bool(tls_cert))
