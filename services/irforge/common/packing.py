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
