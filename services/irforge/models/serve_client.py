"""The client side of the Ray Serve deployments: RayEncoder (EncoderCore's surface over a
DeploymentHandle, whole batches per call), RaySparseEncoder, ray_encoder_for (picks one from the
deployment's description), and the retry rule every Serve client shares (call_with_replica_retries,
also RayReranker's in reranker_serve.py): a batch whose replica dies mid-call is re-sent with capped
exponential backoff, never lost. The deployment and Ray's start-up are irforge.models.serve.

    encoder = RayEncoder(handle)                          # or RayEncoder("encoder"): the app's name
    vectors = encoder.encode(texts, TextRole.PASSAGE)     # one call per batch, never one per text
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Iterable, Iterator

import numpy as np
from ray import serve
from ray.exceptions import RayActorError, WorkerCrashedError
from ray.serve.exceptions import ReplicaUnavailableError

from irforge.models import protocol
from irforge.models.encoder import TextRole, check_vectors
from irforge.models.errors import ModelError, WrongModelKind
from irforge.models.serve import DEFAULT_APP_NAME
from irforge.models.sparse_encoder import check_sparse_vectors

log = logging.getLogger(__name__)

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
