"""The corpus service's Ingest stream limits, apart from its gRPC server so `irforge service`'s
flags (their defaults) are declared without importing grpc, an extra's."""

DEFAULT_MAX_INGEST_STREAMS = 4        # concurrent Ingest streams; more are refused, never queued
DEFAULT_INGEST_IDLE_TIMEOUT_S = 300.0  # an Ingest stream silent this long is cancelled
