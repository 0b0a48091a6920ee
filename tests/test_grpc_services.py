"""The gRPC doors: standard health checking and reflection, errors that keep their type across
the wire, and remote answers identical to in-process ones."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from irforge.common.grpc_errors import ServiceUnavailable
from irforge.common.grpc_server import open_channel, start_server, wait_until_serving
from irforge.corpus import server as corpus_server
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.client import RemoteCorpus
from irforge.corpus.core import CorpusService
from irforge.corpus.errors import CorpusConflict, CorpusNotFound, CorpusNotReady
from irforge.corpus.settings import Bm25Settings
from irforge.data import read_trec_qrels
from irforge.runs import read_run_file
from irforge.data.types import Document, Query
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.client import RemoteEvaluator
from irforge.evaluator.core import EvaluationOptions, Evaluator
from irforge.evaluator.measures import MeasureError

SERVICES = ["irforge.v1.Corpus", "irforge.v1.Evaluator"]


@pytest.fixture()
def server(tmp_path):
    corpus = CorpusService(EmbeddedBackend(tmp_path / "indexes"))
    running = start_server([corpus_server.binding(corpus), evaluator_server.binding(Evaluator())], port=0)
    yield f"127.0.0.1:{running.port}", corpus
    running.stop(grace=0)


def test_health_reports_every_service_serving(server):
    address, _ = server
    wait_until_serving(address)
    with open_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for name in ["", *SERVICES]:
            assert stub.Check(health_pb2.HealthCheckRequest(service=name)).status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as error:
            stub.Check(health_pb2.HealthCheckRequest(service="irforge.v1.Nope"))
        assert error.value.code() == grpc.StatusCode.NOT_FOUND


def test_reflection_lists_the_services(server):
    address, _ = server
    with open_channel(address) as channel:
        services = set(ProtoReflectionDescriptorDatabase(channel).get_services())
    assert set(SERVICES) | {"grpc.health.v1.Health"} <= services


def test_errors_keep_their_type_across_the_wire(server):
    address, _ = server
    corpus, evaluator = RemoteCorpus(address), RemoteEvaluator(address)
    with pytest.raises(CorpusNotFound, match="'absent' does not exist"):
        corpus.get_corpus("absent")
    corpus.create_corpus("c", "fp", Bm25Settings())
    with pytest.raises(CorpusConflict):
        corpus.create_corpus("c", "other-fp", Bm25Settings())
    with pytest.raises(CorpusNotReady):
        list(corpus.batch_search("c", [Query("q", "x")], 10))
    with pytest.raises(MeasureError, match="bogus"):
        evaluator.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["bogus@3"])
    with pytest.raises(ValueError, match="k must be positive"):
        corpus.search("c", Query("q", "x"), 0)


def test_unreachable_server_is_a_clear_error(unused_port):
    with pytest.raises(ServiceUnavailable, match=f"127.0.0.1:{unused_port}"):
        RemoteCorpus(f"127.0.0.1:{unused_port}", timeout=2).get_corpus("x")


def test_remote_corpus_behaves_like_the_in_process_one(server):
    address, local = server
    remote = RemoteCorpus(address)
    remote.create_corpus("c", "fp", Bm25Settings())
    docs = [Document("a", "Vitamin D", "bone loss", {"url": "x"}), Document("b b", "", "bad id"), Document("c", "Aspirin", "heart")]
    progress = list(remote.ingest("c", iter([docs[:2], docs[2:]])))
    assert [(p.received, p.indexed, p.failed, p.committed) for p in progress] == [(2, 1, 1, False), (3, 2, 1, False), (3, 2, 1, True)]
    assert progress[0].errors[0].doc_id == "b b"
    queries = [Query("1", "vitamin bone"), Query("2", "aspirin"), Query("3", "nothing matches")]
    answered = [(query_id, ranking.pairs()) for query_id, ranking in remote.batch_search("c", queries, 10)]
    assert answered == [(query_id, ranking.pairs()) for query_id, ranking in local.batch_search("c", queries, 10)]
    assert [len(pairs) for _, pairs in answered] == [1, 1, 0]
    assert remote.get_corpus("c") == local.get_corpus("c")


def test_remote_evaluation_is_identical_to_in_process(server, conformance_dir):
    address, _ = server
    qrels = read_trec_qrels(conformance_dir / "qrels.test")
    run = read_run_file(conformance_dir / "results.trunc").run
    measures = ["nDCG@10", "AP@100", "RR@10", "Judged@10", "all_trec"]
    options = EvaluationOptions(complete=True, max_docs_per_query=100)
    local = Evaluator().evaluate(qrels, run, measures, options)
    remote = RemoteEvaluator(address).evaluate(qrels, run, measures, options)
    assert remote.aggregate == local.aggregate
    assert remote.per_query == local.per_query
    assert remote.measure_names == local.measure_names
    assert remote.options == local.options
