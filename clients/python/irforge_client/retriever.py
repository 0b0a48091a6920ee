"""Serve your own retrieval as irforge's gRPC `Retriever` (a `search-grpc` endpoint).

    def search(query_id: str, query: str, k: int) -> list[tuple[str, float]]:
        return my_index.top_k(query, k)          # [(doc_id, score), ...]

    server = serve_retriever(search, port=50070)  # irforge calls it; server.stop() when done
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass

import grpc

from irforge_client._channel import OPTIONS
from irforge_client.v1 import common_pb2, retriever_pb2, retriever_pb2_grpc

SearchFunction = Callable[[str, str, int], list[tuple[str, float]]]


class _Servicer(retriever_pb2_grpc.RetrieverServicer):
    def __init__(self, search: SearchFunction):
        self.search = search

    def _answer(self, request) -> retriever_pb2.RetrieverSearchResponse:
        hits = self.search(request.query_id, request.query, request.k)
        return retriever_pb2.RetrieverSearchResponse(
            query_id=request.query_id, hits=[common_pb2.ScoredDocument(doc_id=d, score=float(s)) for d, s in hits])

    def Search(self, request, context):
        return self._answer(request)

    def BatchSearch(self, request_iterator, context):
        for request in request_iterator:
            yield self._answer(request)


@dataclass
class RetrieverServer:
    server: grpc.Server
    port: int

    def stop(self, grace: float = 2.0) -> None:
        self.server.stop(grace).wait()


def serve_retriever(search: SearchFunction, host: str = "127.0.0.1", port: int = 0, max_workers: int = 8) -> RetrieverServer:
    """Start a Retriever server around `search`; port 0 picks a free port (see .port)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers), options=OPTIONS)
    retriever_pb2_grpc.add_RetrieverServicer_to_server(_Servicer(search), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    server.start()
    return RetrieverServer(server, bound)
