"""The cross-encoder reranker core: a sentence-transformers CrossEncoder scoring (query, document)
pairs, one relevance score per document.

Transport-free, like EncoderCore: the Ray Serve deployment (reranker_serve.py) and the gRPC
Reranker service (reranker_server.py) wrap it; endpoint clients (irforge.endpoints.rerank) and the
listwise LLM reranker offer the same surface (`identity`, `describe()`, `score`, `score_batch`),
so RerankingRetriever takes any of them.

Models: a local folder (production mounts one) or a hub name present in the local hub cache;
nothing is downloaded (HF_HUB_OFFLINE=1). No cross-encoder weights ship in any package these
machines can install, so tests build one from the packaged all-MiniLM-L6-v2 bi-encoder with
`num_labels=1`: a randomly initialised head, near-constant scores, plumbing only. Such a model is
flagged `head_trained: False` in describe() and logged, so an evaluation with it is never mistaken
for a real reranker's.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from irforge.common.progress import quiet_library_bars
from irforge.models.encoder import resolve_model
from irforge.models.errors import ModelError, ModelNotFound, RerankError, RerankerUnavailable  # noqa: F401 - re-exported

os.environ.setdefault("HF_HUB_OFFLINE", "1")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RerankerSpec:
    """What to load and how to score. model/revision/max_length are identity; the rest is not."""

    model: str                      # a local folder, or a hub name in the local hub cache
    revision: str | None = None     # hub revision; local folders are identified by a hash of their weights
    max_length: int | None = None   # tokens of query + document; None keeps the model's cap
    batch_size: int = 32            # pairs per forward pass
    device: str | None = None       # "cpu", "cuda", "cuda:1"; None picks CUDA when present
    precision: str = "float32"      # "float16" / "bfloat16" on GPU


def check_scores(scores, count: int, source: str) -> np.ndarray:
    """float32 (count,) finite scores, or RerankError: never a silently misranked list."""
    scores = np.asarray(scores)
    if scores.ndim != 1:
        raise RerankError(f"{source} returned scores of shape {scores.shape}; a reranker gives one score "
                          f"per document (a cross-encoder with num_labels=1)")
    if scores.shape[0] != count:
        raise RerankError(f"{source} returned {scores.shape[0]} scores for {count} documents")
    if not np.issubdtype(scores.dtype, np.number):
        raise RerankError(f"{source} returned non-numeric scores ({scores.dtype})")
    scores = scores.astype(np.float32, copy=False)
    if not np.isfinite(scores).all():
        raise RerankError(f"{source} returned NaN or infinite scores")
    return scores


def _head_trained(source: str) -> bool | None:
    """False when a local folder is not a sequence-classification checkpoint (the head is then
    initialised at random by CrossEncoder); None when it cannot be told (hub names)."""
    config = Path(source) / "config.json"
    if not config.is_file():
        return None
    architectures = json.loads(config.read_text()).get("architectures") or []
    return any(name.endswith("ForSequenceClassification") for name in architectures)


class CrossEncoderReranker:
    def __init__(self, spec: RerankerSpec):
        from irforge.common.extras import require_extra

        CrossEncoder = require_extra("dense", "sentence_transformers", "a local cross-encoder reranker").CrossEncoder

        self.spec = spec
        source, self.name, self.revision = resolve_model(spec)  # duck-typed: uses model/revision only
        self.head_trained = _head_trained(source)
        quiet_library_bars()   # no "Loading weights" bar redrawn into a log
        try:
            self.model = CrossEncoder(source, num_labels=1, device=spec.device, revision=spec.revision,
                                      model_kwargs=self._model_kwargs())
        except OSError as error:  # not in the hub cache and downloads are off
            raise ModelNotFound(
                f"cannot load reranker {spec.model!r}: {error}. Give a local folder or pre-fetch it into the hub cache"
            ) from None
        if spec.max_length:
            self.model.max_seq_length = spec.max_length
        if self.head_trained is False:
            log.warning("reranker %s has no trained classification head (built from a bi-encoder checkpoint): "
                        "its scores are meaningless; use it for plumbing only", self.name)

    def _model_kwargs(self) -> dict:
        if self.spec.precision == "float32":
            return {}
        import torch

        return {"torch_dtype": {"float16": torch.float16, "bfloat16": torch.bfloat16}[self.spec.precision]}

    @property
    def identity(self) -> dict:
        """Everything that changes a score."""
        return {"kind": "cross-encoder", "model": self.name, "revision": self.revision,
                "max_length": int(self.model.max_seq_length),
                "activation": type(self.model.activation_fn).__name__}

    @property
    def identity_key(self) -> str:
        return hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()[:24]

    def describe(self) -> dict:
        return {**self.identity, "head_trained": self.head_trained, "device": str(self.model.device),
                "precision": self.spec.precision, "batch_size": self.spec.batch_size, "spec": asdict(self.spec)}

    def score(self, query: str, documents: list[str]) -> np.ndarray:
        """float32 (len(documents),): higher is more relevant."""
        return self.score_batch([(query, documents)])[0]

    def score_batch(self, items: list[tuple[str, list[str]]]) -> list[np.ndarray]:
        """Scores of several (query, documents) at once: all pairs go through one predict call, so
        short lists of different queries still fill the forward passes."""
        items = [(query, list(documents)) for query, documents in items]
        pairs = [(query, document) for query, documents in items for document in documents]
        if not pairs:
            return [np.zeros(0, dtype=np.float32) for _ in items]
        scores = check_scores(self.model.predict(pairs, batch_size=self.spec.batch_size, convert_to_numpy=True,
                                                 show_progress_bar=False), len(pairs), f"reranker {self.name}")
        bounds = np.cumsum([0] + [len(documents) for _, documents in items])
        return [scores[start:end] for start, end in itertools.pairwise(bounds)]
