"""Elasticsearch lexical backend: BEIR's Elasticsearch BM25 baseline, through the official client.

Per corpus, an alias `<index_prefix><corpus id, lowercased>` over one generation index
`<alias>-g<N>-<token>`:
    settings   1 shard (exact collection statistics), a BM25 similarity with the corpus's k1 and b
    mappings   doc_id (keyword), title and text (the language's built-in analyzer, that similarity)
    _meta      irforge's bookkeeping: corpus id, fingerprint, settings, state, document count
Every ingest writes a new generation (a copy of the committed documents plus the new ones) and
commits by switching the alias in one atomic update_aliases call, so searches never see a partial
or emptied index and an aborted ingest only leaves a generation that is deleted. The switch
names the generation it replaces (must_exist): if another process committed meanwhile, it fails
and nothing of either ingest is lost. The previous generation is kept until the next commit
(a search may still be reading it). Indexes made before aliases (a concrete index named like
the alias) are migrated on their next ingest, with a moment in which the corpus is not found.
Search is BEIR's query: multi_match over title and text, best_fields, tie_breaker 0.5.
The connection (client, credentials, version check) is elasticsearch_connection.py, shared with the
sparse vector backend.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Iterator

from elasticsearch import ApiError, NotFoundError
from elasticsearch.helpers import streaming_bulk

from irforge.corpus.errors import CorpusBusy, CorpusConflict, CorpusError, CorpusNotFound, CorpusNotReady
from irforge.corpus.lexical.base import (
    CorpusInfo, CorpusState, DocumentError, IngestProgress, LexicalBackend, document_id_problem,
)
from irforge.corpus.lexical.elasticsearch_connection import (
    CLIENT_VERSION, MAX_RESULT_WINDOW, MSEARCH_CHUNK, ElasticsearchConnection, error_reason, ranked_search_body,
)
from irforge.corpus.lexical.elasticsearch_analyzers import analyzer_name, describe
from irforge.corpus.settings import Bm25Settings
from irforge.data.types import Document, Query
from irforge.ranking import Ranking

SIMILARITY = "irforge_bm25"
FIELDS = ["title", "text"]
TIE_BREAKER = 0.5
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")   # the embedded backend's rule
_GENERATION = re.compile(r"-g(\d{6})-[0-9a-f]{8}$")


def index_body(settings: Bm25Settings, meta: dict, *, replicas: int = 0) -> dict:
    """`settings` and `mappings` for indices.create."""
    field = {"type": "text", "analyzer": analyzer_name(settings.language), "similarity": SIMILARITY}
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
    return ranked_search_body({"multi_match": {
        "query": query_text, "type": "best_fields", "fields": list(FIELDS), "tie_breaker": TIE_BREAKER,
    }}, k)


def elasticsearch_config(settings: Bm25Settings, server_version: str) -> dict:
    """The full retrieval configuration, as recorded in results.json."""
    return {
        "implementation": "elasticsearch",
        "server_version": server_version,
        "client_version": CLIENT_VERSION,
        "similarity": "BM25 (Lucene)",
        "k1": settings.k1,
        "b": settings.b,
        "language": settings.language,
        "analyzer": describe(settings.language),
        "fields": "title and text as separate fields",
        "query": f"multi_match best_fields tie_breaker {TIE_BREAKER}",
        "shards": 1,
    }



class ElasticsearchBackend(ElasticsearchConnection, LexicalBackend):
    name = "elasticsearch"

    def __init__(
        self, url: str, *, api_key_env: str | None = None, username_env: str | None = None,
        password_env: str | None = None, ca_certs: str | None = None, index_prefix: str = "irforge-",
        replicas: int = 0, request_timeout: float = 60, max_retries: int = 5, bulk_batch_size: int = 500,
    ):
        self._connect(url, api_key_env=api_key_env, username_env=username_env, password_env=password_env,
                      ca_certs=ca_certs, index_prefix=index_prefix, replicas=replicas,
                      request_timeout=request_timeout, max_retries=max_retries, bulk_batch_size=bulk_batch_size)

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

    def _generation_name(self, alias: str, number: int) -> str:
        return f"{alias}-g{number:06d}-{secrets.token_hex(4)}"

    def _current(self, alias: str) -> str | None:
        """The concrete index behind the corpus's alias (or a pre-alias index of that name)."""
        with self._reachable():
            try:
                return next(iter(self._client.indices.get_alias(name=alias).body))
            except NotFoundError:
                pass
            return alias if self._client.indices.exists(index=alias) else None

    def _generations(self, alias: str) -> list[str]:
        with self._reachable():
            try:
                names = list(self._client.indices.get(index=f"{alias}-g*", expand_wildcards="all").body)
            except NotFoundError:
                return []
        return sorted(n for n in names if _GENERATION.search(n) and n.startswith(alias + "-g"))

    def create(self, corpus_id: str, fingerprint: str, settings: Bm25Settings) -> CorpusInfo:
        if analyzer_name(settings.language) is None:
            raise CorpusError(f"Elasticsearch has no built-in analyzer for {settings.analyzer.language.name} "
                              f"({settings.language}); use the embedded backend, which analyses it")
        alias = self._index(corpus_id)
        with self._lock:
            meta = {
                "format": 2, "corpus_id": corpus_id, "fingerprint": fingerprint, "settings": settings.as_dict(),
                "state": CorpusState.EMPTY.value, "document_count": 0,
            }
            current = self._current(alias)
            existing = self._read_meta(corpus_id) if current else None
            if current is None:
                try:
                    with self._reachable():
                        self._client.indices.create(index=self._generation_name(alias, 1), aliases={alias: {}},
                                                    **index_body(settings, meta, replicas=self.replicas))
                    return self._info(meta)
                except ApiError as error:
                    if "already_exists" not in str(error) and "invalid_alias_name" not in str(error):
                        raise
                existing = self._read_meta(corpus_id)  # made by another process just now
            if existing is None:
                raise CorpusConflict(
                    f"index {alias!r} already holds a corpus whose id differs from {corpus_id!r} only in case; "
                    "use another corpus id"
                )
            if existing["fingerprint"] != fingerprint or Bm25Settings(**existing["settings"]) != settings:
                raise CorpusConflict(
                    f"corpus {corpus_id!r} exists with fingerprint {existing['fingerprint'][:12]} and settings "
                    f"{existing['settings']}; delete it or use another corpus id"
                )
            return self._info(existing)

    def info(self, corpus_id: str) -> CorpusInfo | None:
        meta = self._read_meta(corpus_id)
        return None if meta is None else self._info(meta)

    def delete(self, corpus_id: str) -> bool:
        alias = self._index(corpus_id)
        with self._lock:
            if self._read_meta(corpus_id) is None:
                return False
            doomed = self._generations(alias)
            if self._current(alias) == alias:   # a pre-alias index
                doomed.append(alias)
            with self._reachable():
                for index in doomed:  # by name: wildcard deletes are refused by default
                    self._client.indices.delete(index=index, ignore_unavailable=True)
            return bool(doomed)

    # -- ingest ---------------------------------------------------------------------------

    def ingest(self, corpus_id: str, batches: Iterable[list[Document]]) -> Iterator[IngestProgress]:
        meta = self._read_meta(corpus_id)
        if meta is None:
            raise CorpusNotFound(corpus_id)
        alias = self._index(corpus_id)
        current = self._current(alias)
        match = _GENERATION.search(current or "")
        staging = self._generation_name(alias, (int(match.group(1)) if match else 0) + 1)
        token = staging.rsplit("-", 1)[1]
        settings = Bm25Settings(**meta["settings"])
        staging_meta = {**meta, "state": CorpusState.EMPTY.value, "staging_token": token}
        with self._reachable():
            self._client.indices.create(index=staging, **index_body(settings, staging_meta, replicas=self.replicas))
        try:
            if meta["state"] == CorpusState.READY.value and meta["document_count"]:
                with self._reachable():  # upsert semantics: the committed documents carry over
                    self._client.reindex(source={"index": current}, dest={"index": staging},
                                         wait_for_completion=True, refresh=False)
            yield from self._bulk_into(staging, batches, progress := IngestProgress())
            with self._reachable():
                self._client.indices.refresh(index=staging)
                count = self._client.count(index=staging)["count"]
                stored = next(iter(self._client.indices.get_mapping(index=staging).body.values()))["mappings"]["_meta"]
            if stored.get("staging_token") != token:
                # Another writer removed our generation and a bulk call re-created it by itself.
                raise CorpusBusy(corpus_id)
            committed = {key: value for key, value in meta.items() if key != "staging_token"}
            committed.update(state=CorpusState.READY.value, document_count=count)
            with self._reachable():
                self._client.indices.put_mapping(index=staging, meta=committed)
            self._switch_alias(corpus_id, alias, current, staging)
        except BaseException:
            with self._reachable():
                self._client.indices.delete(index=staging, ignore_unavailable=True)
            raise
        self._remove_old_generations(alias, keep=(staging, current))
        progress.errors = []
        progress.committed = True
        yield progress.snapshot()

    def _bulk_into(self, index: str, batches: Iterable[list[Document]], progress: IngestProgress) -> Iterator[IngestProgress]:
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
                    progress.errors.append(DocumentError(str(result.get("_id", "")), error_reason(result.get("error"))))
            yield progress.snapshot()

    def _switch_alias(self, corpus_id: str, alias: str, current: str | None, staging: str) -> None:
        """Point the alias at `staging` in one step, only if it still points at `current`."""
        with self._reachable():
            if current == alias:  # a pre-alias index holds the name: it must go before the alias can
                self._client.indices.delete(index=current)
                current = None
            actions = [{"add": {"index": staging, "alias": alias}}]
            if current is not None:
                actions.insert(0, {"remove": {"index": current, "alias": alias, "must_exist": True}})
            try:
                self._client.indices.update_aliases(actions=actions)
            except (NotFoundError, ApiError) as error:
                if isinstance(error, ApiError) and error.status_code not in (404, 409):
                    raise
                raise CorpusBusy(corpus_id) from None  # another writer committed first

    def _remove_old_generations(self, alias: str, keep: tuple[str | None, ...]) -> None:
        with self._reachable():
            for index in self._generations(alias):
                if index not in keep:
                    self._client.indices.delete(index=index, ignore_unavailable=True)

    # -- search ---------------------------------------------------------------------------

    def search(self, corpus_id: str, queries: list[Query], k: int) -> list[Ranking]:
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
        results: list[Ranking] = []
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
                        f"{error_reason(response['error'])}"
                    )
                # Elasticsearch breaks ties its own way (shard, segment order): order by the tie rule here.
                scores = {hit["_id"]: float(hit["_score"]) for hit in response["hits"]["hits"]}
                results.append(Ranking.of(scores))
        return results

    def close(self) -> None:
        self._client.close()
