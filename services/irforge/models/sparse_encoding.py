"""Sparse vectors through the embedding cache: the same CachedEncoding (lookup, encode only what
is missing, commit before yield), with a sparse representation in the same SQLite table.

A sparse vector is stored as one blob, its n indices (int32 little-endian) then its n weights
(float32 little-endian), with `dimension` = n (its active terms). The encoder key (the sparse
encoder's identity, which says "kind": "sparse") keeps these rows apart from dense ones.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from irforge.common.progress import ProgressFactory
from irforge.corpus.vectors.base import SparseVector
from irforge.models.cache import EmbeddingCache, EmbeddingCacheError
from irforge.models.cached_encoding import DEFAULT_BATCH_SIZE, CachedEncoding
from irforge.models.encoder import TextRole
from irforge.models.sparse_encoder import check_sparse_vectors

_INDEX = np.dtype("<i4")
_VALUE = np.dtype("<f4")


def pack(vector: SparseVector) -> tuple[int, bytes]:
    return len(vector.indices), vector.indices.astype(_INDEX).tobytes() + vector.values.astype(_VALUE).tobytes()


def unpack(terms: int, blob: bytes) -> SparseVector:
    if len(blob) != terms * (_INDEX.itemsize + _VALUE.itemsize):
        raise EmbeddingCacheError(f"a cached sparse vector of {len(blob)} bytes is recorded with {terms} terms; "
                                  f"delete the cache file (it is only a cache)")
    split = terms * _INDEX.itemsize
    return SparseVector(np.frombuffer(blob[:split], dtype=_INDEX).astype(np.int32),
                        np.frombuffer(blob[split:], dtype=_VALUE).astype(np.float32))


class CachedSparseEncoding(CachedEncoding):
    """Iterator of (ids, list of SparseVector), in input order; `stats` as CachedEncoding's."""

    def _lookup(self, hashes: list[bytes]) -> dict:
        return {key: unpack(terms, blob) for key, (terms, blob) in
                self.cache.get_many_blobs(self.encoder_key, self.role, hashes).items()}

    def _checked(self, answer, count: int):
        return check_sparse_vectors(answer, count, self.dimension, f"sparse encoder {self.encoder_key}")

    def _store(self, keys: list[bytes], answer) -> None:
        self.cache.put_many_blobs(self.encoder_key, self.role, [(key, *pack(vector)) for key, vector in zip(keys, answer)])

    def _joined(self, rows: list) -> list[SparseVector]:
        return rows

    def _assemble(self, rows: list) -> list[SparseVector]:
        return rows


def encode_sparse_with_cache(encoder, cache: EmbeddingCache, role: TextRole, items: Iterable[tuple[str, str]],
                             batch_size: int = DEFAULT_BATCH_SIZE, progress: ProgressFactory | None = None,
                             total: int | None = None) -> CachedSparseEncoding:
    """encode_with_cache for a sparse encoder (SparseEncoderCore): (ids, sparse vectors) chunks."""
    return CachedSparseEncoding(encoder, cache, role, items, batch_size=batch_size, progress=progress, total=total)
