"""Elasticsearch lexical backend: BEIR's Elasticsearch BM25 baseline, through the official client.

One index per corpus, `<index_prefix><corpus id, lowercased>`:
    settings   1 shard (exact collection statistics), a BM25 similarity with the corpus's k1 and b
    mappings   doc_id (keyword), title and text (the built-in `english` analyzer, that similarity)
    _meta      irforge's bookkeeping: corpus id, fingerprint, settings, state, document count
Search is BEIR's query: multi_match over title and text, best_fields, tie_breaker 0.5.
Secrets (API key, password) are read from environment variables named by the caller and are
never logged, stored or put in a message.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import elasticsearch
from elasticsearch import ApiError, Elasticsearch, NotFoundError, TransportError, UnsupportedProductError
from elasticsearch.helpers import streaming_bulk

from irforge.corpus.lexical.base import (
    CorpusInfo, CorpusState, DocumentError, Hit, IngestProgress, LexicalBackend, document_id_problem,
)
from irforge.corpus.errors import BackendUnavailable, CorpusConflict, CorpusError, CorpusNotFound, CorpusNotReady
from irforge.corpus.settings import Bm25Settings
from irforge.data.types import Document, Query
from irforge.ranking import ranked

SIMILARITY = "irforge_bm25"
ANALYZER = "english"
FIELDS = ["title", "text"]
TIE_BREAKER = 0.5
MAX_RESULT_WINDOW = 10_000   # Elasticsearch's default index.max_result_window: the largest `size`
MSEARCH_CHUNK = 100          # queries per _msearch request
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")   # the embedded backend's rule
# Index names are lowercase and at most 255 bytes: 55 for the prefix, 200 for the corpus id.
_SAFE_PREFIX = re.compile(r"^([a-z0-9][a-z0-9._-]{0,54})?$")
CLIENT_VERSION = elasticsearch.__versionstr__


def index_body(settings: Bm25Settings, meta: dict, *, replicas: int = 0) -> dict:
    """`settings` and `mappings` for indices.create."""
    field = {"type": "text", "analyzer": ANALYZER, "similarity": SIMILARITY}
    return {
        "settings": {
            # One shard: BM25's document frequencies and average length then cover the whole
            # corpus, as in bm25s and Lucene; several shards would each score with their own.
            "number_of_shards": 1,
            "number_of_replicas": replicas,
            # Documents become searchable only at ingest's explicit refresh (its commit); this
            # also speeds bulk loading.
            "refresh_interval": "-1",
            "similarity": {SIMILARITY: {"type": "BM25", "k1": settings.k1, "b": settings.b}},
        },
        "mappings": {
            "dynamic": "strict",
            "_meta": meta,
            # doc_id repeats _id because sorting on _id is disabled by default (ties need it).
            "properties": {"doc_id": {"type": "keyword"}, "title": field, "text": dict(field)},
        },
    }


def search_body(query_text: str, k: int) -> dict:
    """BEIR's Elasticsearch query, ties broken by doc id descending like trec_eval."""
    return {
        "query": {"multi_match": {
            "query": query_text, "type": "best_fields", "fields": list(FIELDS), "tie_breaker": TIE_BREAKER,
        }},
        "size": k,
        # Sorting on the doc id after the score makes the cut at k exact on ties, not index order.
        "sort": [{"_score": "desc"}, {"doc_id": "desc"}],
        "track_scores": True,
        "track_total_hits": False,
        "_source": False,
    }


def elasticsearch_config(settings: Bm25Settings, server_version: str) -> dict:
    """The full retrieval configuration, as recorded in results.json."""
    return {
        "implementation": "elasticsearch",
        "server_version": server_version,
        "client_version": CLIENT_VERSION,
        "similarity": "BM25 (Lucene)",
        "k1": settings.k1,
        "b": settings.b,
        "analyzer": "english (Elasticsearch built-in: standard tokenizer, possessive, lowercase, "
                    "English stopwords, Porter stemmer)",
        "fields": "title and text as separate fields",
        "query": f"multi_match best_fields tie_breaker {TIE_BREAKER}",
        "shards": 1,
    }


def version_mismatch(server_version: str, client_version: str = CLIENT_VERSION) -> str | None:
    """Why this client cannot talk to that server, or None when the major versions match."""
    server_major, client_major = server_version.split(".")[0], client_version.split(".")[0]
    if server_major == client_major:
        return None
    return (
        f"the server runs Elasticsearch {server_version} but the installed Python client is elasticsearch "
        f"{client_version}, which needs a {client_major}.x server; run an Elasticsearch {client_major}.x "
        f"server, or install the matching client: pip install 'elasticsearch>={server_major},<{int(server_major) + 1}'"
    )


def _redacted(url: str) -> str:
    """The URL without any user:password@ part."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _secret(variable: str) -> str:
    value = os.environ.get(variable)
    if not value:
        raise BackendUnavailable(f"environment variable {variable} is not set; set it to the Elasticsearch credential")
    return value


def _reason(error: object) -> str:
    """A bulk item's or msearch response's error as one line."""
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('reason', '')}".strip()
    return str(error)


class ElasticsearchBackend(LexicalBackend):
    name = "elasticsearch"

    def __init__(
        self, url: str, *, api_key_env: str | None = None, username_env: str | None = None,
        password_env: str | None = None, ca_certs: str | None = None, index_prefix: str = "irforge-",
        replicas: int = 0, request_timeout: float = 60, max_retries: int = 5, bulk_batch_size: int = 500,
    ):
        if not _SAFE_PREFIX.match(index_prefix):
            raise ValueError(f"index prefix {index_prefix!r} must be lowercase letters, digits, '.', '_', '-'")
        if (username_env is None) != (password_env is None):
            raise ValueError("give both username_env and password_env, or neither")
        if bulk_batch_size <= 0:
            raise ValueError(f"bulk_batch_size must be positive, got {bulk_batch_size}")
        self.url = _redacted(url)
        self.index_prefix = index_prefix
        self.replicas = replicas
        self.max_retries = max_retries
        self.bulk_batch_size = bulk_batch_size
        self._lock = threading.RLock()
        self._client = Elasticsearch(
            url,
            api_key=_secret(api_key_env) if api_key_env else None,
            basic_auth=(_secret(username_env), _secret(password_env)) if username_env else None,
            ca_certs=ca_certs,
            request_timeout=request_timeout,
            max_retries=max_retries,
            retry_on_timeout=True,
            retry_on_status=(429, 502, 503, 504),
        )
        self.server_version = self._check_server()

    # -- connection -----------------------------------------------------------------------

    def _check_server(self) -> str:
        where = f"Elasticsearch at {self.url}"
        try:
            server_version = self._client.info()["version"]["number"]
        except UnsupportedProductError:
            raise BackendUnavailable(
                f"the server at {self.url} is not Elasticsearch; point the backend at an Elasticsearch server"
            ) from None
        except ApiError as error:
            # An older major version refuses the client's "compatible-with=<client major>" header.
            if "media_type_header_exception" in str(error):
                raise BackendUnavailable(
                    f"{where} rejected the client's version header: it is older than the Python client "
                    f"elasticsearch {CLIENT_VERSION}; run an Elasticsearch {CLIENT_VERSION.split('.')[0]}.x server"
                ) from None
            if error.status_code in (401, 403):
                raise BackendUnavailable(
                    f"{where} refused the credentials ({error.status_code}); check the environment variables "
                    "named by api_key_env, or username_env and password_env"
                ) from None
            raise BackendUnavailable(f"{where} answered {error.status_code} to info(): {error.message}") from None
        except TransportError as error:
            raise BackendUnavailable(
                f"cannot reach {where} ({type(error).__name__}: {error.message}); start the server or fix the URL"
            ) from None
        problem = version_mismatch(server_version)
        if problem:
            raise BackendUnavailable(f"{where}: {problem}")
        return server_version

    @contextmanager
    def _reachable(self):
        """Turn a lost connection in the middle of work into BackendUnavailable."""
        try:
            yield
        except TransportError as error:
            raise BackendUnavailable(
                f"lost Elasticsearch at {self.url} ({type(error).__name__}: {error.message}); "
                "check the server and retry"
            ) from None

    # -- metadata -------------------------------------------------------------------------

    def _index(self, corpus_id: str) -> str:
        if not _SAFE_ID.match(corpus_id):
            raise ValueError(
                f"corpus id {corpus_id!r} must start with a letter or digit "
                "and use only letters, digits, '.', '_', '-'"
            )
        return self.index_prefix + corpus_id.lower()

    def _read_meta(self, corpus_id: str) -> dict | None:
        """The corpus's _meta, or None when its index does not exist or holds another corpus id."""
        index = self._index(corpus_id)
        try:
            with self._reachable():
                mapping = self._client.indices.get_mapping(index=index)
        except NotFoundError:
            return None
        # Keyed by the concrete index name, which differs from `index` when that is an alias.
        meta = next(iter(mapping.body.values()))["mappings"].get("_meta", {})
        if "fingerprint" not in meta:
            raise CorpusConflict(f"index {index!r} exists but was not made by irforge; use another index_prefix")
        # Index names are lowercase, so ids that differ only in case share one: only its owner sees it.
        return meta if meta["corpus_id"] == corpus_id else None

    def _write_meta(self, corpus_id: str, meta: dict) -> None:
        with self._reachable():
            self._client.indices.put_mapping(index=self._index(corpus_id), meta=meta)

    def _info(self, meta: dict) -> CorpusInfo:
        return CorpusInfo(
            corpus_id=meta["corpus_id"], fingerprint=meta["fingerprint"], state=CorpusState(meta["state"]),
            document_count=meta["document_count"], backend=self.name,
            config=elasticsearch_config(Bm25Settings(**meta["settings"]), self.server_version),
        )

    def create(self, corpus_id: str, fingerprint: str, settings: Bm25Settings) -> CorpusInfo:
        index = self._index(corpus_id)
        with self._lock:
            meta = {
                "format": 1, "corpus_id": corpus_id, "fingerprint": fingerprint, "settings": settings.as_dict(),
                "state": CorpusState.EMPTY.value, "document_count": 0,
            }
            try:
                with self._reachable():
                    self._client.indices.create(index=index, **index_body(settings, meta, replicas=self.replicas))
                return self._info(meta)
            except ApiError as error:
                if "resource_already_exists_exception" not in str(error):
                    raise
            existing = self._read_meta(corpus_id)  # made before, or by another process just now
            if existing is None:
                raise CorpusConflict(
                    f"index {index!r} already holds a corpus whose id differs from {corpus_id!r} only in case; "
                    "use another corpus id"
                )
            if existing["fingerprint"] != fingerprint or existing["settings"] != settings.as_dict():
                raise CorpusConflict(
                    f"corpus {corpus_id!r} exists with fingerprint {existing['fingerprint'][:12]} and settings "
                    f"{existing['settings']}; delete it or use another corpus id"
                )
            return self._info(existing)

    def info(self, corpus_id: str) -> CorpusInfo | None:
        meta = self._read_meta(corpus_id)
        return None if meta is None else self._info(meta)

    def delete(self, corpus_id: str) -> bool:
        with self._lock:
            if self._read_meta(corpus_id) is None:
                return False
            try:
                with self._reachable():
                    self._client.indices.delete(index=self._index(corpus_id))
            except NotFoundError:
                return False
            return True

    # -- ingest ---------------------------------------------------------------------------

    def ingest(self, corpus_id: str, batches: Iterable[list[Document]]) -> Iterator[IngestProgress]:
        meta = self._read_meta(corpus_id)
        if meta is None:
            raise CorpusNotFound(corpus_id)
        index = self._index(corpus_id)
        if meta["state"] != CorpusState.EMPTY.value:
            # Until the final refresh the corpus is not what it will be: searching it must wait.
            meta = {**meta, "state": CorpusState.EMPTY.value}
            self._write_meta(corpus_id, meta)
        progress = IngestProgress()
        for batch in batches:
            progress.errors = []
            actions = []
            for document in batch:
                progress.received += 1
                problem = document_id_problem(document)
                if problem:
                    progress.failed += 1
                    progress.errors.append(DocumentError(document.doc_id, problem))
                    continue
                actions.append({
                    "_op_type": "index", "_index": index, "_id": document.doc_id,
                    "_source": {"doc_id": document.doc_id, "title": document.title, "text": document.text},
                })
            with self._reachable():
                # Rejected documents (429 included, after backing off) come back as items, not raised.
                for ok, item in streaming_bulk(
                    self._client, actions, chunk_size=self.bulk_batch_size, raise_on_error=False,
                    max_retries=self.max_retries, initial_backoff=1, max_backoff=60,
                ):
                    if ok:
                        progress.indexed += 1
                        continue
                    result = next(iter(item.values()))
                    progress.failed += 1
                    progress.errors.append(DocumentError(str(result.get("_id", "")), _reason(result.get("error"))))
            yield progress.snapshot()
        progress.errors = []
        with self._reachable():
            self._client.indices.refresh(index=index)
            count = self._client.count(index=index)["count"]
        self._write_meta(corpus_id, {**meta, "state": CorpusState.READY.value, "document_count": count})
        progress.committed = True
        yield progress.snapshot()

    # -- search ---------------------------------------------------------------------------

    def search(self, corpus_id: str, queries: list[Query], k: int) -> list[list[Hit]]:
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")
        if k > MAX_RESULT_WINDOW:
            raise ValueError(
                f"k must be at most {MAX_RESULT_WINDOW} (Elasticsearch's index.max_result_window), got {k}"
            )
        meta = self._read_meta(corpus_id)
        if meta is None:
            raise CorpusNotFound(corpus_id)
        if meta["state"] != CorpusState.READY.value:
            raise CorpusNotReady(corpus_id)
        results: list[list[Hit]] = []
        for start in range(0, len(queries), MSEARCH_CHUNK):
            chunk = queries[start:start + MSEARCH_CHUNK]
            searches = []
            for query in chunk:
                searches += [{}, search_body(query.text, k)]
            with self._reachable():
                responses = self._client.msearch(index=self._index(corpus_id), searches=searches)["responses"]
            for query, response in zip(chunk, responses, strict=True):
                if "error" in response:
                    raise CorpusError(
                        f"Elasticsearch failed query {query.query_id!r} on corpus {corpus_id!r}: "
                        f"{_reason(response['error'])}"
                    )
                scores = {hit["_id"]: float(hit["_score"]) for hit in response["hits"]["hits"]}
                results.append([Hit(doc_id, score) for doc_id, score in ranked(scores)])
        return results

    def close(self) -> None:
        self._client.close()
