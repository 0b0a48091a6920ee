"""The team SDK in clients/python: light (no torch, ray or server code) and equal to the server's own API."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from irforge.common.grpc_server import start_server
from irforge.corpus import server as corpus_server
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.data import read_trec_qrels
from irforge.runs import read_run_file
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.core import EvaluationOptions, Evaluator

CLIENT_ROOT = Path(__file__).resolve().parents[2] / "clients" / "python"
sys.path.insert(0, str(CLIENT_ROOT))

from irforge_client import CorpusClient, EvaluatorClient, serve_retriever  # noqa: E402
from irforge_client.v1 import retriever_pb2, retriever_pb2_grpc  # noqa: E402


@pytest.fixture()
def address(tmp_path):
    running = start_server([corpus_server.binding(CorpusService(EmbeddedBackend(tmp_path))),
                            evaluator_server.binding(Evaluator())], port=0)
    yield f"127.0.0.1:{running.port}"
    running.stop(grace=0)


def test_the_sdk_imports_without_torch_ray_or_the_server():
    code = ("import sys, irforge_client; heavy = [m for m in ('torch', 'ray', 'irforge', 'sentence_transformers') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(CLIENT_ROOT), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]"


def test_evaluator_client_equals_the_core(address, conformance_dir):
    qrels = read_trec_qrels(conformance_dir / "qrels.test")
    run = read_run_file(conformance_dir / "results.test").run
    local = Evaluator().evaluate(qrels, run, ["nDCG@10", "P@5", "Judged@10", "map"], EvaluationOptions())
    with EvaluatorClient(address) as client:
        remote = client.evaluate(qrels, run, ["nDCG@10", "P@5", "Judged@10", "map"])
        ir_names, trec_names = client.list_measures()
    assert remote.aggregate == local.aggregate and remote.per_query == local.per_query
    assert "nDCG" in ir_names and "ndcg_cut" in trec_names


def test_corpus_client_round_trip(address):
    documents = [{"_id": "a", "title": "Vitamin D", "text": "bone loss"}, {"_id": "b b", "text": "bad id"},
                 {"_id": "c", "title": "Aspirin", "text": "heart attack", "metadata": {"url": "x"}}]
    with CorpusClient(address) as client:
        assert client.create("c1", "fp")["state"] == "CORPUS_STATE_EMPTY"
        reports = list(client.ingest("c1", documents, batch_size=2))
        assert reports[-1].committed and reports[-1].indexed == 2 and reports[0].errors[0][0] == "b b"
        assert client.get("c1")["document_count"] == 2
        assert [h.doc_id for h in client.search("c1", "aspirin")] == ["c"]
        assert {q: [h.doc_id for h in hits] for q, hits in client.batch_search("c1", {"1": "bone", "2": "zebra"}).items()} == {"1": ["a"], "2": []}


def test_serve_retriever_answers_unary_and_streaming_search():
    import grpc

    server = serve_retriever(lambda query_id, query, k: [(f"{query}-{i}", float(k - i)) for i in range(k)])
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = retriever_pb2_grpc.RetrieverStub(channel)
            one = stub.Search(retriever_pb2.RetrieverSearchRequest(query_id="q1", query="x", k=2))
            assert [(h.doc_id, h.score) for h in one.hits] == [("x-0", 2.0), ("x-1", 1.0)]
            many = list(stub.BatchSearch(iter([retriever_pb2.RetrieverSearchRequest(query_id=f"q{i}", query="y", k=1) for i in range(3)])))
            assert [m.query_id for m in many] == ["q0", "q1", "q2"]
    finally:
        server.stop()
