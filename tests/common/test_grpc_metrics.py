"""Prometheus metrics scraped over HTTP after real calls, and open_channel's retry policy
(UNAVAILABLE retried up to 4 attempts; other codes and team endpoints' services never)."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import pytest

from irforge.common.grpc_server import ServiceBinding, open_channel, start_server
from irforge.common.request_context import bound
from irforge.corpus import server as corpus_server
from irforge.corpus.client import RemoteCorpus
from irforge.corpus.core import CorpusService
from irforge.corpus.errors import BackendUnavailable, CorpusNotFound
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.data.types import Document, Query
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.client import RemoteEvaluator
from irforge.evaluator.core import Evaluator
from irforge.evaluator.measures import MeasureError
from irforge.v1 import common_pb2, corpus_pb2, corpus_pb2_grpc, reranker_pb2, reranker_pb2_grpc

EVALUATOR = {"service": "irforge.v1.Evaluator", "method": "Evaluate"}
GET_CORPUS = {"service": "irforge.v1.Corpus", "method": "GetCorpus"}


class InFlightWitness(Evaluator):
    """The real evaluator, scraping the in-flight gauge over HTTP while it works."""

    def __init__(self, scraper):
        self.scraper = scraper
        self.in_flight: list[float] = []

    def evaluate(self, qrels, run, measures=("nDCG@10",), options=None, **kwargs):
        self.in_flight.append(self.scraper.value("irforge_grpc_in_flight", **EVALUATOR))
        return super().evaluate(qrels, run, measures)


def test_requests_latencies_codes_and_in_flight_are_exported(tmp_path, metrics_scraper, scifact_tiny: Path):
    witness = InFlightWitness(metrics_scraper)
    corpus = CorpusService(EmbeddedBackend(tmp_path / "indexes"))
    running = start_server([corpus_server.binding(corpus), evaluator_server.binding(witness)], port=0)
    address = f"127.0.0.1:{running.port}"
    before = metrics_scraper.samples()
    try:
        evaluator = RemoteEvaluator(address)
        evaluator.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["P@1"])
        evaluator.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["P@1"])
        with pytest.raises(MeasureError, match="bogus"):
            evaluator.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["bogus@3"])   # bad input
        remote = RemoteCorpus(address)
        assert remote.find_corpus("absent") is None                              # NOT_FOUND

        remote.create_corpus("tiny", "fp", Bm25Settings())
        documents = list(BeirDataset.open(scifact_tiny).corpus())
        broken = Document("an id with spaces", "", "refused: whitespace in the id")
        reports = list(remote.ingest("tiny", [documents[:7], documents[7:] + [broken]]))
        assert reports[-1].indexed == len(documents) and reports[-1].failed == 1
        after = metrics_scraper.samples()
    finally:
        running.stop(grace=0)

    def grew(name: str, **labels) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert grew("irforge_grpc_requests_total", code="OK", **EVALUATOR) == 2
    assert grew("irforge_grpc_requests_total", code="INVALID_ARGUMENT", **EVALUATOR) == 1
    assert grew("irforge_grpc_requests_total", code="NOT_FOUND", **GET_CORPUS) == 1
    assert grew("irforge_grpc_requests_total", code="OK", service="irforge.v1.Corpus", method="Ingest") == 1
    assert grew("irforge_grpc_request_seconds_count", **EVALUATOR) == 3
    assert grew("irforge_grpc_request_seconds_bucket", le="+Inf", **EVALUATOR) == 3
    assert grew("irforge_grpc_request_seconds_bucket", le="60.0", **EVALUATOR) == 3
    assert 0 < grew("irforge_grpc_request_seconds_sum", **EVALUATOR) < 60
    # Seen from inside the handler: this call itself is in flight. Afterwards: none.
    assert witness.in_flight and min(witness.in_flight) >= 1
    assert after[("irforge_grpc_in_flight", tuple(sorted(EVALUATOR.items())))] == 0
    # Documents indexed by the corpus service's backend; the refused one is not counted.
    assert grew("irforge_documents_ingested_total", backend="embedded") == len(documents)


class FlakyBackend(EmbeddedBackend):
    """The embedded backend, unreachable (BackendUnavailable -> UNAVAILABLE) for its first lookups."""

    def __init__(self, root, failures: int):
        super().__init__(root)
        self.failures = failures
        self.lookups = 0

    def info(self, corpus_id):
        self.lookups += 1
        if self.lookups <= self.failures:
            raise BackendUnavailable(f"index store unreachable (lookup {self.lookups})")
        return super().info(corpus_id)


@pytest.fixture()
def flaky_server(tmp_path):
    servers = []

    def start(failures: int) -> tuple[str, FlakyBackend]:
        backend = FlakyBackend(tmp_path / f"indexes-{len(servers)}", failures)
        backend.create("c", "fp", Bm25Settings())
        servers.append(start_server([corpus_server.binding(CorpusService(backend))], port=0))
        return f"127.0.0.1:{servers[-1].port}", backend

    yield start
    for running in servers:
        running.stop(grace=0)


def test_unavailable_is_retried_by_the_channel_with_the_same_request_id(flaky_server, request_log):
    address, backend = flaky_server(failures=2)
    with bound(request_id="retried-1"):
        assert RemoteCorpus(address).get_corpus("c").corpus_id == "c"   # third attempt succeeds
    assert backend.lookups == 3
    lines = request_log.requests("GetCorpus")
    assert [line["grpc_code"] for line in lines] == ["UNAVAILABLE", "UNAVAILABLE", "OK"]
    assert {line["request_id"] for line in lines} == {"retried-1"}


def test_retries_stop_after_four_attempts(flaky_server):
    address, backend = flaky_server(failures=100)
    with pytest.raises(BackendUnavailable, match="unreachable"):
        RemoteCorpus(address).get_corpus("c")
    assert backend.lookups == 4


def test_other_codes_are_not_retried(flaky_server):
    address, backend = flaky_server(failures=0)
    with pytest.raises(ValueError, match="k must be positive"):
        RemoteCorpus(address).search("c", Query("q", "x"), 0)
    with pytest.raises(CorpusNotFound):
        RemoteCorpus(address).get_corpus("absent")
    assert backend.lookups == 1


class AlwaysUnavailable(reranker_pb2_grpc.RerankerServicer):
    def __init__(self):
        self.calls = 0

    def Rerank(self, request, context):
        self.calls += 1
        context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")


def test_team_endpoint_services_get_no_channel_retries():
    """irforge.endpoints retries Reranker/Retriever calls itself, counting every attempt."""
    servicer = AlwaysUnavailable()
    binding = ServiceBinding("irforge.v1.Reranker", reranker_pb2_grpc.add_RerankerServicer_to_server, servicer)
    running = start_server([binding])
    try:
        with open_channel(f"127.0.0.1:{running.port}") as channel, pytest.raises(grpc.RpcError) as raised:
            request = reranker_pb2.RerankRequest(query="q", documents=["a"])
            reranker_pb2_grpc.RerankerStub(channel).Rerank(request, timeout=5)
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE and servicer.calls == 1
    finally:
        running.stop(grace=0)


def test_a_cancelled_stream_is_counted_cancelled_and_leaves_nothing_in_flight(tmp_path, metrics_scraper, scifact_tiny):
    dataset = BeirDataset.open(scifact_tiny)
    corpus = CorpusService(EmbeddedBackend(tmp_path / "indexes"))
    corpus.create_corpus("tiny", "fp", Bm25Settings())
    list(corpus.ingest("tiny", [list(dataset.corpus())]))
    running = start_server([corpus_server.binding(corpus)], port=0)
    labels = {"service": "irforge.v1.Corpus", "method": "BatchSearch"}
    cancelled_before = metrics_scraper.value("irforge_grpc_requests_total", code="CANCELLED", **labels)
    try:
        queries = [common_pb2.Query(query_id=f"q{n}", text=q.text) for n, q in enumerate(dataset.queries())] * 3000
        with open_channel(f"127.0.0.1:{running.port}") as channel:
            stream = corpus_pb2_grpc.CorpusStub(channel).BatchSearch(
                corpus_pb2.BatchSearchRequest(corpus_id="tiny", queries=queries, k=10))
            next(stream)
            stream.cancel()
        deadline = time.monotonic() + 10
        while metrics_scraper.value("irforge_grpc_in_flight", **labels) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert metrics_scraper.value("irforge_grpc_in_flight", **labels) == 0
        assert metrics_scraper.value("irforge_grpc_requests_total", code="CANCELLED", **labels) == cancelled_before + 1
    finally:
        running.stop(grace=0)
