"""float32 vectors <-> protobuf bytes: little-endian, row-major. ~10x cheaper than repeated float."""

from __future__ import annotations

import numpy as np

_FLOAT32_LE = np.dtype("<f4")


def pack_vectors(vectors: np.ndarray) -> bytes:
    array = np.asarray(vectors, dtype=_FLOAT32_LE)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {array.shape}")
    return np.ascontiguousarray(array).tobytes()


def unpack_vectors(data: bytes, count: int, dimension: int) -> np.ndarray:
    if count < 0 or dimension <= 0 and count:
        raise ValueError(f"bad vector shape ({count}, {dimension})")
    if len(data) != count * dimension * 4:
        raise ValueError(f"{len(data)} bytes cannot hold {count} vectors of dimension {dimension} (float32)")
    return np.frombuffer(data, dtype=_FLOAT32_LE).reshape(count, dimension).astype(np.float32)


# -- learned sparse vectors (irforge.v1.SparseVectors) ------------------------------------------

_INT32_LE = np.dtype("<i4")


def pack_sparse(vectors) -> tuple[list[int], bytes, bytes]:
    """(terms per vector, ids as int32 LE bytes, weights as float32 LE bytes) of sparse vectors
    (anything with `indices` and `values` arrays: irforge.corpus.vectors.base.SparseVector)."""
    vectors = list(vectors)
    terms = [len(vector.indices) for vector in vectors]
    if not vectors:
        return terms, b"", b""
    indices = np.concatenate([np.asarray(vector.indices, dtype=_INT32_LE) for vector in vectors])
    weights = np.concatenate([np.asarray(vector.values, dtype=_FLOAT32_LE) for vector in vectors])
    if len(indices) != len(weights):
        raise ValueError("a sparse vector has a different number of ids and weights")
    return terms, indices.tobytes(), weights.tobytes()


def unpack_sparse(terms, indices: bytes, weights: bytes) -> list[tuple[np.ndarray, np.ndarray]]:
    """(int32 ids, float32 weights) per vector, in order, as native writable arrays."""
    terms = [int(count) for count in terms]
    total = sum(terms)
    if any(count < 0 for count in terms):
        raise ValueError(f"negative term counts in sparse vectors: {terms}")
    if len(indices) != total * 4 or len(weights) != total * 4:
        raise ValueError(f"sparse vectors of {total} terms in all need {total * 4} bytes of ids and of weights, "
                         f"got {len(indices)} and {len(weights)}")
    ids = np.frombuffer(indices, dtype=_INT32_LE).astype(np.int32)
    values = np.frombuffer(weights, dtype=_FLOAT32_LE).astype(np.float32)
    bounds = np.cumsum([0, *terms])
    return [(ids[start:stop], values[start:stop]) for start, stop in zip(bounds[:-1], bounds[1:])]
