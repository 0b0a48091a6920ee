"""Typed client for irforge's Corpus service: create a BM25 index, ingest documents, search."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice

from irforge_client._channel import Tls, channel
from irforge_client.v1 import common_pb2, corpus_pb2, corpus_pb2_grpc


@dataclass(frozen=True)
class Hit:
    doc_id: str
    score: float


@dataclass(frozen=True)
class IngestReport:
    received: int
    indexed: int
    failed: int
    errors: list[tuple[str, str]]   # (doc id, reason)
    committed: bool


class CorpusClient:
    """Documents are mappings with BEIR's keys: `_id`, `title`, `text`, optional `metadata`."""

    def __init__(self, address: str, timeout: float = 600.0, *, tls: Tls | None = None):
        self._channel = channel(address, tls)
        self._stub = corpus_pb2_grpc.CorpusStub(self._channel)
        self.timeout = timeout

    def create(self, corpus_id: str, fingerprint: str, k1: float = 0.9, b: float = 0.4) -> dict:
        reply = self._stub.CreateCorpus(corpus_pb2.CreateCorpusRequest(
            corpus_id=corpus_id, fingerprint=fingerprint, bm25=corpus_pb2.Bm25Settings(k1=k1, b=b)), timeout=self.timeout)
        return self._info(reply)

    def get(self, corpus_id: str) -> dict:
        return self._info(self._stub.GetCorpus(corpus_pb2.GetCorpusRequest(corpus_id=corpus_id), timeout=self.timeout))

    def delete(self, corpus_id: str) -> bool:
        return self._stub.DeleteCorpus(corpus_pb2.DeleteCorpusRequest(corpus_id=corpus_id), timeout=self.timeout).deleted

    def ingest(self, corpus_id: str, documents: Iterable[Mapping], batch_size: int = 500) -> Iterator[IngestReport]:
        """Yields a report per acknowledged batch; the last one has committed=True. The corpus is
        committed only if `documents` ends normally: an exception from it commits nothing."""
        def requests():
            yield corpus_pb2.IngestRequest(corpus_id=corpus_id)
            iterator = iter(documents)
            while batch := list(islice(iterator, batch_size)):
                yield corpus_pb2.IngestRequest(documents=[self._document(d) for d in batch])
            yield corpus_pb2.IngestRequest(commit=True)  # reached only when `documents` ended normally

        for message in self._stub.Ingest(requests()):
            yield IngestReport(message.received, message.indexed, message.failed,
                               [(e.doc_id, e.message) for e in message.errors], message.committed)

    def search(self, corpus_id: str, query: str, k: int = 10, query_id: str = "q") -> list[Hit]:
        reply = self._stub.Search(corpus_pb2.SearchRequest(
            corpus_id=corpus_id, query=common_pb2.Query(query_id=query_id, text=query), k=k), timeout=self.timeout)
        return [Hit(h.doc_id, h.score) for h in reply.hits]

    def batch_search(self, corpus_id: str, queries: Mapping[str, str], k: int = 1000) -> dict[str, list[Hit]]:
        request = corpus_pb2.BatchSearchRequest(
            corpus_id=corpus_id, queries=[common_pb2.Query(query_id=q, text=t) for q, t in queries.items()], k=k)
        return {m.query_id: [Hit(h.doc_id, h.score) for h in m.hits] for m in self._stub.BatchSearch(request, timeout=self.timeout)}

    @staticmethod
    def _document(document: Mapping) -> common_pb2.Document:
        metadata = document.get("metadata") or {}
        return common_pb2.Document(doc_id=str(document["_id"]), title=document.get("title") or "",
                                   text=document.get("text") or "", metadata_json=json.dumps(metadata) if metadata else "")

    @staticmethod
    def _info(reply) -> dict:
        return {"corpus_id": reply.corpus_id, "fingerprint": reply.fingerprint, "document_count": reply.document_count,
                "state": corpus_pb2.CorpusState.Name(reply.state), "backend": reply.backend,
                "config": json.loads(reply.config_json or "{}")}

    def close(self) -> None:
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
