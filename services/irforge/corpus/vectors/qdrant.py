"""Qdrant server vector backend, through the official qdrant-client (REST).

One Qdrant collection per irforge collection, named `<prefix><collection id>`. irforge's
bookkeeping (collection id, dimension, distance, fingerprint, HNSW settings, state, point count)
lives in the collection's own `metadata` (Qdrant >= 1.16, qdrant-client >= 1.16): it is created
and deleted with the vectors, so no bookkeeping point pollutes searches and counts, and no separate
meta collection can drift out of step. A collection without that metadata was not made by irforge.

Loading follows Qdrant's bulk-upload advice: upsert() switches indexing off (indexing_threshold 0),
commit() switches it on, waits until the server reports the collection green with every point in
the HNSW graph, then marks READY. As in the embedded backend, thresholds of 1 KB make exact=False
always an HNSW search. The API key is read from the environment variable named by the caller and
never logged, stored or put in a message.
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from contextlib import contextmanager
from importlib import metadata

import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from irforge.common.redact import redact_url
from irforge.corpus.errors import BackendUnavailable, CorpusConflict, CorpusNotFound, CorpusNotReady
from irforge.corpus.lexical.base import CorpusState
from irforge.corpus.vectors import (
    DOC_ID_FIELD, TIE_MARGIN, check_collection_id, check_k, check_kind, check_queries, check_settings,
    check_sparse, check_sparse_upsert, check_upsert, cut, point_id, reconciled, reconciled_sparse, sparse_meta, term_stats,
)
from irforge.corpus.vectors.base import SPARSE_KIND, HnswSettings, SparseVector, VectorBackend, VectorCollectionInfo
from irforge.ranking import Ranking

MIN_SERVER = (1, 16)        # collection metadata arrived in Qdrant 1.16
THRESHOLD_KB = 1            # indexing and full-scan thresholds once committed (see the embedded backend)
QUERY_BATCH = 64            # queries per query_batch_points request
POLL_SECONDS = 0.5
_SAFE_PREFIX = re.compile(r"^[A-Za-z0-9._-]{0,55}$")
_DISTANCE = {"cosine": models.Distance.COSINE, "dot": models.Distance.DOT}
SPARSE_NAME = "sparse"      # the collection's one named sparse vector (as in the embedded backend)
LOCAL = ":memory:"          # url for qdrant-client's local mode (tests: the same client code, no server)


def _version(text: str) -> tuple[int, int]:
    major, minor = (re.findall(r"\d+", text) + ["0", "0"])[:2]
    return int(major), int(minor)


class QdrantServerBackend(VectorBackend):
    name = "qdrant"

    def __init__(self, url: str, *, api_key_env: str | None = None, prefix: str = "irforge-", timeout: float = 60,
                 upsert_batch: int = 256, parallel: int = 2, max_retries: int = 3, commit_timeout: float = 3600):
        if not _SAFE_PREFIX.match(prefix):
            raise ValueError(f"collection prefix {prefix!r} must use only letters, digits, '.', '_', '-' (55 at most)")
        if upsert_batch <= 0 or parallel <= 0 or max_retries < 0:
            raise ValueError("upsert_batch and parallel must be positive, max_retries not negative")
        api_key = None
        if api_key_env:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise BackendUnavailable(f"environment variable {api_key_env} is not set; set it to the Qdrant API key")
        self.url = redact_url(url)
        self.prefix = prefix
        self.upsert_batch = upsert_batch
        self.parallel = parallel
        self.max_retries = max_retries
        self.commit_timeout = commit_timeout
        self._lock = threading.RLock()
        # check_compatibility=False: _check_server below gives a clearer answer than the client's warning.
        if url == LOCAL:
            self._client = QdrantClient(location=LOCAL)
        else:
            self._client = QdrantClient(url=url, api_key=api_key, timeout=math.ceil(timeout), check_compatibility=False)
        self.server_version = self._check_server()

    # -- connection -----------------------------------------------------------------------

    def _check_server(self) -> str:
        with self._reachable("reach"):
            version = self._client.info().version
        if _version(version) < MIN_SERVER:
            raise BackendUnavailable(
                f"Qdrant at {self.url} runs {version}; irforge keeps its bookkeeping in collection metadata, "
                f"which needs Qdrant {MIN_SERVER[0]}.{MIN_SERVER[1]} or newer"
            )
        return version

    @contextmanager
    def _reachable(self, doing: str = "use"):
        """Connection failures and refused credentials become BackendUnavailable naming the URL."""
        try:
            yield
        except ResponseHandlingException as error:  # connect errors, timeouts, bad responses
            cause = error.source if getattr(error, "source", None) is not None else error
            raise BackendUnavailable(
                f"cannot {doing} Qdrant at {self.url} ({type(cause).__name__}: {cause}); start the server or fix the URL"
            ) from None
        except UnexpectedResponse as error:
            if error.status_code in (401, 403):
                raise BackendUnavailable(
                    f"Qdrant at {self.url} refused the credentials ({error.status_code}); check the API key variable"
                ) from None
            raise

    # -- metadata -------------------------------------------------------------------------

    def _name(self, collection_id: str) -> str:
        return self.prefix + check_collection_id(collection_id)

    def _read_meta(self, collection_id: str) -> dict | None:
        name = self._name(collection_id)
        if self.url == LOCAL and not self._client.collection_exists(name):
            return None  # local mode raises ValueError, not the server's 404
        try:
            with self._reachable():
                described = self._client.get_collection(name)
        except UnexpectedResponse as error:
            if error.status_code == 404:
                return None
            raise
        meta = described.config.metadata or {}
        if meta.get("collection_id") != collection_id or "fingerprint" not in meta:
            raise CorpusConflict(f"Qdrant collection {name!r} exists but was not made by irforge; use another prefix")
        return dict(meta)

    def _require(self, collection_id: str) -> dict:
        meta = self._read_meta(collection_id)
        if meta is None:
            raise CorpusNotFound(collection_id)
        return meta

    def _write_meta(self, meta: dict, **changes) -> None:
        """Update the bookkeeping, with any other collection settings in `changes`."""
        with self._reachable():
            self._client.update_collection(self._name(meta["collection_id"]), metadata=meta, **changes)

    def _info(self, meta: dict) -> VectorCollectionInfo:
        if meta.get("kind") == SPARSE_KIND:
            return VectorCollectionInfo(
                collection_id=meta["collection_id"], dimension=meta["dimension"], distance=meta["distance"],
                fingerprint=meta["fingerprint"], state=CorpusState(meta["state"]), point_count=meta["point_count"],
                backend=self.name,
                config={
                    "engine": "qdrant", "version": self.server_version, "client_version": metadata.version("qdrant-client"),
                    "kind": SPARSE_KIND, "vocabulary": meta["dimension"], "scoring": "exact dot product (sparse inverted index)",
                    "document_terms": meta.get("document_terms"),
                    "storage": f"{self.url} collection {self._name(meta['collection_id'])}",
                },
            )
        return VectorCollectionInfo(
            collection_id=meta["collection_id"], dimension=meta["dimension"], distance=meta["distance"],
            fingerprint=meta["fingerprint"], state=CorpusState(meta["state"]), point_count=meta["point_count"],
            backend=self.name,
            config={
                "engine": "qdrant", "version": self.server_version, "client_version": metadata.version("qdrant-client"),
                "hnsw": meta["hnsw"], "indexing_threshold_kb": THRESHOLD_KB, "full_scan_threshold_kb": THRESHOLD_KB,
                "storage": f"{self.url} collection {self._name(meta['collection_id'])}",
            },
        )

    # -- collections ----------------------------------------------------------------------

    def create(self, collection_id: str, dimension: int, distance: str, fingerprint: str,
               hnsw: HnswSettings = HnswSettings()) -> VectorCollectionInfo:
        check_settings(dimension, distance)
        with self._lock:
            meta = self._read_meta(collection_id)
            if meta is None:
                meta = {
                    "format": 1, "collection_id": collection_id, "dimension": dimension, "distance": distance,
                    "fingerprint": fingerprint, "hnsw": hnsw.as_dict(), "state": CorpusState.EMPTY.value,
                    "point_count": 0,
                }
                try:
                    with self._reachable():
                        self._client.create_collection(
                            self._name(collection_id),
                            vectors_config=models.VectorParams(size=dimension, distance=_DISTANCE[distance]),
                            hnsw_config=models.HnswConfigDiff(
                                m=hnsw.m, ef_construct=hnsw.ef_construct, full_scan_threshold=THRESHOLD_KB,
                            ),
                            optimizers_config=models.OptimizersConfigDiff(indexing_threshold=0),  # on at commit
                            metadata=meta,
                        )
                    return self._info(meta)
                except UnexpectedResponse as error:
                    if error.status_code != 409:  # 409: another process created it just now
                        raise
                meta = self._require(collection_id)
            wanted = reconciled(meta, dimension, distance, fingerprint, hnsw)
            if wanted != meta:  # only ef_search can differ here
                self._write_meta(wanted)
            return self._info(wanted)

    def info(self, collection_id: str) -> VectorCollectionInfo | None:
        meta = self._read_meta(collection_id)
        return None if meta is None else self._info(meta)

    def delete(self, collection_id: str) -> bool:
        with self._lock:
            if self._read_meta(collection_id) is None:
                return False
            with self._reachable():
                return bool(self._client.delete_collection(self._name(collection_id)))

    # -- writing --------------------------------------------------------------------------

    def upsert(self, collection_id: str, doc_ids: list[str], vectors: np.ndarray) -> int:
        doc_ids = list(doc_ids)
        with self._lock:
            meta = self._require(collection_id)
            check_kind(meta, sparse=False)
            array = check_upsert(collection_id, doc_ids, vectors, meta["dimension"], meta["distance"])
            name = self._name(collection_id)
            if meta["state"] != CorpusState.EMPTY.value:
                # Not searchable until the next commit; no re-indexing while points stream in.
                meta = {**meta, "state": CorpusState.EMPTY.value}
                self._write_meta(meta, optimizers_config=models.OptimizersConfigDiff(indexing_threshold=0))
            points = (
                models.PointStruct(id=point_id(doc_id), vector=row.tolist(), payload={DOC_ID_FIELD: doc_id})
                for doc_id, row in zip(doc_ids, array, strict=True)
            )
            # Worker processes pay off only when each gets several batches.
            parallel = self.parallel if len(doc_ids) > self.upsert_batch * self.parallel * 4 else 1
            with self._reachable():
                self._client.upload_points(
                    name, points, batch_size=self.upsert_batch, parallel=parallel, max_retries=self.max_retries,
                    wait=True,
                )
                count = self._client.count(name, exact=True).count
            self._write_meta({**meta, "point_count": count})
            return len(doc_ids)

    def commit(self, collection_id: str) -> VectorCollectionInfo:
        with self._lock:
            meta = self._require(collection_id)
            name = self._name(collection_id)
            sparse = meta.get("kind") == SPARSE_KIND
            self._write_meta(meta, optimizers_config=models.OptimizersConfigDiff(indexing_threshold=THRESHOLD_KB))
            count = self._wait_indexed(name, sparse)
            meta = {**meta, "state": CorpusState.READY.value, "point_count": count}
            if sparse:
                meta["document_terms"] = term_stats(self._stored_term_counts(name))
            self._write_meta(meta)
            return self._info(meta)

    def _wait_indexed(self, name: str, sparse: bool = False) -> int:
        """Block until the server has optimised the collection and indexed every point; the count.
        Sparse vectors are in the inverted index as soon as they are written: green is enough."""
        deadline = time.monotonic() + self.commit_timeout
        settled = 0
        while True:
            with self._reachable():
                described = self._client.get_collection(name)
                count = self._client.count(name, exact=True).count
            done = described.status == models.CollectionStatus.GREEN and (sparse or (described.indexed_vectors_count or 0) >= count)
            # Two calm polls in a row: the optimizer may not have picked the new threshold up yet.
            settled = settled + 1 if done else 0
            if settled >= 2:
                return count
            if time.monotonic() > deadline:
                raise BackendUnavailable(
                    f"Qdrant at {self.url} did not finish indexing collection {name!r} within {self.commit_timeout:.0f} s "
                    f"(status {described.status}, {described.indexed_vectors_count} of {count} indexed); commit again later"
                )
            time.sleep(POLL_SECONDS)

    # -- search ---------------------------------------------------------------------------

    def search(self, collection_id: str, queries: np.ndarray, k: int, exact: bool = True) -> list[Ranking]:
        check_k(k)
        meta = self._require(collection_id)
        if meta["state"] != CorpusState.READY.value:
            raise CorpusNotReady(collection_id)
        check_kind(meta, sparse=False)
        array = check_queries(collection_id, queries, meta["dimension"])
        params = models.SearchParams(exact=True) if exact else models.SearchParams(hnsw_ef=meta["hnsw"]["ef_search"])
        results: list[Ranking] = []
        for start in range(0, len(array), QUERY_BATCH):
            requests = [
                # k + TIE_MARGIN candidates, re-ranked by irforge's tie rule: see irforge.corpus.vectors.
                models.QueryRequest(query=row, limit=k + TIE_MARGIN, params=params, with_payload=[DOC_ID_FIELD])
                for row in array[start:start + QUERY_BATCH].tolist()
            ]
            with self._reachable():
                responses = self._client.query_batch_points(self._name(collection_id), requests=requests)
            for response in responses:
                results.append(cut(((p.payload[DOC_ID_FIELD], p.score) for p in response.points), k))
        return results

    # -- sparse collections ---------------------------------------------------------------

    def create_sparse(self, collection_id: str, vocabulary: int, fingerprint: str) -> VectorCollectionInfo:
        with self._lock:
            meta = self._read_meta(collection_id)
            if meta is None:
                meta = sparse_meta(collection_id, vocabulary, fingerprint)
                try:
                    with self._reachable():
                        self._client.create_collection(
                            self._name(collection_id), vectors_config={},
                            sparse_vectors_config={SPARSE_NAME: models.SparseVectorParams()}, metadata=meta,
                        )
                    return self._info(meta)
                except UnexpectedResponse as error:
                    if error.status_code != 409:  # 409: another process created it just now
                        raise
                meta = self._require(collection_id)
            return self._info(reconciled_sparse(meta, vocabulary, fingerprint))

    def upsert_sparse(self, collection_id: str, doc_ids: list[str], vectors: list[SparseVector]) -> int:
        doc_ids = list(doc_ids)
        with self._lock:
            meta = self._require(collection_id)
            check_kind(meta, sparse=True)
            rows = check_sparse_upsert(collection_id, doc_ids, vectors, meta["dimension"])
            name = self._name(collection_id)
            if meta["state"] != CorpusState.EMPTY.value:
                meta = {**meta, "state": CorpusState.EMPTY.value}
                self._write_meta(meta)
            points = (
                models.PointStruct(id=point_id(doc_id), payload={DOC_ID_FIELD: doc_id},
                                   vector={SPARSE_NAME: models.SparseVector(indices=indices, values=values)})
                for doc_id, (indices, values) in zip(doc_ids, rows, strict=True)
            )
            with self._reachable():
                self._client.upload_points(name, points, batch_size=self.upsert_batch, max_retries=self.max_retries, wait=True)
                count = self._client.count(name, exact=True).count
            self._write_meta({**meta, "point_count": count})
            return len(doc_ids)

    def _stored_term_counts(self, name: str) -> list[int]:
        """Terms per stored document, read back from the collection (a re-upserted id counts once)."""
        counts: list[int] = []
        offset = None
        while True:
            with self._reachable():
                records, offset = self._client.scroll(name, limit=self.upsert_batch * 4, offset=offset,
                                                      with_payload=False, with_vectors=[SPARSE_NAME])
            counts.extend(len(record.vector[SPARSE_NAME].indices) for record in records)
            if offset is None:
                return counts

    def search_sparse(self, collection_id: str, queries: list[SparseVector], k: int) -> list[Ranking]:
        check_k(k)
        meta = self._require(collection_id)
        if meta["state"] != CorpusState.READY.value:
            raise CorpusNotReady(collection_id)
        check_kind(meta, sparse=True)
        rows = check_sparse(collection_id, queries, meta["dimension"], "queries")
        # Local mode is always exact and warns about search params; a server is told so explicitly.
        params = None if self.url == LOCAL else models.SearchParams(exact=True)
        results: list[Ranking] = []
        for start in range(0, len(rows), QUERY_BATCH):
            requests = [
                models.QueryRequest(query=models.SparseVector(indices=indices, values=values), using=SPARSE_NAME,
                                    limit=k + TIE_MARGIN, params=params, with_payload=[DOC_ID_FIELD])
                for indices, values in rows[start:start + QUERY_BATCH]
            ]
            with self._reachable():
                responses = self._client.query_batch_points(self._name(collection_id), requests=requests)
            for response in responses:
                results.append(cut(((p.payload[DOC_ID_FIELD], p.score) for p in response.points), k))
        return results

    def close(self) -> None:
        self._client.close()
