"""The sparse encoder core: a sentence-transformers `SparseEncoder` (SPLADE and kin), in-process.

Named and resolved exactly as dense models (irforge.models.encoder.resolve_model: folders by a hash
of their weights, packaged and hub names offline) and loaded once per process (_shared_model).
`encode` answers one SparseVector (vocabulary ids, weights) per text; `identity` names everything
that changes them, so the embedding cache and sparse collections are keyed by it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

import numpy as np

from irforge.common.progress import quiet_library_bars
from irforge.corpus.vectors.base import SparseVector
from irforge.models.encoder import EncoderSpec, TextRole, _shared_model, resolve_model
from irforge.models.errors import EncodingError, ModelNotFound


class SparseEncoderCore:
    kind = "sparse"

    def __init__(self, spec: EncoderSpec, max_active_dims: int | None = None):
        self.spec = spec
        self.max_active_dims = max_active_dims
        source, self.name, self.revision = resolve_model(spec)
        self.model = _shared_model(source, self.revision, spec, lambda: self._load(source), kind="sparse")
        # SparseEncoder.encode_query/encode_document already add the model's own prompts: a prefix
        # irforge adds is only the one given (None: none), as before prefixes had a model default.
        self.query_prefix, self.passage_prefix = spec.query_prefix or "", spec.passage_prefix or ""
        # The output dimension is the vocabulary (SPLADE's MLM head); ask the model, not the config.
        self.dimension = int(self._encode(["a"], TextRole.QUERY).shape[1])

    def _load(self, source: str):
        from irforge.common.extras import require_extra

        SparseEncoder = require_extra("sparse", "sentence_transformers", "a local sparse model (SPLADE)").SparseEncoder

        quiet_library_bars()   # no "Loading weights" bar redrawn into a log
        spec = self.spec
        try:
            model = SparseEncoder(source, device=spec.device, revision=spec.revision)
        except OSError as error:
            raise ModelNotFound(f"cannot load sparse model {spec.model!r}: {error}. Give a local folder or "
                                f"pre-fetch it into the hub cache") from None
        if spec.max_seq_length:
            model.max_seq_length = spec.max_seq_length
        return model

    @property
    def identity(self) -> dict:
        """Everything that changes a sparse vector; keys the cache and sparse collections."""
        return {
            "kind": self.kind, "model": self.name, "revision": self.revision, "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix, "max_seq_length": int(self.model.max_seq_length),
            "max_active_dims": self.max_active_dims, "vocabulary": self.dimension,
        }

    @property
    def identity_key(self) -> str:
        return hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()[:24]

    def describe(self) -> dict:
        spec = {key: value for key, value in asdict(self.spec).items() if key != "normalize"}  # unused here
        return {**self.identity, "distance": "dot", "device": str(self.model.device),
                "batch_size": self.spec.batch_size, "spec": spec}

    def _encode(self, texts: list[str], role: TextRole):
        prefix = self.query_prefix if role == TextRole.QUERY else self.passage_prefix
        method = self.model.encode_query if role == TextRole.QUERY else self.model.encode_document
        return method([prefix + text for text in texts], batch_size=self.spec.batch_size, show_progress_bar=False,
                      convert_to_sparse_tensor=True, max_active_dims=self.max_active_dims)

    def encode(self, texts: list[str], role: TextRole) -> list[SparseVector]:
        """One SparseVector per text (indices ascending, float32 weights); prefixes added here."""
        if not texts:
            return []
        matrix = self._encode(texts, role).coalesce().cpu()
        rows, columns = matrix.indices().numpy()
        values = matrix.values().float().numpy()
        if not np.isfinite(values).all():
            raise EncodingError(f"model {self.name} returned NaN or infinite weights")
        keep = values != 0
        rows, columns, values = rows[keep], columns[keep], values[keep]
        bounds = np.searchsorted(rows, np.arange(len(texts) + 1))  # coalesce() sorts by row, then column
        return [SparseVector(columns[bounds[i]:bounds[i + 1]].astype(np.int32), values[bounds[i]:bounds[i + 1]].astype(np.float32))
                for i in range(len(texts))]


def check_sparse_vectors(vectors: list[SparseVector], count: int, vocabulary: int, source: str) -> list[SparseVector]:
    """Reject answers that would be scored silently wrong (check_vectors' sparse twin)."""
    vectors = list(vectors)
    if len(vectors) != count:
        raise EncodingError(f"{source} returned {len(vectors)} vectors for {count} texts")
    for vector in vectors:
        if len(vector.indices) != len(vector.values) or not np.isfinite(vector.values).all():
            raise EncodingError(f"{source} returned a malformed sparse vector (lengths differ, NaN or inf)")
        if len(vector.indices) and (vector.indices.min() < 0 or vector.indices.max() >= vocabulary):
            raise EncodingError(f"{source} returned indices outside its vocabulary of {vocabulary}")
    return vectors
