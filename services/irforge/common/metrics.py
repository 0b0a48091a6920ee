"""Every Prometheus metric irforge exports, defined once: code that does the work imports the
metric and increments it; `irforge service NAME --metrics-port N` serves them at /metrics.

The gRPC request metrics are recorded for every service by the server interceptor
(irforge.common.grpc_interceptors); docs/observability.md lists what each metric means.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, start_http_server

# From a health check (milliseconds) to an Evaluate or Ingest stream over a large corpus (minutes).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)

GRPC_REQUESTS = Counter(
    "irforge_grpc_requests_total", "gRPC requests handled, by final status code",
    ["service", "method", "code"],
)
GRPC_REQUEST_SECONDS = Histogram(
    "irforge_grpc_request_seconds", "Time from a handler's start to its last response (streams included)",
    ["service", "method"], buckets=LATENCY_BUCKETS,
)
GRPC_IN_FLIGHT = Gauge(
    "irforge_grpc_in_flight", "Requests a handler is working on now (at --workers, new requests queue)",
    ["service", "method"],
)

DOCUMENTS_INGESTED = Counter(
    "irforge_documents_ingested_total", "Documents indexed by the corpus service's lexical backend",
    ["backend"],
)
DOCUMENTS_ENCODED = Counter(
    "irforge_documents_encoded_total", "Documents sent to an encoder (embedding-cache hits excluded)",
    ["model"],
)

JUDGE_CALLS = Counter(
    "irforge_judge_calls_total", "Relevance-judge calls made to an LLM backend (retries included)",
    ["backend", "model"],
)
JUDGE_COST_USD = Counter("irforge_judge_cost_usd_total", "Estimated judge spend in US dollars")
JUDGE_TOKENS = Counter("irforge_judge_tokens_total", "Judge tokens used, by kind (prompt, completion)", ["kind"])

JOBS = Gauge("irforge_jobs", "Evaluation jobs known to the orchestrator, by state", ["state"])


def start_metrics_server(host: str, port: int) -> tuple[object, int]:
    """Serve /metrics on host:port (port 0 picks a free one) from a daemon thread.

    Returns (server, bound port); `server.shutdown()` stops it. Bind it where the gRPC service
    binds: loopback by default, so a laptop never exposes its metrics to the network.
    """
    server, _ = start_http_server(port, addr=host, registry=REGISTRY)
    return server, server.server_address[1]
