"""The encoder as a Ray Serve application on a Ray cluster (KubeRay RayService), and the Encoder
gRPC front that serves it to the other irforge services.

Two halves, one per side of the cluster boundary:

  - `app(args)`: a Serve *application builder*. A RayService names it in serveConfigV2
    (`import_path: irforge.models.serve_app:app`, `args: {...}`); Serve calls it on the cluster
    with the `args` mapping and deploys what it returns: the same EncoderDeployment that
    `irforge service models --ray` runs on one machine (irforge.models.serve), so a replica on a
    GPU worker and a replica on a laptop encode identically.
  - `run_front`: `python -m irforge.cli.encoder_front front --ray-address ray://HEAD:10001 ...` runs in
    a plain Deployment. It connects to the cluster as a Ray Client, wraps the application's handle
    in RayEncoder and serves it through the thin Encoder front (irforge.models.server), so the
    orchestrator sees the usual `irforge.v1.Encoder` with grpc.health.v1, reflection and typed
    errors, whether the models run in a Deployment or on KubeRay. (Serve's own gRPC proxy has none
    of those and was slower; see irforge.models.server.)

Why a builder and not a module-level bound application: the model, its prefixes and the replica
resources are configuration (chart values), and a builder is Serve's way to take them.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

from irforge.models.encoder import EncoderSpec
from irforge.models.serve import DEFAULT_APP_NAME, EncoderDeployment, EncoderDeploymentConfig

log = logging.getLogger(__name__)

# Keys `app` accepts, with their defaults. Anything else is a typo in the chart values or the
# Serve config, reported by name rather than silently ignored.
SPEC_ARGS = {
    "model": "sentence-transformers/all-MiniLM-L6-v2", "revision": None, "query_prefix": None,
    "passage_prefix": None, "normalize": True, "max_seq_length": None, "batch_size": 64,
    "device": None, "precision": "float32", "backend": "torch", "backend_precision": "fp32",
}
# What kind of model `model` is: "dense" (SentenceTransformer) or "sparse" (SparseEncoder, SPLADE,
# keeping max_active_dims weights per vector when set).
KIND_ARGS = {"kind": "dense", "max_active_dims": None}
DEPLOYMENT_ARGS = {
    "num_cpus": 1.0, "num_gpus": 0.0, "max_ongoing_requests": 4, "torch_threads": None,
    "max_batch_size": 1, "batch_wait_timeout_s": 0.0,
    # Replica autoscaling inside the Ray cluster; KubeRay's autoscaler then adds or removes GPU
    # workers to fit the replicas (worker group minReplicas/maxReplicas bound it).
    "min_replicas": 1, "max_replicas": 1, "target_ongoing_requests": 2.0,
}


def app(args: dict):
    """The encoder application for `args` (SPEC_ARGS, KIND_ARGS and DEPLOYMENT_ARGS keys; all optional)."""
    args = dict(args or {})
    unknown = sorted(set(args) - set(SPEC_ARGS) - set(KIND_ARGS) - set(DEPLOYMENT_ARGS))
    if unknown:
        raise ValueError(f"irforge.models.serve_app:app: unknown args {unknown}; "
                         f"known: {sorted({**SPEC_ARGS, **KIND_ARGS, **DEPLOYMENT_ARGS})}")
    kind, max_active_dims = (args.get(key, default) for key, default in KIND_ARGS.items())
    if kind not in ("dense", "sparse"):
        raise ValueError(f"irforge.models.serve_app:app: kind must be dense or sparse, got {kind!r}")
    spec = EncoderSpec(**{key: args.get(key, default) for key, default in SPEC_ARGS.items()})
    settings = {key: args.get(key, default) for key, default in DEPLOYMENT_ARGS.items()}
    if not 1 <= settings["min_replicas"] <= settings["max_replicas"]:
        raise ValueError(f"irforge.models.serve_app:app: need 1 <= min_replicas <= max_replicas, "
                         f"got {settings['min_replicas']} and {settings['max_replicas']}")
    config = EncoderDeploymentConfig(
        num_replicas=settings["min_replicas"], num_cpus=float(settings["num_cpus"]),
        num_gpus=float(settings["num_gpus"]), max_ongoing_requests=settings["max_ongoing_requests"],
        torch_threads=settings["torch_threads"], max_batch_size=settings["max_batch_size"],
        batch_wait_timeout_s=settings["batch_wait_timeout_s"],
    )
    options = config.deployment_options()
    if settings["max_replicas"] > settings["min_replicas"]:
        # Serve refuses num_replicas together with autoscaling_config.
        options.pop("num_replicas")
        options["autoscaling_config"] = {
            "min_replicas": settings["min_replicas"], "max_replicas": settings["max_replicas"],
            "target_ongoing_requests": settings["target_ongoing_requests"],
        }
    return EncoderDeployment.options(**options).bind(
        spec, config.torch_threads, config.max_batch_size, config.batch_wait_timeout_s, kind, max_active_dims)


# -- the front ---------------------------------------------------------------------------------

def connect_encoder(ray_address: str, app_name: str, timeout_s: float):
    """A RayEncoder (RaySparseEncoder for a sparse model) on application `app_name` of the cluster
    at `ray_address`, retrying until
    the cluster answers and the application is deployed (a RayService starts its workers and
    loads the model after this pod may already be up). Raises ConnectionError after timeout_s."""
    import ray

    from irforge.models.serve_client import ray_encoder_for

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    deadline = time.monotonic() + timeout_s
    delay, last_error = 1.0, None
    while time.monotonic() < deadline:
        try:
            if not ray.is_initialized():
                ray.init(address=ray_address, logging_level=logging.WARNING)
            return ray_encoder_for(app_name)
        except Exception as error:  # noqa: BLE001 - connection refused, app not deployed yet, ...
            last_error = error
            log.warning("encoder app %r on %s not reachable yet (%s); retrying in %.0fs",
                        app_name, ray_address, type(error).__name__, delay)
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 30.0)
    raise ConnectionError(f"no encoder application {app_name!r} on the Ray cluster at {ray_address} "
                          f"after {timeout_s:.0f}s; last error: {last_error}")


def run_front(ray_address: str, app_name: str = DEFAULT_APP_NAME, host: str = "127.0.0.1", port: int = 50053,
              workers: int = 8, connect_timeout_s: float = 900.0) -> int:
    """Serve the cluster's encoder application as irforge.v1.Encoder until SIGINT/SIGTERM.
    The command line is irforge.cli.encoder_front (`python -m irforge.cli.encoder_front front ...`)."""
    from irforge.common.grpc_server import start_server
    from irforge.models import server as models_server

    encoder = connect_encoder(ray_address, app_name, connect_timeout_s)
    running = start_server([models_server.binding({encoder.identity["model"]: encoder})],
                           host=host, port=port, max_workers=workers)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    # Same line shape as `irforge service`: scripts read the port from it.
    print(f"irforge models service listening on {host}:{running.port}", flush=True)
    stop.wait()
    running.stop()
    return 0
