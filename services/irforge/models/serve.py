"""The encoder on Ray Serve: a deployment wrapping EncoderCore, and starting Ray and Serve on this
machine. Its client, RayEncoder (EncoderCore's surface, whole batches through a DeploymentHandle,
a batch re-sent when its replica dies mid-call), is irforge.models.serve_client.

    start_local_ray()                                     # loopback Ray + Serve, machine rules applied
    handle = start_encoder_app(EncoderSpec("all-MiniLM-L6-v2"), EncoderDeploymentConfig(num_cpus=2))
    encoder = RayEncoder(handle)                          # serve_client; or RayEncoder("encoder"): the app's name
    vectors = encoder.encode(texts, TextRole.PASSAGE)     # one call per batch, never one per text
    stop_local_ray()

A sparse encoder (sentence-transformers SparseEncoder, SPLADE) is the same deployment with
`kind="sparse"` (start_encoder_app(spec, kind="sparse", max_active_dims=...)): its replicas hold a
SparseEncoderCore and answer one SparseVector per text; RaySparseEncoder is its client
(ray_encoder_for picks the client from the deployment's description).

Design notes (figures: benchmarks/encoder_throughput.py and its results JSON)
  - One call carries one batch (tens to hundreds of texts). Serve's per-request cost is paid per
    batch, so with calls of 100 texts the handle path stays close to in-process speed.
  - No @serve.batch by default (EncoderDeploymentConfig.max_batch_size = 1; > 1 turns merging on,
    with batch_wait_timeout_s). Callers already send batches big enough to keep the CPU busy (MiniLM's
    throughput is flat above ~32 texts per forward pass); merging concurrent batches would add
    `batch_wait_timeout_s` of latency, need list-of-lists splitting, and change which texts share
    a padded forward pass (vectors then differ from in-process ones in the last bits). Many tiny
    calls are a client bug to fix at the client, which is what the proto's comment says.
  - The replica runs one torch call at a time (a lock): Serve runs sync methods in a thread
    pool, and two forward passes at once on the same cores only oversubscribe them. Up to
    `max_ongoing_requests` calls still reach the replica, so the next batch is already there
    (deserialised, queued) when the current one ends: that is what "2 in flight" buys.
  - Threads: Ray sets a replica's OMP_NUM_THREADS to its num_cpus, so torch uses num_cpus
    threads; `torch_threads` overrides it (e.g. GPU replicas with num_cpus=1).
  - A spec is validated in the driver first (path exists, hub name in the local cache when
    offline): a bad model raises ModelNotFound at once instead of Serve retrying a failing
    replica constructor.
  - Retries: a replica that dies mid-call (killed, OOM, node lost) fails the call with
    RayActorError/ActorDiedError (or ReplicaUnavailableError while Serve routes around it). The
    batch is re-sent with exponential backoff; the handle queues it until Serve's replacement
    replica is up. Encoding is a pure function of the batch, so a re-send is always safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import threading
from dataclasses import dataclass

import ray
from ray import serve
from ray.serve.exceptions import RayServeException

from irforge.models import protocol
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole, resolve_model
from irforge.models.errors import ModelNotFound
from irforge.models.sparse_encoder import SparseEncoderCore

# Applied before ray.init and passed to every worker: no usage reporting, no model downloads.
RAY_ENV_VARS = {"RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "1"}
DEFAULT_APP_NAME = "encoder"
DEPLOYMENT_NAME = "EncoderDeployment"

# -- the deployment ----------------------------------------------------------------------------

@dataclass(frozen=True)
class EncoderDeploymentConfig:
    """Serve options of the encoder deployment (applied with `.options(...)`)."""

    num_replicas: int = 1
    num_cpus: float | None = None        # None: the cluster's CPUs / num_replicas (at least 1). Also
                                         # the replica's OMP_NUM_THREADS, hence its torch threads
    num_gpus: float = 0.0                # set the EncoderSpec's device accordingly (None picks CUDA)
    max_ongoing_requests: int = 4        # calls queued at a replica; >= the clients' calls in flight
    torch_threads: int | None = None     # None: torch's default (= OMP_NUM_THREADS = num_cpus)
    # Merging concurrent calls (@serve.batch): off by default (see the module notes); > 1 lets
    # Serve merge up to this many in-flight calls into one forward pass, waiting at most
    # batch_wait_timeout_s for company. Worth it only for clients that send small batches.
    max_batch_size: int = 1
    batch_wait_timeout_s: float = 0.0
    health_check_period_s: float = 10.0
    health_check_timeout_s: float = 30.0
    graceful_shutdown_timeout_s: float = 5.0

    def resolved(self) -> EncoderDeploymentConfig:
        """num_cpus filled in from the running Ray cluster when left None."""
        if self.num_cpus is not None:
            return self
        total = ray.cluster_resources().get("CPU", 1.0)
        return dataclasses.replace(self, num_cpus=float(max(1, int(total // max(1, self.num_replicas)))))

    def deployment_options(self) -> dict:
        if self.num_cpus is None:
            raise ValueError("num_cpus is None: call resolved() with Ray running first")
        return {
            "name": DEPLOYMENT_NAME,
            "num_replicas": self.num_replicas,
            "max_ongoing_requests": self.max_ongoing_requests,
            "health_check_period_s": self.health_check_period_s,
            "health_check_timeout_s": self.health_check_timeout_s,
            "graceful_shutdown_timeout_s": self.graceful_shutdown_timeout_s,
            "ray_actor_options": {
                "num_cpus": self.num_cpus, "num_gpus": self.num_gpus,
                "runtime_env": {"env_vars": {**RAY_ENV_VARS, "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1")}},
            },
        }


@serve.deployment(name=DEPLOYMENT_NAME)
class EncoderDeployment:
    """One EncoderCore (or SparseEncoderCore, kind "sparse") per replica. `encode` takes a whole
    batch per call."""

    def __init__(self, spec: EncoderSpec, torch_threads: int | None = None, max_batch_size: int = 1,
                 batch_wait_timeout_s: float = 0.0, kind: str = protocol.DENSE, max_active_dims: int | None = None):
        if torch_threads:
            import torch

            torch.set_num_threads(torch_threads)
        self.core = SparseEncoderCore(spec, max_active_dims) if kind == protocol.SPARSE else EncoderCore(spec)
        self._lock = threading.Lock()  # one forward pass at a time (see the module notes)
        self.merging = {"max_batch_size": max_batch_size, "batch_wait_timeout_s": batch_wait_timeout_s}
        if max_batch_size > 1:
            self.encode_merged.set_max_batch_size(max_batch_size)
            self.encode_merged.set_batch_wait_timeout_s(batch_wait_timeout_s)

    def encode(self, texts: list[str], role: str):
        """float32 (len(texts), dimension), or a list of SparseVector for a sparse core."""
        with self._lock:
            return self.core.encode(list(texts), TextRole(role))

    @serve.batch(max_batch_size=2, batch_wait_timeout_s=0.0)
    async def encode_merged(self, texts_per_call: list[list[str]], roles: list[str]) -> list:
        """Calls Serve merged: one forward pass per role over all their texts, split back per call
        (array rows, or list items for a sparse core)."""
        answers: list = [None] * len(texts_per_call)
        for role in dict.fromkeys(roles):
            members = [i for i, r in enumerate(roles) if r == role]
            vectors = await asyncio.to_thread(self.encode, [t for i in members for t in texts_per_call[i]], role)
            start = 0
            for i in members:
                answers[i] = vectors[start:start + len(texts_per_call[i])]
                start += len(texts_per_call[i])
        return answers

    def describe(self) -> dict:
        return {**self.core.describe(), "identity": self.core.identity, "replica": _replica_info(),
                "merging": self.merging}

    # Serve's gRPC proxy calls the method named like the RPC with the request message. Measured
    # and not the recommended door (see irforge.models.server); kept so the proxy can be used.
    def Encode(self, request):
        vectors = self.encode(list(request.texts), protocol.role_from_proto(request.role).value)
        if isinstance(self.core, SparseEncoderCore):
            return protocol.encode_sparse_response(vectors, self.core.dimension)
        return protocol.encode_response(vectors)

    def DescribeModel(self, request):
        return protocol.description_to_proto(self.core.describe())


def _replica_info() -> dict:
    import torch

    info: dict = {"pid": os.getpid(), "torch_threads": torch.get_num_threads(),
                  "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "niceness": os.nice(0)}
    with contextlib.suppress(RayServeException):  # not inside Serve (unit use)
        info["replica_id"] = serve.get_replica_context().replica_id.unique_id
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key = "rss_mib" if line.startswith("VmRSS") else "peak_rss_mib"
                    info[key] = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return info


def validate_spec(spec: EncoderSpec) -> None:
    """Raise ModelNotFound now, in the driver, for a model the replicas could not load (the same
    resolution as in process: a missing folder, or a hub model not cached while downloads are off)."""
    resolve_model(spec)


# -- Ray and Serve on this machine ---------------------------------------------------------------

_ray_lock = threading.Lock()


def start_local_ray(num_cpus: int = 2, object_store_memory: int | None = 512 * 1024 * 1024,
                    worker_niceness: int | None = None, **serve_start: object) -> bool:
    """Start Ray on loopback only (no dashboard, no usage stats, no downloads) and Serve without
    HTTP proxies (handles only). Idempotent: returns False when Ray was already up.

    `worker_niceness`: Ray starts its workers, Serve replicas included, at nice 15, so on a
    shared machine a replica yields the CPU to every normal process (an in-process encoder does
    not); 0 runs them at normal priority. None keeps Ray's default.
    `serve_start` goes to serve.start (e.g. proxy_location, grpc_options); Serve's options are
    cluster-scoped and fixed once it runs.
    """
    with _ray_lock:
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        started = False
        if not ray.is_initialized():
            _keep_loopback()
            env_vars = {**RAY_ENV_VARS, "HF_HUB_OFFLINE": os.environ["HF_HUB_OFFLINE"]}
            system_config = {} if worker_niceness is None else {"worker_niceness": worker_niceness}
            ray.init(num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
                     object_store_memory=object_store_memory, runtime_env={"env_vars": env_vars},
                     logging_level=logging.WARNING, _system_config=system_config)
            started = True
            node_ip = ray.util.get_node_ip_address()
            if node_ip != "127.0.0.1":
                ray.shutdown()
                raise RuntimeError(f"Ray came up on {node_ip}, not loopback; refusing to run")
        serve.start(**({"proxy_location": "Disabled"} | serve_start))
        return started


def _keep_loopback() -> None:
    """Make `_node_ip_address="127.0.0.1"` stick.

    Ray 2.60 rewrites a loopback node address to the host's routable one
    (ray._private.services.resolve_ip_for_localhost -> get_node_ip_address) unless "Ray clusters"
    are disabled, which its Windows/macOS default does: then the node is 127.0.0.1 and GCS,
    raylet and workers listen on loopback. The constant is read at call time; the variable covers
    processes that import ray afterwards. (Serve replicas still open their internal
    inter-deployment gRPC server on [::]:0, a Serve choice with no option to change it.)
    """
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def stop_local_ray() -> None:
    """Shut Serve and Ray down (idempotent)."""
    with _ray_lock:
        if ray.is_initialized():
            try:
                serve.shutdown()
            finally:
                ray.shutdown()


def release_local_ray(started: bool, app_name: str) -> None:
    """Undo what a command did to Ray: shut Ray down if it started it, else delete only its own
    Serve application, so a Ray the user (or a test session) already runs keeps running."""
    if started:
        stop_local_ray()
        return
    with _ray_lock:
        if ray.is_initialized():
            serve.delete(app_name)


def start_encoder_app(spec: EncoderSpec, config: EncoderDeploymentConfig = EncoderDeploymentConfig(),
                      name: str = DEFAULT_APP_NAME, route_prefix: str | None = None, *, kind: str = protocol.DENSE,
                      max_active_dims: int | None = None) -> serve.handle.DeploymentHandle:
    """Deploy the encoder as Serve application `name`; returns once every replica is ready.
    `kind="sparse"` serves `spec` as a SparseEncoder (SPLADE), keeping `max_active_dims` weights.

    Validates the spec first (ModelNotFound without deploying). Starts loopback Ray if this
    process has none. A replica whose constructor fails makes this raise ModelNotFound (a model
    problem) or the Serve error. `route_prefix=None` (the default) keeps the app off Serve's
    proxies (handles only); give one (e.g. "/") to reach it through Serve's HTTP/gRPC proxy.
    """
    if config.max_batch_size < 1 or config.batch_wait_timeout_s < 0:
        raise ValueError("max_batch_size must be >= 1 and batch_wait_timeout_s >= 0")
    validate_spec(spec)
    if not ray.is_initialized():
        start_local_ray()
    config = config.resolved()
    if kind not in (protocol.DENSE, protocol.SPARSE):
        raise ValueError(f"encoder kind must be dense or sparse, got {kind!r}")
    app = EncoderDeployment.options(**config.deployment_options()).bind(
        spec, config.torch_threads, config.max_batch_size, config.batch_wait_timeout_s, kind, max_active_dims)
    return run_app(app, name, route_prefix, "encoder", spec.model)


def run_app(app, name: str, route_prefix: str | None, component: str, model: str):
    """serve.run, but a replica that cannot load its model is ModelNotFound (and the half-deployed
    application is deleted) instead of Serve's RuntimeError."""
    try:
        return serve.run(app, name=name, route_prefix=route_prefix)
    except RuntimeError as error:
        if "ModelNotFound" in str(error):
            serve.delete(name)
            raise ModelNotFound(f"the {component} replicas could not load {model!r}: {error}") from None
        raise
