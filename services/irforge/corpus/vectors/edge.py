"""Embedded vector backend: Qdrant Edge (Qdrant's own engine, in-process) persisted on disk.

No server. Each collection lives in `<root>/<collection_id>/`:
    meta.json   id, dimension, distance, fingerprint, HNSW settings, state, point count
    shard/      the EdgeShard: segments, write-ahead log, edge_config.json

meta.json is the truth about readiness and is replaced atomically: upsert() writes EMPTY *before*
it touches the shard and commit() writes READY only after optimize() and flush() have returned, so
a crash anywhere in between leaves the collection EMPTY (refused by search) rather than half
indexed; upserting again and committing repairs it (the shard's WAL keeps what was written).

The HNSW graph is built only when HNSW search is wanted: it costs ~5.6 KB of RAM a vector and ~20
minutes a million on two cores, and exact search (the default) never reads it. Edge runs no
background optimizer; commit() opens the shard with indexing off (threshold 0), so optimize() only
merges segments, and meta.json says "graph": false. The first search with exact=False reopens the
shard with both thresholds at 1 KB (every point in the graph, so exact=False always means HNSW
search: Qdrant's defaults would quietly brute-force any segment under ~10 MB, i.e. < 6,600 384-d
vectors), optimizes, flushes, and only then writes "graph": true. A crash mid-build leaves
"graph": false and the next HNSW search finishes it. A collection without the key was committed
when commit() always built the graph.

Exact search does not go through the shard: commit() also writes the collection's vectors as a
flat file (`flat/`, irforge.corpus.vectors.flat) that is scored by BLAS in blocks, several times
faster than Edge's exact path with the same rankings; HNSW search (exact=False) is Edge's. A
collection committed before the flat file existed gets it on its first exact search.

A shard folder can be open in one EdgeShard at a time (its WAL is locked): two backends, or two
processes, on the same root cannot use one collection at once.
"""

from __future__ import annotations

import json
import shutil
import threading
from importlib import metadata
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from irforge.common.files import NoSpaceLeft, write_json_atomic
from irforge.corpus.errors import CorpusNotFound, CorpusNotReady
from irforge.corpus.lexical.base import CorpusState
from irforge.corpus.vectors import (
    DOC_ID_FIELD, TIE_MARGIN, check_collection_id, check_k, check_kind, check_queries, check_settings,
    check_sparse, check_sparse_upsert, check_upsert, cut, point_id, reconciled, reconciled_sparse, sparse_meta, term_stats,
)
from irforge.corpus.vectors.base import SPARSE_KIND, HnswSettings, SparseVector, VectorBackend, VectorCollectionInfo
from irforge.corpus.vectors.edge_shard import (
    NO_INDEXING, SPARSE_NAME, THRESHOLD_KB, dense_config, open_shard, stored_term_counts, stored_vectors,
)
from irforge.corpus.vectors.flat import FlatVectors, is_complete, stamp, write_flat
from irforge.ranking import Ranking

UPSERT_BATCH = 1024        # points per shard update: bounds the Python-side copies of one batch
QUERY_BATCH = 256          # queries per query_batch call
# Qdrant Edge writes through memory-mapped files: a disk that fills under them kills the process
# with SIGBUS (no error to catch). So room is checked before writing: an empty shard takes ~1 MiB
# (measured), a committed one ~4x its raw vectors (segments, copies while optimizing, the graph).
SHARD_ROOM = 8 * 2**20
ROOM_PER_VALUE = 4 * 4     # bytes per float32 vector component (or sparse term) written


class EdgeVectorBackend(VectorBackend):
    name = "embedded"

    def __init__(self, root: str | Path, exact_precision: str = "float32"):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.exact_precision = exact_precision   # the flat file's precision exact search scores (flat.PRECISIONS)
        self._lock = threading.RLock()   # one lock: shard handles, flat files and meta.json change together
        self._shards: dict[str, qe.EdgeShard] = {}
        self._flats: dict[str, FlatVectors] = {}
        self._indexing: dict[str, int] = {}   # the indexing threshold each open shard was opened with

    # -- metadata -------------------------------------------------------------------------

    def _dir(self, collection_id: str) -> Path:
        return self.root / check_collection_id(collection_id)

    def _read_meta(self, collection_id: str) -> dict | None:
        path = self._dir(collection_id) / "meta.json"
        return json.loads(path.read_text()) if path.is_file() else None

    def _require(self, collection_id: str) -> dict:
        meta = self._read_meta(collection_id)
        if meta is None:
            raise CorpusNotFound(collection_id)
        return meta

    def _check_room(self, collection_id: str, values: int) -> None:
        """NoSpaceLeft, before any write, when the disk lacks the room `values` more float32s need."""
        needed = SHARD_ROOM + values * ROOM_PER_VALUE
        free = shutil.disk_usage(self.root).free
        if free < needed:
            raise NoSpaceLeft(self._dir(collection_id), f"Qdrant Edge needs about {needed / 2**20:.0f} MiB free there "
                              f"and {free / 2**20:.1f} MiB are: a disk that fills under its memory-mapped files "
                              "kills the process")

    def _write_meta(self, meta: dict) -> None:
        write_json_atomic(self._dir(meta["collection_id"]) / "meta.json", meta)

    def _info(self, meta: dict) -> VectorCollectionInfo:
        if meta.get("kind") == SPARSE_KIND:
            return VectorCollectionInfo(
                collection_id=meta["collection_id"], dimension=meta["dimension"], distance=meta["distance"],
                fingerprint=meta["fingerprint"], state=CorpusState(meta["state"]), point_count=meta["point_count"],
                backend=self.name,
                config={
                    "engine": "qdrant-edge", "version": metadata.version("qdrant-edge-py"), "kind": SPARSE_KIND,
                    "vocabulary": meta["dimension"], "scoring": "exact dot product (sparse inverted index)",
                    "document_terms": meta.get("document_terms"),
                    "storage": str(self._dir(meta["collection_id"]) / "shard"),
                },
            )
        return VectorCollectionInfo(
            collection_id=meta["collection_id"], dimension=meta["dimension"], distance=meta["distance"],
            fingerprint=meta["fingerprint"], state=CorpusState(meta["state"]), point_count=meta["point_count"],
            backend=self.name,
            config={
                "engine": "qdrant-edge", "version": metadata.version("qdrant-edge-py"), "hnsw": meta["hnsw"],
                "indexing_threshold_kb": THRESHOLD_KB, "full_scan_threshold_kb": THRESHOLD_KB,
                "hnsw_graph": "built" if meta.get("graph", True) else "built by the first HNSW search",
                "storage": str(self._dir(meta["collection_id"]) / "shard"),
                "exact_search": {"engine": "irforge flat (numpy BLAS, blocks memory-mapped)",
                                 "precision": self.exact_precision},
            },
        )

    # -- shard handles --------------------------------------------------------------------

    def _shard(self, collection_id: str) -> qe.EdgeShard:
        """The open shard (opened on first use; the caller holds the lock)."""
        shard = self._shards.get(collection_id)
        if shard is None:
            shard = self._shards[collection_id] = open_shard(self._dir(collection_id) / "shard", collection_id)
        return shard

    def _close_shard(self, collection_id: str) -> None:
        flat = self._flats.pop(collection_id, None)
        if flat is not None:
            flat.close()
        self._indexing.pop(collection_id, None)
        shard = self._shards.pop(collection_id, None)
        if shard is not None:
            shard.close()

    def _shard_indexing(self, meta: dict, indexing_kb: int) -> qe.EdgeShard:
        """The open dense shard, reopened with `indexing_kb` as its indexing threshold if it has another."""
        collection_id = meta["collection_id"]
        if self._indexing.get(collection_id) != indexing_kb:
            shard = self._shards.pop(collection_id, None)
            if shard is not None:
                shard.close()   # the flat file stays open: only the shard's settings change
            self._shards[collection_id] = open_shard(self._dir(collection_id) / "shard", collection_id,
                                                     dense_config(meta, indexing_kb))
            self._indexing[collection_id] = indexing_kb
        return self._shards[collection_id]

    # -- collections ----------------------------------------------------------------------

    def create(self, collection_id: str, dimension: int, distance: str, fingerprint: str,
               hnsw: HnswSettings = HnswSettings()) -> VectorCollectionInfo:
        check_settings(dimension, distance)
        with self._lock:
            meta = self._read_meta(collection_id)
            if meta is not None:
                wanted = reconciled(meta, dimension, distance, fingerprint, hnsw)
                if wanted != meta:  # only ef_search can differ here
                    self._write_meta(wanted)
                return self._info(wanted)
            directory = self._dir(collection_id)
            if directory.exists():  # a create that crashed before writing meta.json
                self._close_shard(collection_id)
                shutil.rmtree(directory)
            self._check_room(collection_id, 0)
            meta = {
                "format": 1, "collection_id": collection_id, "dimension": dimension, "distance": distance,
                "fingerprint": fingerprint, "hnsw": hnsw.as_dict(), "state": CorpusState.EMPTY.value, "point_count": 0,
                "graph": False,
            }
            self._shards[collection_id] = qe.EdgeShard.create(str(directory / "shard"), dense_config(meta, NO_INDEXING))
            self._indexing[collection_id] = NO_INDEXING
            self._write_meta(meta)  # last: a collection exists once its meta.json does
            return self._info(meta)

    def info(self, collection_id: str) -> VectorCollectionInfo | None:
        meta = self._read_meta(collection_id)
        return None if meta is None else self._info(meta)

    def delete(self, collection_id: str) -> bool:
        with self._lock:
            directory = self._dir(collection_id)
            self._close_shard(collection_id)
            if not directory.exists():
                return False
            (directory / "meta.json").unlink(missing_ok=True)  # first, so a failed rmtree leaves no collection
            shutil.rmtree(directory)
            return True

    # -- writing --------------------------------------------------------------------------

    def upsert(self, collection_id: str, doc_ids: list[str], vectors: np.ndarray) -> int:
        doc_ids = list(doc_ids)
        with self._lock:
            meta = self._require(collection_id)
            check_kind(meta, sparse=False)
            array = check_upsert(collection_id, doc_ids, vectors, meta["dimension"], meta["distance"])
            self._check_room(collection_id, array.size)
            shard = self._shard(collection_id)
            meta = {**meta, "state": CorpusState.EMPTY.value}
            self._write_meta(meta)  # before the shard changes: see the module docstring
            for start in range(0, len(doc_ids), UPSERT_BATCH):
                rows = array[start:start + UPSERT_BATCH].tolist()
                points = [
                    qe.Point(point_id(doc_id), row, {DOC_ID_FIELD: doc_id})
                    for doc_id, row in zip(doc_ids[start:start + UPSERT_BATCH], rows, strict=True)
                ]
                shard.update(qe.UpdateOperation.upsert_points(points))
            self._write_meta({**meta, "point_count": shard.info().points_count})
            return len(doc_ids)

    def commit(self, collection_id: str) -> VectorCollectionInfo:
        with self._lock:
            meta = self._require(collection_id)
            sparse = meta.get("kind") == SPARSE_KIND
            # Dense: indexing off, so optimize() merges segments and builds no graph (module docstring).
            shard = self._shard(collection_id) if sparse else self._shard_indexing(meta, NO_INDEXING)
            shard.optimize()   # blocks until segments are merged
            shard.flush()      # segments on disk before meta.json says READY
            meta = {**meta, "state": CorpusState.READY.value, "point_count": shard.count(qe.CountRequest(exact=True))}
            if sparse:
                meta["document_terms"] = term_stats(stored_term_counts(shard))
            else:
                meta["graph"] = False
                self._write_flat(collection_id, shard, meta["dimension"])
            self._write_meta(meta)
            return self._info(meta)

    # -- search ---------------------------------------------------------------------------

    def search(self, collection_id: str, queries: np.ndarray, k: int, exact: bool = True) -> list[Ranking]:
        check_k(k)
        with self._lock:
            meta = self._require(collection_id)
            if meta["state"] != CorpusState.READY.value:
                raise CorpusNotReady(collection_id)
            check_kind(meta, sparse=False)
            array = check_queries(collection_id, queries, meta["dimension"])
            if exact:
                return self._flat(collection_id, meta).search(_as_stored(array, meta["distance"]), k)
            shard = self._graph(meta)
            params = qe.SearchParams(hnsw_ef=meta["hnsw"]["ef_search"])
            payload = qe.PayloadSelector.Include([DOC_ID_FIELD])
            results: list[Ranking] = []
            # Under the lock: a concurrent delete() or close() must not close the shard mid-query.
            # Edge spreads each batch over its own search threads, so little is lost.
            for start in range(0, len(array), QUERY_BATCH):
                requests = [
                    qe.QueryRequest(limit=k + TIE_MARGIN, query=qe.Query.Nearest(row), with_payload=payload, params=params)
                    for row in array[start:start + QUERY_BATCH].tolist()
                ]
                for points in shard.query_batch(qe.QueryBatchRequest(requests)):
                    results.append(cut(((p.payload[DOC_ID_FIELD], p.score) for p in points), k))
            return results

    def _graph(self, meta: dict) -> qe.EdgeShard:
        """The shard with its HNSW graph, built now from the stored vectors if commit() did not build it."""
        if not meta.get("graph", True):
            collection_id = meta["collection_id"]
            self._check_room(collection_id, meta["point_count"] * meta["dimension"])
            shard = self._shard_indexing(meta, THRESHOLD_KB)
            shard.optimize()   # blocks until every point is in the graph
            shard.flush()      # the graph on disk before meta.json says it is there
            self._write_meta({**meta, "graph": True})
        return self._shard(meta["collection_id"])

    # -- the flat file exact search scores --------------------------------------------------

    def _write_flat(self, collection_id: str, shard: qe.EdgeShard, dimension: int) -> None:
        """flat/ from the shard's stored vectors (what Edge scores: unit length for cosine, one per id)."""
        flat = self._flats.pop(collection_id, None)
        if flat is not None:
            flat.close()

        # float32 and, when asked for, float16 copies: 6 bytes a value, under the 16 _check_room counts per value.
        self._check_room(collection_id, shard.info().points_count * dimension // 2)
        write_flat(self._dir(collection_id) / "flat", stored_vectors(shard, dimension), dimension)

    def _flat(self, collection_id: str, meta: dict) -> FlatVectors:
        """The open flat file (written now from the shard for a collection committed before it existed)."""
        folder = self._dir(collection_id) / "flat"
        flat = self._flats.get(collection_id)
        if flat is None or flat.stamp != stamp(folder):   # stamp: another process may have committed since
            if not is_complete(folder):
                self._write_flat(collection_id, self._shard(collection_id), meta["dimension"])
            flat = self._flats[collection_id] = FlatVectors(folder, self.exact_precision)
        return flat

    # -- sparse collections ---------------------------------------------------------------

    def create_sparse(self, collection_id: str, vocabulary: int, fingerprint: str) -> VectorCollectionInfo:
        with self._lock:
            meta = self._read_meta(collection_id)
            if meta is not None:
                return self._info(reconciled_sparse(meta, vocabulary, fingerprint))
            meta = sparse_meta(collection_id, vocabulary, fingerprint)
            directory = self._dir(collection_id)
            if directory.exists():  # a create that crashed before writing meta.json
                self._close_shard(collection_id)
                shutil.rmtree(directory)
            self._check_room(collection_id, 0)
            # A sparse-only shard: Qdrant's inverted index scores the dot product exactly.
            config = qe.EdgeConfig(sparse_vectors={SPARSE_NAME: qe.EdgeSparseVectorParams()})
            self._shards[collection_id] = qe.EdgeShard.create(str(directory / "shard"), config)
            self._write_meta(meta)
            return self._info(meta)

    def upsert_sparse(self, collection_id: str, doc_ids: list[str], vectors: list[SparseVector]) -> int:
        doc_ids = list(doc_ids)
        with self._lock:
            meta = self._require(collection_id)
            check_kind(meta, sparse=True)
            rows = check_sparse_upsert(collection_id, doc_ids, vectors, meta["dimension"])
            self._check_room(collection_id, 2 * sum(len(indices) for indices, _ in rows))   # an index and a value per term
            shard = self._shard(collection_id)
            meta = {**meta, "state": CorpusState.EMPTY.value}
            self._write_meta(meta)  # before the shard changes, as upsert()
            for start in range(0, len(doc_ids), UPSERT_BATCH):
                points = [
                    qe.Point(point_id(doc_id), {SPARSE_NAME: qe.SparseVector(indices, values)}, {DOC_ID_FIELD: doc_id})
                    for doc_id, (indices, values) in zip(doc_ids[start:start + UPSERT_BATCH], rows[start:start + UPSERT_BATCH], strict=True)
                ]
                shard.update(qe.UpdateOperation.upsert_points(points))
            self._write_meta({**meta, "point_count": shard.info().points_count})
            return len(doc_ids)

    def search_sparse(self, collection_id: str, queries: list[SparseVector], k: int) -> list[Ranking]:
        check_k(k)
        with self._lock:
            meta = self._require(collection_id)
            if meta["state"] != CorpusState.READY.value:
                raise CorpusNotReady(collection_id)
            check_kind(meta, sparse=True)
            rows = check_sparse(collection_id, queries, meta["dimension"], "queries")
            shard = self._shard(collection_id)
            params = qe.SearchParams(exact=True)
            payload = qe.PayloadSelector.Include([DOC_ID_FIELD])
            results: list[Ranking] = []
            for start in range(0, len(rows), QUERY_BATCH):
                requests = [
                    qe.QueryRequest(limit=k + TIE_MARGIN, query=qe.Query.Nearest(qe.SparseVector(indices, values), using=SPARSE_NAME),
                                    with_payload=payload, params=params)
                    for indices, values in rows[start:start + QUERY_BATCH]
                ]
                for points in shard.query_batch(qe.QueryBatchRequest(requests)):
                    results.append(cut(((p.payload[DOC_ID_FIELD], p.score) for p in points), k))
            return results

    def close(self) -> None:
        with self._lock:
            for collection_id in list(self._shards) + list(self._flats):
                self._close_shard(collection_id)


def _as_stored(queries: np.ndarray, distance: str) -> np.ndarray:
    """Queries as Edge scores them: unit length for cosine (a zero query stays zero: every score 0)."""
    if distance != "cosine":
        return queries
    norms = np.linalg.norm(queries, axis=1, keepdims=True)
    return queries / np.where(norms == 0, 1, norms)
