"""The gRPC Reranker service over the real CrossEncoder core, and GrpcReranker (rerank-grpc
endpoints) against it: Cohere-style answers, the same scores as in-process, typed errors, and
faulty answers from a team server refused."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from irforge.common.grpc_server import (
    ServiceBinding,
    open_channel,
    start_server,
    wait_until_serving,
)
from irforge.endpoints.errors import EndpointAnswerError, EndpointError
from irforge.endpoints.rerank import GrpcReranker
from irforge.endpoints.spec import EndpointSpec
from irforge.models.errors import ModelNotFound
from irforge.models.reranker_server import SERVICE_NAME, start_reranker_server
from irforge.v1 import reranker_pb2, reranker_pb2_grpc

QUERY = "vitamin D deficiency and bone density"


@pytest.fixture(scope="module")
def server(core):
    running = start_reranker_server({"minilm-ce": core})
    yield f"127.0.0.1:{running.port}"
    running.stop(grace=0)


def test_rerank_answers_cohere_style(core, server, scifact_texts):
    wait_until_serving(server, SERVICE_NAME)
    documents = scifact_texts[:12]
    expected = core.score(QUERY, documents)
    with open_channel(server) as channel:
        stub = reranker_pb2_grpc.RerankerStub(channel)
        reply = stub.Rerank(reranker_pb2.RerankRequest(query=QUERY, documents=documents))
        top = stub.Rerank(reranker_pb2.RerankRequest(model="minilm-ce", query=QUERY, documents=documents, top_n=3))
    indices = [result.index for result in reply.results]
    assert sorted(indices) == list(range(12))  # top_n 0: every document
    assert indices == sorted(range(12), key=lambda i: (-float(expected[i]), i))  # most relevant first
    assert [r.relevance_score for r in reply.results] == [float(expected[i]) for i in indices]
    assert [r.index for r in top.results] == indices[:3]


def test_grpc_reranker_gives_in_process_scores(core, server, scifact_texts):
    reranker = GrpcReranker(EndpointSpec(kind="rerank-grpc", url=server, model="minilm-ce", batch_size=5))
    try:
        items = [(QUERY, scifact_texts[:12]), ("scurvy", scifact_texts[12:15]), ("empty", [])]
        for (query, documents), scores in zip(items, reranker.score_batch(items)):
            # split over requests of 5: other padding, last-bit differences only
            np.testing.assert_allclose(scores, core.score(query, documents), atol=1e-6, rtol=0)
        assert reranker.counts()["requests"] == 4 and reranker.counts()["retries"] == 0  # 5 + 5 + 2, then 3
        assert reranker.identity == {"kind": "rerank-grpc", "endpoint": server, "model": "minilm-ce"}
    finally:
        reranker.close()


def test_errors_cross_the_wire_typed(server):
    reranker = GrpcReranker(EndpointSpec(kind="rerank-grpc", url=server, model="no-such-model"))
    with pytest.raises(ModelNotFound, match="'no-such-model' is not served here"):
        reranker.score(QUERY, ["a document"])
    with open_channel(server) as channel, pytest.raises(grpc.RpcError) as caught:
        reranker_pb2_grpc.RerankerStub(channel).Rerank(reranker_pb2.RerankRequest(query=QUERY, documents=["a"], top_n=-1))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


class _Faulty(reranker_pb2_grpc.RerankerServicer):
    """A team server answering badly: one scripted fault per call."""

    def __init__(self, faults):
        self.faults = list(faults)

    def Rerank(self, request, context):
        fault = self.faults.pop(0) if self.faults else None
        if fault == "unavailable":
            context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")
        if fault == "invalid":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "too many documents")
        results = [reranker_pb2.RerankResult(index=i, relevance_score=1.0 / (i + 1)) for i in range(len(request.documents))]
        if fault == "duplicate":
            results[1].index = 0
        elif fault == "out-of-range":
            results[0].index = len(request.documents)
        elif fault == "nan":
            results[0].relevance_score = float("nan")
        elif fault == "short":
            results = results[:-1]
        return reranker_pb2.RerankResponse(results=results)


@pytest.mark.parametrize("fault, message", [
    ("duplicate", "index 0 appears more than once"),
    ("out-of-range", "index 3, outside 0..2"),
    ("nan", "relevance_score nan, not a finite number"),
    ("short", r"1 of 3 documents not scored \(indices \[2\]\)"),
])
def test_faulty_answers_are_refused_naming_the_request(fault, message):
    running = start_server([ServiceBinding("irforge.v1.Reranker", reranker_pb2_grpc.add_RerankerServicer_to_server, _Faulty([fault]))])
    try:
        reranker = GrpcReranker(EndpointSpec(kind="rerank-grpc", url=f"127.0.0.1:{running.port}", model="m"))
        with pytest.raises(EndpointAnswerError, match=message) as caught:
            reranker.score("q1", ["a", "b", "c"])
        assert f"rerank endpoint 127.0.0.1:{running.port} (model 'm'), rerank request 1/1 (query 'q1', documents 0..2 of 3)" in str(caught.value)
    finally:
        running.stop(grace=0)


def test_a_team_servers_refusal_is_not_retried():
    running = start_server([ServiceBinding("irforge.v1.Reranker", reranker_pb2_grpc.add_RerankerServicer_to_server, _Faulty(["invalid"]))])
    try:
        reranker = GrpcReranker(EndpointSpec(kind="rerank-grpc", url=f"127.0.0.1:{running.port}", model="m"))
        with pytest.raises(EndpointError, match=r"refused rerank request 1/1 \(query 'q', .*gRPC INVALID_ARGUMENT: too many documents"):
            reranker.score("q", ["a", "b"])
        assert reranker.counts()["requests"] == 1
    finally:
        running.stop(grace=0)


def test_unavailable_is_retried_then_gives_up():
    running = start_server([ServiceBinding("irforge.v1.Reranker", reranker_pb2_grpc.add_RerankerServicer_to_server,
                                           _Faulty(["unavailable", "unavailable", None]))])
    spec = {"kind": "rerank-grpc", "url": f"127.0.0.1:{running.port}", "model": "m", "backoff_initial_s": 0.01}
    try:
        reranker = GrpcReranker(EndpointSpec(**spec, max_retries=2))
        assert reranker.score("q", ["a", "b"]).tolist() == [1.0, 0.5]
        assert reranker.counts()["requests"] == 3 and reranker.counts()["retries"] == 2  # attempts
    finally:
        running.stop(grace=0)
    gone = GrpcReranker(EndpointSpec(**spec, max_retries=1, timeout_s=2))
    with pytest.raises(EndpointError, match=r"gave up on rerank request 1/1 \(query 'q', documents 0..0 of 1\) after 2 attempts; last error: gRPC UNAVAILABLE"):
        gone.score("q", ["a"])
