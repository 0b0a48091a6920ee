"""Qdrant Edge shard helpers for the embedded backend (edge.py): opening, settings, reading back.

Kept apart from the backend so that edge.py holds the collection rules (meta.json, locking, when the
graph is built) and this module what is said to Qdrant Edge itself.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import qdrant_edge as qe

from irforge.corpus.errors import BackendUnavailable
from irforge.corpus.vectors import DOC_ID_FIELD

THRESHOLD_KB = 1           # indexing and full-scan thresholds once the graph is wanted: see edge.py's docstring
NO_INDEXING = 0            # Qdrant's indexing threshold that builds no HNSW graph
SCROLL_BATCH = 1024        # points per scroll page when reading stored vectors back
SPARSE_NAME = "sparse"     # a sparse shard's one named sparse vector
_DISTANCE = {"cosine": qe.Distance.Cosine, "dot": qe.Distance.Dot}


def open_shard(path: Path, collection_id: str, config: qe.EdgeConfig | None = None) -> qe.EdgeShard:
    """The shard at `path`; with `config`, load() checks it against the stored settings and writes it there."""
    try:
        return qe.EdgeShard.load(str(path), config)
    except Exception as error:  # qdrant_edge raises plain Exception
        if "WouldBlock" in str(error):
            raise BackendUnavailable(
                f"vector collection {collection_id!r} at {path} is open in another backend or process "
                f"(Qdrant Edge locks a shard to one user); close that one first"
            ) from None
        raise


def dense_config(meta: dict, indexing_kb: int) -> qe.EdgeConfig:
    """A dense shard's settings: indexing_kb NO_INDEXING builds no graph, THRESHOLD_KB puts every point in it."""
    return qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(size=meta["dimension"], distance=_DISTANCE[meta["distance"]]),
        hnsw_config=qe.HnswIndexConfig(m=meta["hnsw"]["m"], ef_construct=meta["hnsw"]["ef_construct"],
                                       full_scan_threshold=THRESHOLD_KB),
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=indexing_kb),
    )


def stored_vectors(shard: qe.EdgeShard, dimension: int):
    """(doc ids, float32 rows) pages of the stored dense vectors (what Edge scores: unit length for cosine)."""
    offset = None
    while True:
        records, offset = shard.scroll(qe.ScrollRequest(offset=offset, limit=SCROLL_BATCH, with_vector=True,
                                                        with_payload=qe.PayloadSelector.Include([DOC_ID_FIELD])))
        if records:
            yield ([record.payload[DOC_ID_FIELD] for record in records],
                   np.asarray([record.vector for record in records], dtype=np.float32).reshape(len(records), dimension))
        if offset is None:
            return


def stored_term_counts(shard: qe.EdgeShard) -> list[int]:
    """Terms per stored sparse document, read back from the shard (a re-upserted id counts once)."""
    counts: list[int] = []
    offset = None
    while True:
        records, offset = shard.scroll(qe.ScrollRequest(offset=offset, limit=SCROLL_BATCH, with_payload=False,
                                                        with_vector=[SPARSE_NAME]))
        counts.extend(len(record.vector[SPARSE_NAME].indices) for record in records)
        if offset is None:
            return counts
