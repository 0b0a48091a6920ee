"""The encoder on Ray Serve: a deployment wrapping EncoderCore, and RayEncoder, a client with
EncoderCore's surface that sends whole batches through a DeploymentHandle and retries a batch
when its replica dies mid-call.

    start_local_ray()                                     # loopback Ray + Serve, machine rules applied
    handle = start_encoder_app(EncoderSpec("all-MiniLM-L6-v2"), EncoderDeploymentConfig(num_cpus=2))
    encoder = RayEncoder(handle)                          # or RayEncoder("encoder"): the app's name
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
import collections
import contextlib
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import ray
from ray import serve
from ray.exceptions import RayActorError, WorkerCrashedError
from ray.serve.exceptions import RayServeException, ReplicaUnavailableError

from irforge.models import protocol
from irforge.models.encoder import (
    EncoderCore,
    EncoderSpec,
    TextRole,
    check_vectors,
    resolve_model,
)
from irforge.models.errors import ModelError, ModelNotFound, WrongModelKind
from irforge.models.sparse_encoder import SparseEncoderCore, check_sparse_vectors

log = logging.getLogger(__name__)

# Applied before ray.init and passed to every worker: no usage reporting, no model downloads.
RAY_ENV_VARS = {"RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "1"}
DEFAULT_APP_NAME = "encoder"
DEPLOYMENT_NAME = "EncoderDeployment"
# Errors that mean "the replica went away", not "the batch is bad": the batch is re-sent.
RETRYABLE_ERRORS = (RayActorError, ReplicaUnavailableError, WorkerCrashedError)
MAX_TEXTS_PER_CALL = 4096


class EncoderUnavailable(ModelError):
    """The encoder deployment did not answer a batch after every retry."""


def call_with_replica_retries(owner, submit, what: str, component: str, unavailable: type[Exception]):
    """`submit()` a call to a Serve deployment and wait for its answer; when the replica dies under
    it (RETRYABLE_ERRORS: Serve restarts it), send the same batch again after capped exponential
    backoff, so a batch is retried, never lost. `owner` (RayEncoder, RayReranker) carries the policy
    (max_retries, timeout_s, backoff_s, max_backoff_s), app_name for messages, and counts `retries`.
    After the last attempt: `unavailable` naming the deployment and the last error."""
    for attempt in range(owner.max_retries + 1):
        try:
            return submit().result(timeout_s=owner.timeout_s)
        except RETRYABLE_ERRORS as error:
            if attempt == owner.max_retries:
                raise unavailable(
                    f"{component} deployment {owner.app_name!r} failed {what} {attempt + 1} times; last: {error}"
                ) from error
            delay = min(owner.backoff_s * 2 ** attempt, owner.max_backoff_s)
            owner.retries += 1
            log.warning("%s replica failed during %s (%s); retry %d/%d in %.1fs",
                        component, what, type(error).__name__, attempt + 1, owner.max_retries, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")


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


# -- the client --------------------------------------------------------------------------------

class RayEncoder:
    """EncoderCore's surface over a Serve deployment: identity, identity_key, dimension,
    describe(), encode(texts, role). Batches are re-sent when a replica dies mid-call.
    Refuses a deployment serving a sparse model (RaySparseEncoder is its client)."""

    kind = protocol.DENSE

    def __init__(self, handle_or_app_name: serve.handle.DeploymentHandle | str = DEFAULT_APP_NAME, *,
                 max_retries: int = 3, backoff_s: float = 0.5, max_backoff_s: float = 8.0,
                 timeout_s: float | None = 600.0, max_texts_per_call: int = MAX_TEXTS_PER_CALL):
        if isinstance(handle_or_app_name, str):
            self.app_name = handle_or_app_name
            self._handle = serve.get_app_handle(handle_or_app_name)
        else:
            self._handle = handle_or_app_name
            self.app_name = getattr(getattr(handle_or_app_name, "deployment_id", None), "app_name", None)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.timeout_s = timeout_s
        self.max_texts_per_call = max_texts_per_call
        self.retries = 0  # batches re-sent after a replica failure, over this client's life
        self._description = self._call(lambda: self._handle.describe.remote(), "describe")
        served = self._description.get("kind", protocol.DENSE)
        if served != self.kind:
            raise WrongModelKind(f"encoder deployment {self.app_name!r} serves {self._description['model']!r}, a {served} "
                                 f"model; this client needs a {self.kind} one")
        self.name = self._description["model"]
        self.dimension = int(self._description["vocabulary" if served == protocol.SPARSE else "dimension"])
        # A deployment that merges calls is reached through its @serve.batch method.
        merging = self._description.get("merging", {}).get("max_batch_size", 1) > 1
        self._method = self._handle.encode_merged if merging else self._handle.encode

    @property
    def identity(self) -> dict:
        return dict(self._description["identity"])

    @property
    def identity_key(self) -> str:
        return protocol.identity_key(self.identity)

    def describe(self) -> dict:
        """The description a replica gave at connection time (its `replica` entry is that replica's)."""
        return {**self._description, "app": self.app_name}

    def encode(self, texts: list[str], role: TextRole) -> np.ndarray:
        """float32 (len(texts), dimension): one call per batch (split above max_texts_per_call)."""
        texts, role = list(texts), TextRole(role)
        if len(texts) <= self.max_texts_per_call:
            return self._encode_call(texts, role)
        chunks = [texts[start:start + self.max_texts_per_call] for start in range(0, len(texts), self.max_texts_per_call)]
        return self._join(list(self.encode_batches(chunks, role, in_flight=1)))

    def encode_batches(self, batches: Iterable[list[str]], role: TextRole, in_flight: int = 2) -> Iterator[np.ndarray]:
        """Vectors of each batch, in order, keeping `in_flight` calls outstanding so a replica
        always has the next batch queued. A failed batch is re-sent (with backoff)."""
        role = TextRole(role)
        batches = iter(batches)
        pending: collections.deque = collections.deque()

        def fill() -> None:
            while len(pending) < max(1, in_flight):
                batch = next(batches, None)
                if batch is None:
                    return
                batch = list(batch)
                pending.append((batch, self._method.remote(batch, role.value)))

        fill()
        while pending:
            batch, response = pending.popleft()
            try:
                vectors = response.result(timeout_s=self.timeout_s)
            except RETRYABLE_ERRORS as error:
                self.retries += 1
                log.warning("encoder replica failed during a batch of %d texts (%s); re-sending", len(batch), type(error).__name__)
                time.sleep(self.backoff_s)
                vectors = self._encode_call(batch, role)
            vectors = self._check(vectors, len(batch))
            fill()
            yield vectors

    def _encode_call(self, texts: list[str], role: TextRole) -> np.ndarray:
        vectors = self._call(lambda: self._method.remote(texts, role.value), f"a batch of {len(texts)} texts")
        return self._check(vectors, len(texts))

    def _call(self, submit, what: str):
        return call_with_replica_retries(self, submit, what, "encoder", EncoderUnavailable)

    # -- the representation: dense arrays here; RaySparseEncoder overrides ----------------------

    def _check(self, vectors, count: int):
        check_vectors(vectors, count, self.dimension, f"encoder deployment {self.app_name}")
        return vectors

    @staticmethod
    def _join(parts: list):
        return np.concatenate(parts)


class RaySparseEncoder(RayEncoder):
    """SparseEncoderCore's surface over a sparse encoder deployment: one SparseVector per text,
    `dimension` is the vocabulary. Batching, in-flight calls and retries as RayEncoder's."""

    kind = protocol.SPARSE

    def _check(self, vectors, count: int):
        return check_sparse_vectors(vectors, count, self.dimension, f"encoder deployment {self.app_name}")

    @staticmethod
    def _join(parts: list):
        return [vector for part in parts for vector in part]


def ray_encoder_for(handle_or_app_name: serve.handle.DeploymentHandle | str = DEFAULT_APP_NAME, **options) -> RayEncoder:
    """RayEncoder or RaySparseEncoder, whichever the deployment's model needs (options as RayEncoder's)."""
    handle = serve.get_app_handle(handle_or_app_name) if isinstance(handle_or_app_name, str) else handle_or_app_name
    kind = handle.describe.remote().result(timeout_s=options.get("timeout_s", 600.0)).get("kind", protocol.DENSE)
    encoder = (RaySparseEncoder if kind == protocol.SPARSE else RayEncoder)(handle, **options)
    if isinstance(handle_or_app_name, str):
        encoder.app_name = handle_or_app_name
    return encoder
