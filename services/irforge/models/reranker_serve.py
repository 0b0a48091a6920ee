"""The cross-encoder reranker on Ray Serve: `RerankerDeployment` (one CrossEncoderReranker per
replica) and `RayReranker`, a client with CrossEncoderReranker's surface.

    start_local_ray()                                        # from irforge.models.serve
    handle = start_reranker_app(RerankerSpec("/models/bge-reranker-base"), RerankerDeploymentConfig(num_cpus=2))
    reranker = RayReranker(handle)                           # or RayReranker("reranker"): the app's name
    scores = reranker.score_batch([(query, documents), ...]) # one call carries many queries' pairs
    stop_local_ray()

The same choices as the encoder's deployment (irforge.models.serve, whose notes give the figures):
batches only (one call = many (query, documents) items, never one call per pair; no @serve.batch),
one forward pass at a time per replica, the spec validated in the driver so a missing model fails
fast with ModelNotFound, and a call whose replica dies mid-call re-sent with backoff (scoring is a
pure function of the batch, so a re-send is always safe).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import numpy as np
import ray
from ray import serve

from irforge.models.reranker import (
    CrossEncoderReranker,
    RerankerSpec,
    RerankerUnavailable,
    check_scores,
)
from irforge.models.serve import (
    EncoderDeploymentConfig,
    _replica_info,
    run_app,
    start_local_ray,
    validate_spec,
)
from irforge.models.serve_client import call_with_replica_retries

log = logging.getLogger(__name__)

DEFAULT_APP_NAME = "reranker"
DEPLOYMENT_NAME = "RerankerDeployment"
MAX_PAIRS_PER_CALL = 4096  # whole queries are grouped up to this many pairs per call


@dataclass(frozen=True)
class RerankerDeploymentConfig(EncoderDeploymentConfig):
    """The encoder deployment's Serve options (replicas, num_cpus = torch threads, num_gpus,
    max_ongoing_requests, health checks), under the reranker's deployment name."""

    def deployment_options(self) -> dict:
        return {**super().deployment_options(), "name": DEPLOYMENT_NAME}


@serve.deployment(name=DEPLOYMENT_NAME)
class RerankerDeployment:
    def __init__(self, spec: RerankerSpec, torch_threads: int | None = None):
        if torch_threads:
            import torch

            torch.set_num_threads(torch_threads)
        self.core = CrossEncoderReranker(spec)
        self._lock = threading.Lock()  # two forward passes at once only oversubscribe the cores

    def score_batch(self, items: list[tuple[str, list[str]]]) -> list[np.ndarray]:
        with self._lock:
            return self.core.score_batch(items)

    def describe(self) -> dict:
        return {**self.core.describe(), "identity": self.core.identity, "replica": _replica_info()}


def start_reranker_app(spec: RerankerSpec, config: RerankerDeploymentConfig = RerankerDeploymentConfig(),
                       name: str = DEFAULT_APP_NAME, route_prefix: str | None = None) -> serve.handle.DeploymentHandle:
    """Deploy the reranker as Serve application `name`; returns once every replica is ready.
    Starts loopback Ray if this process has none (start_local_ray: the machine rules applied)."""
    validate_spec(spec)  # duck-typed: uses model/revision only
    if not ray.is_initialized():
        start_local_ray()
    config = config.resolved()
    app = RerankerDeployment.options(**config.deployment_options()).bind(spec, config.torch_threads)
    return run_app(app, name, route_prefix, "reranker", spec.model)


class RayReranker:
    """CrossEncoderReranker's surface (identity, describe, score, score_batch) over a deployment."""

    def __init__(self, handle_or_app_name: serve.handle.DeploymentHandle | str = DEFAULT_APP_NAME, *,
                 max_retries: int = 3, backoff_s: float = 0.5, max_backoff_s: float = 8.0,
                 timeout_s: float | None = 600.0, max_pairs_per_call: int = MAX_PAIRS_PER_CALL):
        if isinstance(handle_or_app_name, str):
            self.app_name = handle_or_app_name
            self._handle = serve.get_app_handle(handle_or_app_name)
        else:
            self._handle = handle_or_app_name
            self.app_name = getattr(getattr(handle_or_app_name, "deployment_id", None), "app_name", None)
        self.max_retries, self.backoff_s, self.max_backoff_s = max_retries, backoff_s, max_backoff_s
        self.timeout_s = timeout_s
        self.max_pairs_per_call = max_pairs_per_call
        self.retries = 0  # calls re-sent after a replica failure, over this client's life
        self._description = self._call(lambda: self._handle.describe.remote(), "describe")
        self.name = self._description["model"]

    @property
    def identity(self) -> dict:
        return dict(self._description["identity"])

    def describe(self) -> dict:
        """The description a replica gave at connection time (its `replica` entry is that replica's)."""
        return {**self._description, "app": self.app_name}

    def counts(self) -> dict:
        return {"retries": self.retries}

    def score(self, query: str, documents: list[str]) -> np.ndarray:
        return self.score_batch([(query, documents)])[0]

    def score_batch(self, items: list[tuple[str, list[str]]]) -> list[np.ndarray]:
        """Scores per item, in order; whole items grouped into calls of at most max_pairs_per_call
        pairs (an item larger than that goes alone)."""
        items = [(query, list(documents)) for query, documents in items]
        results: list[np.ndarray] = []
        group: list[tuple[str, list[str]]] = []
        pairs = 0
        for item in items + [None]:
            if group and (item is None or pairs + len(item[1]) > self.max_pairs_per_call):
                results.extend(self._score_call(group))
                group, pairs = [], 0
            if item is not None:
                group.append(item)
                pairs += len(item[1])
        return results

    def _score_call(self, group: list[tuple[str, list[str]]]) -> list[np.ndarray]:
        size = sum(len(documents) for _, documents in group)
        answer = self._call(lambda: self._handle.score_batch.remote(group), f"a batch of {size} pairs")
        if len(answer) != len(group):
            raise RerankerUnavailable(f"reranker deployment {self.app_name!r} answered {len(answer)} lists for {len(group)} queries")
        source = f"reranker deployment {self.app_name}"
        return [check_scores(scores, len(documents), source) for scores, (_, documents) in zip(answer, group)]

    def _call(self, submit, what: str):
        return call_with_replica_retries(self, submit, what, "reranker", RerankerUnavailable)
