"""The Reranker service's gRPC door (irforge.v1.Reranker): a thin front over any reranker object
(a CrossEncoderReranker in process, a RayReranker in front of Ray Serve, even an endpoint client),
so our own cross-encoder can be evaluated as a `rerank-grpc` endpoint like any team's.

Mirrors irforge.models.server (the Encoder's front; its notes say why a thin front rather than
Serve's gRPC proxy): started with grpc_server.start_server, so health ("irforge.v1.Reranker"),
reflection and typed errors are the ones every irforge service has.

Answer, Cohere/Jina style: results ordered by relevance_score descending (ties: lower index
first), `top_n` of them (0 = all); each names its document by position in the request.
"""

from __future__ import annotations

import threading
from contextlib import nullcontext

from irforge.common.grpc_errors import grpc_method
from irforge.common.grpc_server import RunningServer, ServiceBinding, start_server
from irforge.models.errors import ModelNotFound
from irforge.models.registry import find_served
from irforge.models.reranker import CrossEncoderReranker
from irforge.v1 import reranker_pb2, reranker_pb2_grpc

SERVICE_NAME = reranker_pb2.DESCRIPTOR.services_by_name["Reranker"].full_name  # "irforge.v1.Reranker"


class RerankerServicer(reranker_pb2_grpc.RerankerServicer):
    """Serves `rerankers` by name; an empty model name selects the only one. `max_concurrent`
    as in EncoderServicer: None = 1 for an in-process CrossEncoderReranker (torch calls at once
    only oversubscribe the cores), unbounded otherwise; an int for all, a dict per name; 0 = none."""

    def __init__(self, rerankers: dict, max_concurrent: int | dict[str, int] | None = None):
        if not rerankers:
            raise ValueError("a Reranker server needs at least one reranker")
        self.rerankers = dict(rerankers)
        self._gates = {name: self._gate(name, reranker, max_concurrent) for name, reranker in self.rerankers.items()}

    @staticmethod
    def _gate(name: str, reranker, max_concurrent):
        limit = max_concurrent.get(name) if isinstance(max_concurrent, dict) else max_concurrent
        if limit is None:
            limit = 1 if isinstance(reranker, CrossEncoderReranker) else 0
        return threading.BoundedSemaphore(limit) if limit > 0 else nullcontext()

    def _select(self, model: str) -> str:
        if not model:
            if len(self.rerankers) == 1:
                return next(iter(self.rerankers))
            raise ValueError(f"this server serves several rerankers; name one of {sorted(self.rerankers)}")
        served = find_served(model, self.rerankers)  # an alias or the hub name, as in process
        if served is None:
            raise ModelNotFound(f"reranker {model!r} is not served here; served: {sorted(self.rerankers)}")
        return served

    @grpc_method
    def Rerank(self, request, context):
        if request.top_n < 0:
            raise ValueError(f"top_n must be >= 0 (0 = all), got {request.top_n}")
        name = self._select(request.model)
        with self._gates[name]:
            scores = self.rerankers[name].score(request.query, list(request.documents))
        order = sorted(range(len(scores)), key=lambda index: (-float(scores[index]), index))
        if request.top_n:
            order = order[:request.top_n]
        return reranker_pb2.RerankResponse(
            results=[reranker_pb2.RerankResult(index=index, relevance_score=float(scores[index])) for index in order])


def binding(rerankers: dict, **options) -> ServiceBinding:
    return ServiceBinding(SERVICE_NAME, reranker_pb2_grpc.add_RerankerServicer_to_server, RerankerServicer(rerankers, **options))


def start_reranker_server(rerankers: dict, host: str = "127.0.0.1", port: int = 0, max_workers: int = 8, **options) -> RunningServer:
    """The Reranker service alone on host:port (0 picks a free port), with health and reflection."""
    return start_server([binding(rerankers, **options)], host=host, port=port, max_workers=max_workers)
