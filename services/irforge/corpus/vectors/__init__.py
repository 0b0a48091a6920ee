"""Vector backends: `embedded` (Qdrant Edge, in-process, on disk), `qdrant` (a Qdrant server) and
`elasticsearch` (an Elasticsearch server; learned sparse vectors only).

Besides the factory, this module holds the few rules both backends share, so they cannot drift:
point ids, input checks, and the tie-safe cut of an engine's answer to k hits.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import platformdirs

from irforge.corpus.lexical.base import CorpusState
from irforge.common.extras import require_extra
from irforge.corpus.errors import CorpusConflict
from irforge.corpus.vectors.base import (
    DISTANCES, SPARSE_KIND, DimensionMismatch, HnswSettings, SparseVector, VectorBackend,
)
from irforge.ranking import Ranking

BACKENDS = ("embedded", "qdrant", "elasticsearch")
SPARSE_ONLY = ("elasticsearch",)   # backends that hold learned sparse vectors only


def default_vector_dir() -> Path:
    """$IRFORGE_VECTOR_DIR, else the user's data directory (e.g. ~/.local/share/irforge/vectors)."""
    return Path(os.environ.get("IRFORGE_VECTOR_DIR") or Path(platformdirs.user_data_dir("irforge")) / "vectors")


def make_vector_backend(kind: str, *, vector_dir: str | Path | None = None, qdrant_url: str | None = None,
                        elasticsearch_url: str | None = None, exact_precision: str = "float32") -> VectorBackend:
    """Build a backend by name. Imports are lazy: the embedded default never loads qdrant-client.
    `exact_precision` is the embedded backend's (its exact search scores a flat file of that precision)."""
    if kind == "embedded":
        require_extra("dense", "qdrant_edge", "the embedded vector store (Qdrant Edge)")
        from irforge.corpus.vectors.edge import EdgeVectorBackend

        return EdgeVectorBackend(vector_dir or default_vector_dir(), exact_precision=exact_precision)
    if kind == "qdrant":
        require_extra("qdrant", "qdrant_client", "--vector-backend qdrant")
        from irforge.corpus.vectors.qdrant import QdrantServerBackend

        url = qdrant_url or os.environ.get("IRFORGE_QDRANT_URL")
        if not url:
            raise ValueError("the qdrant backend needs --qdrant-url or IRFORGE_QDRANT_URL")
        # The API key only ever comes from the environment; the backend reads the variable itself.
        api_key_env = "IRFORGE_QDRANT_API_KEY" if os.environ.get("IRFORGE_QDRANT_API_KEY") else None
        return QdrantServerBackend(url, api_key_env=api_key_env)
    if kind == "elasticsearch":
        require_extra("elasticsearch", "elasticsearch", "--vector-backend elasticsearch")
        from irforge.corpus.lexical import elasticsearch_auth_from_env, elasticsearch_url_from_env
        from irforge.corpus.vectors.elasticsearch import ElasticsearchSparseBackend

        # The lexical backend's URL and credentials (one server for BM25 and sparse vectors), never logged.
        return ElasticsearchSparseBackend(elasticsearch_url_from_env(elasticsearch_url), **elasticsearch_auth_from_env())
    raise ValueError(f"unknown vector backend {kind!r}; choose one of {', '.join(BACKENDS)}")


# -- shared by both backends -------------------------------------------------------------------

# Qdrant accepts only unsigned integers or UUIDs as point ids, so a doc id maps to a name-based
# UUID (stable across runs, machines and backends) and the doc id itself travels in the payload.
POINT_NAMESPACE = uuid.UUID("5b0c8f2e-6f4a-4d0e-9a57-6b1f3c2d7e10")
DOC_ID_FIELD = "doc_id"

# The engine cuts its answer at `limit` without trec_eval's tie rule, so a group of equal scores
# straddling rank k could come back in any order and lose the wrong members. Asking for k + 16 and
# re-ranking with irforge.ranking keeps the rule exact unless more than 16 documents tie at the cut.
TIE_MARGIN = 16

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def point_id(doc_id: str) -> str:
    return str(uuid.uuid5(POINT_NAMESPACE, doc_id))


def check_collection_id(collection_id: str) -> str:
    if not isinstance(collection_id, str) or not _SAFE_ID.match(collection_id):
        raise ValueError(
            f"collection id {collection_id!r} must start with a letter or digit and use only letters, digits, '.', '_', '-'"
        )
    return collection_id


def check_settings(dimension: int, distance: str) -> None:
    if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension <= 0:
        raise ValueError(f"dimension must be a positive integer, got {dimension!r}")
    if distance not in DISTANCES:
        raise ValueError(f"distance must be one of {', '.join(DISTANCES)}, got {distance!r}")


def reconciled(meta: dict, dimension: int, distance: str, fingerprint: str, hnsw: HnswSettings) -> dict:
    """The existing collection's meta if it is the one create() asks for; raises otherwise.

    m and ef_construct shape the stored graph, so a difference is a conflict; ef_search is only the
    search-time beam, so the latest create() sets it (the caller stores the returned meta).
    """
    name = meta["collection_id"]
    if meta["dimension"] != dimension and (meta["distance"], meta["fingerprint"]) == (distance, fingerprint):
        raise DimensionMismatch(f"collection {name!r} holds {meta['dimension']}-d vectors, not {dimension}-d")
    built = {key: meta["hnsw"][key] for key in ("m", "ef_construct")}
    if (meta["dimension"], meta["distance"], meta["fingerprint"], built) != (
        dimension, distance, fingerprint, {"m": hnsw.m, "ef_construct": hnsw.ef_construct}
    ):
        raise CorpusConflict(
            f"vector collection {name!r} exists with dimension {meta['dimension']}, distance {meta['distance']}, "
            f"fingerprint {meta['fingerprint'][:12]}, HNSW {built}; delete it or use another collection id"
        )
    return {**meta, "hnsw": hnsw.as_dict()}


def check_upsert(collection_id: str, doc_ids: list[str], vectors: np.ndarray, dimension: int, distance: str) -> np.ndarray:
    """The vectors as a C-contiguous float32 array, or the error the interface names."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"vectors must be a 2-d array (count, dimension), got shape {array.shape}")
    if array.shape[0] != len(doc_ids):
        raise ValueError(f"{len(doc_ids)} doc ids but {array.shape[0]} vectors")
    if array.shape[1] != dimension:
        raise DimensionMismatch(
            f"collection {collection_id!r} holds {dimension}-d vectors, got {array.shape[1]}-d (another model?)"
        )
    check_doc_ids(doc_ids)
    _check_finite(array, "vectors")
    if distance == "cosine" and len(array) and not np.linalg.norm(array, axis=1).all():
        raise ValueError("a zero vector has no cosine similarity; check the encoder output")
    return np.ascontiguousarray(array)


def check_doc_ids(doc_ids: list[str]) -> None:
    for doc_id in doc_ids:  # ids go into whitespace-separated TREC run files (the lexical rule)
        if not isinstance(doc_id, str) or not doc_id or any(c.isspace() for c in doc_id):
            raise ValueError(f"document id {doc_id!r} is empty or contains whitespace")
    if len(set(doc_ids)) != len(doc_ids):
        seen: set[str] = set()
        repeated = sorted({d for d in doc_ids if d in seen or seen.add(d)})
        raise ValueError(f"duplicate doc ids in one upsert: {repeated[:5]}")


# -- sparse collections: the same rules for both backends ----------------------------------------

def sparse_meta(collection_id: str, vocabulary: int, fingerprint: str) -> dict:
    """A new sparse collection's bookkeeping (the dense fields keep their meaning: dimension is
    the vocabulary, distance the dot product; no HNSW graph is built for sparse vectors)."""
    if not isinstance(vocabulary, int) or isinstance(vocabulary, bool) or vocabulary <= 0:
        raise ValueError(f"vocabulary must be a positive integer, got {vocabulary!r}")
    return {"format": 1, "kind": SPARSE_KIND, "collection_id": collection_id, "dimension": vocabulary,
            "distance": "dot", "fingerprint": fingerprint, "hnsw": None, "state": CorpusState.EMPTY.value, "point_count": 0}


def reconciled_sparse(meta: dict, vocabulary: int, fingerprint: str) -> dict:
    """The existing collection's meta if it is the sparse one create_sparse() asks for; raises otherwise."""
    if (meta.get("kind"), meta["dimension"], meta["fingerprint"]) != (SPARSE_KIND, vocabulary, fingerprint):
        raise CorpusConflict(
            f"vector collection {meta['collection_id']!r} exists as {meta.get('kind', 'dense')} with dimension "
            f"{meta['dimension']}, fingerprint {meta['fingerprint'][:12]}; delete it or use another collection id")
    return meta


def check_kind(meta: dict, sparse: bool) -> None:
    """Dense operations on a sparse collection (and the reverse) fail clearly instead of oddly."""
    if (meta.get("kind") == SPARSE_KIND) != sparse:
        have, want = ("sparse", "dense") if not sparse else ("dense", "sparse")
        raise ValueError(f"vector collection {meta['collection_id']!r} holds {have} vectors, not {want} ones")


def check_sparse(collection_id: str, vectors: list[SparseVector], vocabulary: int, what: str) -> list[tuple[list[int], list[float]]]:
    """(indices, values) as plain lists per vector, or the error the interface names."""
    checked = []
    for row, vector in enumerate(vectors):
        indices = np.asarray(vector[0])
        values = np.asarray(vector[1], dtype=np.float32)
        if indices.ndim != 1 or values.ndim != 1 or len(indices) != len(values):
            raise ValueError(f"{what} {row}: indices and values must be 1-d and of equal length")
        if len(indices) and (not np.issubdtype(indices.dtype, np.integer) or indices.min() < 0 or indices.max() >= vocabulary):
            raise DimensionMismatch(
                f"collection {collection_id!r} has a vocabulary of {vocabulary}; {what} {row} has indices outside it (another model?)")
        if len(np.unique(indices)) != len(indices):
            raise ValueError(f"{what} {row} repeats an index")
        if not np.isfinite(values).all():
            raise ValueError(f"{what} hold NaN or infinite values (row {row})")
        checked.append((indices.astype(np.int64).tolist(), values.tolist()))
    return checked


def check_sparse_upsert(collection_id: str, doc_ids: list[str], vectors: list[SparseVector],
                        vocabulary: int) -> list[tuple[list[int], list[float]]]:
    """upsert_sparse's checks, as check_upsert's for dense: one vector per id, ids usable, vectors valid."""
    if len(doc_ids) != len(vectors):
        raise ValueError(f"{len(doc_ids)} doc ids but {len(vectors)} vectors")
    check_doc_ids(doc_ids)
    return check_sparse(collection_id, vectors, vocabulary, "vectors")


def term_stats(term_counts: list[int]) -> dict:
    """config["document_terms"]: how many terms (non-zero dimensions) the stored documents have."""
    if not term_counts:
        return {"documents": 0, "mean": 0.0, "max": 0, "total": 0}
    total = int(sum(term_counts))
    return {"documents": len(term_counts), "mean": round(total / len(term_counts), 2), "max": int(max(term_counts)),
            "total": total}


def check_queries(collection_id: str, queries: np.ndarray, dimension: int) -> np.ndarray:
    array = np.asarray(queries, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"queries must be a 2-d array (count, dimension), got shape {array.shape}")
    if array.shape[1] != dimension:
        raise DimensionMismatch(
            f"collection {collection_id!r} holds {dimension}-d vectors, got {array.shape[1]}-d queries (another model?)"
        )
    _check_finite(array, "queries")
    return np.ascontiguousarray(array)


def check_k(k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _check_finite(array: np.ndarray, what: str) -> None:
    if not np.isfinite(array).all():
        rows = np.flatnonzero(~np.isfinite(array).all(axis=1))
        raise ValueError(f"{what} hold NaN or infinite values (rows {rows[:5].tolist()})")


def cut(scored: Iterable[tuple[str, float]], k: int) -> Ranking:
    """The engine's (doc id, score) candidates in trec_eval's order, cut to k."""
    return Ranking.of(dict(scored)).head(k)
