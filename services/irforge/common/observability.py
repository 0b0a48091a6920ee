"""What a service process sets up to be observable: its log format and its /metrics endpoint.
`irforge service` (and anything else that runs a service process) calls start_observability;
its flags (--metrics-port, --log-format) are in irforge.cli.service_flags."""

from __future__ import annotations

import logging
from contextlib import ExitStack

from irforge.common.logs import configure_logging
from irforge.common.metrics import start_metrics_server

log = logging.getLogger("irforge.service")


def start_observability(service: str, host: str, metrics_port: int, log_format: str | None,
                        stack: ExitStack) -> int | None:
    """Configure logging for `service`; serve /metrics when metrics_port > 0 until `stack` closes.
    Returns the metrics port, or None when metrics are off."""
    if metrics_port < 0:
        raise ValueError(f"--metrics-port must be 0 (off) or a port number, got {metrics_port}")
    configure_logging(log_format, service=service)
    if not metrics_port:
        return None
    server, port = start_metrics_server(host, metrics_port)
    stack.callback(server.server_close)
    stack.callback(server.shutdown)
    log.info("metrics at http://%s:%d/metrics", host, port, extra={"metrics_port": port})
    return port
