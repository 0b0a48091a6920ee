"""Serve your own retrieval as irforge's gRPC `Retriever` (a `search-grpc` endpoint).

    def search(query_id: str, query: str, k: int) -> list[tuple[str, float]]:
        return my_index.top_k(query, k)          # [(doc_id, score), ...]

    server = serve_retriever(search, port=50070)  # irforge calls it; server.stop() when done

    # Instruction-following evaluation (irforge eval-instructions) sends each query's instruction
    # as its own field; accept it with a keyword parameter named `instruction`:
    def search(query_id: str, query: str, k: int, instruction: str | None = None): ...

    server = serve_retriever(search, port=50070, tls_cert="cert.pem", tls_key="key.pem")  # TLS only;
    # the endpoint spec then names the CA (`ca_bundle`); add client_ca="ca.pem" to require client certificates
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc

from irforge_client._channel import OPTIONS
from irforge_client.v1 import common_pb2, retriever_pb2, retriever_pb2_grpc

SearchFunction = Callable[[str, str, int], list[tuple[str, float]]]


def _takes_instruction(search: SearchFunction) -> bool:
    try:
        parameters = inspect.signature(search).parameters
    except (TypeError, ValueError):  # a builtin or C callable: call it the plain way
        return False
    return "instruction" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


class _Servicer(retriever_pb2_grpc.RetrieverServicer):
    def __init__(self, search: SearchFunction):
        self.search = search
        self.takes_instruction = _takes_instruction(search)

    def _answer(self, request) -> retriever_pb2.RetrieverSearchResponse:
        # A function without an `instruction` parameter keeps working: it is called as before.
        if self.takes_instruction:
            instruction = request.instruction if request.HasField("instruction") else None
            hits = self.search(request.query_id, request.query, request.k, instruction=instruction)
        else:
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


def serve_retriever(search: SearchFunction, host: str = "127.0.0.1", port: int = 0, max_workers: int = 8, *,
                    tls_cert: str | Path | None = None, tls_key: str | Path | None = None,
                    client_ca: str | Path | None = None) -> RetrieverServer:
    """Start a Retriever server around `search`; port 0 picks a free port (see .port). With
    tls_cert and tls_key (PEM files) it serves TLS only; client_ca also requires client certificates."""
    if bool(tls_cert) != bool(tls_key) or (client_ca and not tls_cert):
        raise ValueError("serve_retriever: TLS needs tls_cert and tls_key together (client_ca needs both)")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers), options=OPTIONS)
    retriever_pb2_grpc.add_RetrieverServicer_to_server(_Servicer(search), server)
    if tls_cert:
        credentials = grpc.ssl_server_credentials([(Path(tls_key).read_bytes(), Path(tls_cert).read_bytes())],
                                                  root_certificates=Path(client_ca).read_bytes() if client_ca else None,
                                                  require_client_auth=bool(client_ca))
        bound = server.add_secure_port(f"{host}:{port}", credentials)
    else:
        bound = server.add_insecure_port(f"{host}:{port}")
    server.start()
    return RetrieverServer(server, bound)
