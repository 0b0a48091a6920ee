"""Search endpoints as a team would run them, for tests: a real retriever (irforge's embedded BM25
over a BEIR folder) served over plain HTTP JSON and over the irforge.v1.Retriever gRPC service,
with faults that can be injected per query id.

Faults (`server.faults[query_id] = name`, used once):
    unknown-id      the first hit's id is not in the corpus
    duplicate-id    the first hit is repeated
    string-score    the first hit's score is the string "0.5"           (HTTP)
    nan-score       the first hit's score is NaN
    too-many        k + 1 hits
    malformed       a body that is not JSON                             (HTTP)
    no-hits-key     {"results": [...]} instead of {"hits": [...]}       (HTTP)
    missing         the stream skips this query                         (gRPC BatchSearch)
    wrong-query-id  the answer carries another query id                 (gRPC)
    <status>[:<s>]  HTTP status (Retry-After <s>) / gRPC UNAVAILABLE     (retried)
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import grpc

from irforge.common.grpc_server import ServiceBinding, start_server
from irforge.common.progress import no_progress
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical import make_backend
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.data.types import Query
from irforge.pipeline.retrievers.base import CorpusTracker
from irforge.pipeline.retrievers.bm25 import Bm25Retriever
from irforge.v1 import common_pb2, retriever_pb2, retriever_pb2_grpc


class Bm25Search:
    """The team's retriever: irforge's own embedded BM25 (default settings) over `dataset_dir`."""

    def __init__(self, dataset_dir: Path, index_dir: Path):
        self.corpus = CorpusService(make_backend("embedded", index_dir=index_dir))
        retriever = Bm25Retriever(self.corpus, Bm25Settings(), no_progress)
        dataset = BeirDataset.open(dataset_dir)
        retriever.prepare(dataset, dataset.corpus_fingerprint(), CorpusTracker(judged=set()))
        self.corpus_id = retriever.corpus_id
        self.faults: dict[str, str] = {}
        self.requests: list[tuple[str, str | None]] = []  # (query id, authorization) per request
        self._lock = threading.Lock()

    def take_fault(self, query_id: str, authorization: str | None) -> str | None:
        with self._lock:
            self.requests.append((query_id, authorization))
            return self.faults.pop(query_id, None)

    def hits(self, query_id: str, query: str, k: int, fault: str | None) -> list[list]:
        hits = [[doc_id, score] for doc_id, score in self.corpus.search(self.corpus_id, Query(query_id, query), k + 1).pairs()]
        hits = hits if fault == "too-many" else hits[:k]
        if fault == "unknown-id":
            hits[0][0] = "no-such-document"
        elif fault == "duplicate-id":
            hits.append(list(hits[0]))
        elif fault == "string-score":
            hits[0][1] = "0.5"
        elif fault == "nan-score":
            hits[0][1] = float("nan")
        return hits

    def close(self) -> None:
        self.corpus.close()


class HttpSearchServer:
    """POST / with {"query_id", "query", "k"} -> {"hits": [{"id", "score"}]}, on 127.0.0.1."""

    def __init__(self, search: Bm25Search):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                fault = search.take_fault(request["query_id"], self.headers.get("Authorization")) or outer.default
                name, _, argument = (fault or "").partition(":")
                if name.isdigit():
                    return self._send(int(name), b'{"error": "injected"}', {"Retry-After": argument} if argument else {})
                if name == "malformed":
                    return self._send(200, b'{"hits": [{"id": ')
                hits = search.hits(request["query_id"], request["query"], request["k"], fault)
                key = "results" if name == "no-hits-key" else "hits"
                self._send(200, json.dumps({key: [{"id": d, "score": s} for d, s in hits]}).encode())

            def _send(self, status: int, body: bytes, headers: dict | None = None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

        self.default: str | None = None  # a fault for every request (e.g. "500")
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True, name="search-http").start()
        self.url = f"http://127.0.0.1:{self._server.server_port}/search"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Bm25RetrieverServicer(retriever_pb2_grpc.RetrieverServicer):
    """irforge.v1.Retriever over Bm25Search: unary Search and streaming BatchSearch."""

    def __init__(self, search: Bm25Search):
        self.search = search

    def _answer(self, request, context):
        authorization = dict(context.invocation_metadata()).get("authorization")
        fault = self.search.take_fault(request.query_id, authorization)
        if fault and fault.partition(":")[0].isdigit():
            context.abort(grpc.StatusCode.UNAVAILABLE, f"injected {fault}")
        if fault == "missing":
            return None
        hits = self.search.hits(request.query_id, request.query, request.k, fault)
        query_id = "another-query" if fault == "wrong-query-id" else request.query_id
        return retriever_pb2.RetrieverSearchResponse(
            query_id=query_id, hits=[common_pb2.ScoredDocument(doc_id=d, score=s) for d, s in hits])

    def Search(self, request, context):
        return self._answer(request, context) or retriever_pb2.RetrieverSearchResponse(query_id=request.query_id)

    def BatchSearch(self, request_iterator, context):
        for request in request_iterator:
            answer = self._answer(request, context)
            if answer is not None:
                yield answer


class UnaryOnlyServicer(Bm25RetrieverServicer):
    """A team that implemented Search only: BatchSearch answers UNIMPLEMENTED (the generated base)."""

    BatchSearch = retriever_pb2_grpc.RetrieverServicer.BatchSearch


def start_grpc_search(servicer):
    """A running server on 127.0.0.1 (port chosen by the OS); `.port`, `.stop()`."""
    return start_server([ServiceBinding("irforge.v1.Retriever", retriever_pb2_grpc.add_RetrieverServicer_to_server, servicer)])
