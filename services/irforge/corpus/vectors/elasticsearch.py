"""Elasticsearch vector backend for learned sparse vectors (SPLADE), through the official client.

Sparse only: dense collections are refused by name (the embedded and qdrant backends hold them).
The connection, the credentials (environment variables named by the caller, never logged, stored
or put in a message) and the version check are the lexical backend's (`open_client`).

One index per collection, `<index_prefix><collection id, lowercased>`:
    settings   1 shard, refresh_interval -1 (documents become visible at commit's refresh)
    mappings   doc_id (keyword: the tie rule's sort key; _id cannot be sorted on), terms (integer:
               the terms stored for the document, for document_terms), vector (sparse_vector:
               term key -> weight, left out of _source); dynamic strict
    _meta      irforge's bookkeeping: sparse_meta's fields, document_terms, and a write token
A term key is the vocabulary id as a decimal string ("2161").

Readiness: upsert_sparse() writes EMPTY and a fresh write token into _meta before it sends a
document; commit() refreshes, counts and reads the term statistics back, then writes READY only if
the token is still its own, so search (which refuses anything but READY) never sees a partial index
and a crash leaves the collection EMPTY until the next commit. One writer per collection, as for
the other vector backends: the token catches an upsert that starts while a commit runs, not one
that starts in the instant of commit's final write.

Scoring: the `sparse_vector` query with `query_vector` (term key -> weight) and `prune: false` (an
index made by Elasticsearch 9.1+ prunes query terms by default; the query's setting overrides the
index's). Elasticsearch ORs one linear FeatureField clause per query term, boosted by the query
weight, so a document's score is the dot product sum_t q_t * d_t over the terms it shares with the
query: exact over the weights as *stored*. Those are not the float32 sent: Lucene's FeatureField
keeps a weight's top 9 significant bits (its float32 bits shifted right by 15: sign, exponent, 8
mantissa bits), truncating the rest, so d(1 - 2^-8) < stored d <= d. Query weights are used as
float32, exactly; each product is rounded to float32, the sum taken in double and returned as a
float32. A score is therefore at most 2^-8 (0.39 %) below numpy's dot product over the float32
weights, and above it by float32 rounding at most. `stored_weights` reproduces the truncation: with
it numpy gives Elasticsearch's scores to float32 rounding. Documents whose scores differ by less
than the truncation can swap places, and weights that differ only beyond 9 bits tie.

Elasticsearch stores strictly positive weights only: a negative weight is refused (ValueError), and
zero or subnormal weights (below float32's smallest normal, which FeatureField refuses) are dropped,
as they add nothing to a dot product. Hits are sorted by _score, then doc_id descending on the
server, so the cut at k is exact under irforge's tie rule; k is at most index.max_result_window.
"""

from __future__ import annotations

import secrets
from typing import NoReturn

import numpy as np
from elasticsearch import ApiError, NotFoundError
from elasticsearch.helpers import streaming_bulk

from irforge.corpus.errors import CorpusBusy, CorpusConflict, CorpusError, CorpusNotFound, CorpusNotReady
from irforge.corpus.lexical.base import CorpusState
from irforge.corpus.lexical.elasticsearch_connection import (
    CLIENT_VERSION, MAX_RESULT_WINDOW, MSEARCH_CHUNK, ElasticsearchConnection, error_reason, ranked_search_body,
)
from irforge.corpus.vectors import (
    check_collection_id, check_k, check_sparse, check_sparse_upsert, cut, reconciled_sparse, sparse_meta,
    term_stats,
)
from irforge.corpus.vectors.base import SPARSE_KIND, HnswSettings, SparseVector, VectorBackend, VectorCollectionInfo
from irforge.ranking import Ranking

VECTOR_FIELD = "vector"
MIN_WEIGHT = float(np.finfo(np.float32).tiny)   # FeatureField refuses anything below the smallest normal float32
STORED_BITS_MASK = np.uint32(0xFFFF8000)         # FeatureField keeps a float32's top 17 bits (9 significant)
WEIGHT_PRECISION = ("stored weights keep 9 significant bits (Lucene FeatureField, truncated): each is at most "
                    "2^-8 (0.39 %) below the float32 sent, so a score is at most 0.39 % below the exact dot product")
SCORING = "dot product over the stored weights (sparse_vector query, query_vector, prune false)"
# Index names are lowercase and at most 255 bytes: 55 for the prefix, 200 for the collection id.


def term_key(index: int) -> str:
    """A vocabulary id as the sparse_vector's feature name."""
    return str(int(index))


def stored_weights(values) -> np.ndarray:
    """The weights as Elasticsearch stores them: float32 truncated to its top 9 significant bits."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    return (bits & STORED_BITS_MASK).view(np.float32)


def positive_terms(indices: list[int], values: list[float], what: str, row: int) -> dict[str, float]:
    """term key -> weight for the weights Elasticsearch can hold; zero and subnormal ones dropped."""
    if any(value < 0 for value in values):
        raise ValueError(
            f"{what} {row} has a negative weight; Elasticsearch's sparse_vector holds strictly positive weights "
            "only (the embedded and qdrant vector backends take signed ones)")
    return {term_key(index): value for index, value in zip(indices, values, strict=True) if value >= MIN_WEIGHT}


def index_body(meta: dict, *, replicas: int = 0) -> dict:
    """`settings` and `mappings` for indices.create."""
    return {
        "settings": {
            # Scores do not depend on shard statistics here; one shard keeps the index simple to reason about.
            "number_of_shards": 1,
            "number_of_replicas": replicas,
            # Nothing is searchable before commit's refresh (search refuses the collection anyway);
            # this also speeds bulk loading.
            "refresh_interval": "-1",
        },
        "mappings": {
            "dynamic": "strict",
            "_meta": meta,
            # The vector is indexed (that is what scores) but kept out of _source: nothing reads it back.
            "_source": {"excludes": [VECTOR_FIELD]},
            "properties": {
                "doc_id": {"type": "keyword"},
                "terms": {"type": "integer"},
                VECTOR_FIELD: {"type": "sparse_vector"},
            },
        },
    }


def document(doc_id: str, terms: dict[str, float]) -> dict:
    """One document's _source."""
    return {"doc_id": doc_id, "terms": len(terms), VECTOR_FIELD: terms}


def search_body(terms: dict[str, float], k: int) -> dict:
    """The exact dot product of one query with every document sharing a term, ties by doc id descending."""
    return ranked_search_body({"sparse_vector": {"field": VECTOR_FIELD, "query_vector": terms, "prune": False}}, k)


def hits_from_response(response: dict, k: int) -> Ranking:
    """One msearch response as a Ranking in tie-rule order (raises CorpusError for an error response)."""
    if "error" in response:
        raise CorpusError(error_reason(response["error"]))
    return cut(((hit["_id"], float(hit["_score"])) for hit in response["hits"]["hits"]), k)


def stats_as_document_terms(stats: dict) -> dict:
    """A `stats` aggregation over the terms field as config["document_terms"] (term_stats' shape)."""
    if not stats.get("count"):
        return term_stats([])
    documents, total = int(stats["count"]), int(stats["sum"])
    return {"documents": documents, "mean": round(total / documents, 2), "max": int(stats["max"]), "total": total}


class ElasticsearchSparseBackend(ElasticsearchConnection, VectorBackend):
    name = "elasticsearch"

    def __init__(
        self, url: str, *, api_key_env: str | None = None, username_env: str | None = None,
        password_env: str | None = None, ca_certs: str | None = None, index_prefix: str = "irforge-vectors-",
        replicas: int = 0, request_timeout: float = 60, max_retries: int = 5, bulk_batch_size: int = 500,
    ):
        self._connect(url, api_key_env=api_key_env, username_env=username_env, password_env=password_env,
                      ca_certs=ca_certs, index_prefix=index_prefix, replicas=replicas,
                      request_timeout=request_timeout, max_retries=max_retries, bulk_batch_size=bulk_batch_size)

    # -- metadata -------------------------------------------------------------------------

    def _index(self, collection_id: str) -> str:
        return self.index_prefix + check_collection_id(collection_id).lower()

    def _read_meta(self, collection_id: str) -> dict | None:
        """The collection's _meta, or None when its index does not exist or holds another collection id."""
        index = self._index(collection_id)
        try:
            with self._reachable():
                mapping = self._client.indices.get_mapping(index=index)
        except NotFoundError:
            return None
        meta = next(iter(mapping.body.values()))["mappings"].get("_meta", {})
        if meta.get("kind") != SPARSE_KIND or "fingerprint" not in meta:
            raise CorpusConflict(f"index {index!r} exists but was not made by irforge; use another index_prefix")
        # Index names are lowercase, so ids that differ only in case share one: only its owner sees it.
        return meta if meta["collection_id"] == collection_id else None

    def _require(self, collection_id: str) -> dict:
        meta = self._read_meta(collection_id)
        if meta is None:
            raise CorpusNotFound(collection_id)
        return meta

    def _write_meta(self, meta: dict) -> None:
        with self._reachable():
            self._client.indices.put_mapping(index=self._index(meta["collection_id"]), meta=meta)

    def _info(self, meta: dict) -> VectorCollectionInfo:
        return VectorCollectionInfo(
            collection_id=meta["collection_id"], dimension=meta["dimension"], distance=meta["distance"],
            fingerprint=meta["fingerprint"], state=CorpusState(meta["state"]), point_count=meta["point_count"],
            backend=self.name,
            config={
                "engine": "elasticsearch", "version": self.server_version, "client_version": CLIENT_VERSION,
                "kind": SPARSE_KIND, "vocabulary": meta["dimension"], "field": "sparse_vector", "scoring": SCORING,
                "weight_precision": WEIGHT_PRECISION, "document_terms": meta.get("document_terms"),
                "storage": f"{self.url} index {self._index(meta['collection_id'])}",
            },
        )

    # -- collections ----------------------------------------------------------------------

    def create(self, collection_id: str, dimension: int, distance: str, fingerprint: str,
               hnsw: HnswSettings = HnswSettings()) -> VectorCollectionInfo:
        raise ValueError("the elasticsearch vector backend holds learned sparse vectors only; "
                         "dense vectors need the embedded or qdrant vector backend")

    def create_sparse(self, collection_id: str, vocabulary: int, fingerprint: str) -> VectorCollectionInfo:
        with self._lock:
            meta = self._read_meta(collection_id)
            if meta is None:
                meta = {**sparse_meta(collection_id, vocabulary, fingerprint), "write_token": ""}
                try:
                    with self._reachable():
                        self._client.indices.create(index=self._index(collection_id),
                                                    **index_body(meta, replicas=self.replicas))
                    return self._info(meta)
                except ApiError as error:
                    if "already_exists" not in str(error):
                        raise
                meta = self._read_meta(collection_id)  # made by another process just now, or case-different id
                if meta is None:
                    raise CorpusConflict(
                        f"index {self._index(collection_id)!r} already holds a collection whose id differs from "
                        f"{collection_id!r} only in case; use another collection id")
            return self._info(reconciled_sparse(meta, vocabulary, fingerprint))

    def _refuse_dense(self, collection_id: str) -> NoReturn:
        """Every collection here is sparse: a dense operation on one fails as on the other backends."""
        raise ValueError(f"vector collection {self._require(collection_id)['collection_id']!r} holds sparse vectors, "
                         "not dense ones")

    def info(self, collection_id: str) -> VectorCollectionInfo | None:
        meta = self._read_meta(collection_id)
        return None if meta is None else self._info(meta)

    def delete(self, collection_id: str) -> bool:
        with self._lock:
            if self._read_meta(collection_id) is None:
                return False
            with self._reachable():
                self._client.indices.delete(index=self._index(collection_id), ignore_unavailable=True)
            return True

    # -- writing --------------------------------------------------------------------------

    def upsert(self, collection_id: str, doc_ids: list[str], vectors: np.ndarray) -> int:
        self._refuse_dense(collection_id)

    def upsert_sparse(self, collection_id: str, doc_ids: list[str], vectors: list[SparseVector]) -> int:
        doc_ids = list(doc_ids)
        with self._lock:
            meta = self._require(collection_id)
            rows = check_sparse_upsert(collection_id, doc_ids, vectors, meta["dimension"])
            index = self._index(collection_id)
            actions = [
                {"_op_type": "index", "_index": index, "_id": doc_id,
                 "_source": document(doc_id, positive_terms(indices, values, "vectors", row))}
                for row, (doc_id, (indices, values)) in enumerate(zip(doc_ids, rows, strict=True))
            ]
            # Uncommitted before the first document goes in; the new token tells commit() that it happened.
            self._write_meta({**meta, "state": CorpusState.EMPTY.value, "write_token": secrets.token_hex(8)})
            failed: list[str] = []
            with self._reachable():
                # An id seen before is replaced (index op by _id): repeating an upsert is idempotent.
                for ok, item in streaming_bulk(
                    self._client, actions, chunk_size=self.bulk_batch_size, raise_on_error=False,
                    max_retries=self.max_retries, initial_backoff=1, max_backoff=60,
                ):
                    if not ok:
                        result = next(iter(item.values()))
                        failed.append(f"{result.get('_id', '')}: {error_reason(result.get('error'))}")
            if failed:
                raise CorpusError(f"Elasticsearch refused {len(failed)} of {len(doc_ids)} vectors for collection "
                                  f"{collection_id!r} (it stays uncommitted), first: {failed[0]}")
            return len(doc_ids)

    def commit(self, collection_id: str) -> VectorCollectionInfo:
        with self._lock:
            meta = self._require(collection_id)
            index = self._index(collection_id)
            with self._reachable():
                self._client.indices.refresh(index=index)
                count = self._client.count(index=index)["count"]
                stats = self._client.search(index=index, size=0, track_total_hits=False,
                                            aggs={"terms": {"stats": {"field": "terms"}}})["aggregations"]["terms"]
            latest = self._require(collection_id)
            if latest.get("write_token") != meta.get("write_token"):
                raise CorpusBusy(collection_id)  # an upsert began after this commit read the bookkeeping
            meta = {**latest, "state": CorpusState.READY.value, "point_count": count,
                    "document_terms": stats_as_document_terms(stats)}
            self._write_meta(meta)
            return self._info(meta)

    # -- search ---------------------------------------------------------------------------

    def search(self, collection_id: str, queries: np.ndarray, k: int, exact: bool = True) -> list[Ranking]:
        check_k(k)
        self._refuse_dense(collection_id)

    def search_sparse(self, collection_id: str, queries: list[SparseVector], k: int) -> list[Ranking]:
        check_k(k)
        if k > MAX_RESULT_WINDOW:
            raise ValueError(f"k must be at most {MAX_RESULT_WINDOW} (Elasticsearch's index.max_result_window), got {k}")
        meta = self._require(collection_id)
        if meta["state"] != CorpusState.READY.value:
            raise CorpusNotReady(collection_id)
        terms = [positive_terms(indices, values, "query", row)
                 for row, (indices, values) in enumerate(check_sparse(collection_id, queries, meta["dimension"], "queries"))]
        # A query without terms matches nothing. Every answer is built by `cut`, the one place that
        # shapes hits for all vector backends.
        results = [cut((), k) for _ in terms]
        asked = [row for row, query in enumerate(terms) if query]
        for start in range(0, len(asked), MSEARCH_CHUNK):
            chunk = asked[start:start + MSEARCH_CHUNK]
            searches: list[dict] = []
            for row in chunk:
                searches += [{}, search_body(terms[row], k)]
            with self._reachable():
                responses = self._client.msearch(index=self._index(collection_id), searches=searches)["responses"]
            for row, response in zip(chunk, responses, strict=True):
                try:
                    results[row] = hits_from_response(response, k)
                except CorpusError as error:
                    raise CorpusError(f"Elasticsearch failed query {row} on collection {collection_id!r}: {error}") from None
        return results

    def close(self) -> None:
        self._client.close()
