"""Request ids and job ids: bound for a handler's whole run (unary, response streams that grpc pulls
lazily, request streams), never leaking from one call to the next, and carried from one service to
the next. Real services over real gRPC; the cores are subclassed only to record what they see."""

from __future__ import annotations

import threading
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from irforge.common.grpc_server import open_channel, start_server
from irforge.common.request_context import bound, current_job_id, current_request_id
from irforge.corpus import server as corpus_server
from irforge.corpus.client import RemoteCorpus
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.client import RemoteEvaluator
from irforge.evaluator.core import Evaluator
from irforge.v1 import corpus_pb2, corpus_pb2_grpc


def ids() -> tuple[str | None, str | None]:
    return current_request_id(), current_job_id()


class ObservedCorpus(CorpusService):
    """The real corpus service, noting the ids bound at each step of its streams."""

    def __init__(self, backend):
        super().__init__(backend)
        self.seen: list[tuple[str, str | None, str | None]] = []
        self.lock = threading.Lock()

    def note(self, step: str) -> None:
        with self.lock:
            self.seen.append((step, *ids()))

    def get_corpus(self, corpus_id):
        self.note("get")
        return super().get_corpus(corpus_id)

    def ingest(self, corpus_id, batches):
        def noted(batches):
            for batch in batches:           # pulled from the client's request stream
                self.note("ingest-batch")
                yield batch
        for report in super().ingest(corpus_id, noted(batches)):
            self.note("ingest-report")
            yield report

    def batch_search(self, corpus_id, queries, k):
        for query_id, hits in super().batch_search(corpus_id, queries, k):
            self.note(f"search:{query_id}")   # runs between two of grpc's pulls of the stream
            yield query_id, hits


class ObservedEvaluator(Evaluator):
    def __init__(self):
        self.seen: list[tuple[str | None, str | None]] = []

    def evaluate(self, qrels, run, measures=("nDCG@10",), options=None, **kwargs):
        self.seen.append(ids())
        return super().evaluate(qrels, run, measures, **({"options": options} if options else {}))


@pytest.fixture(scope="module")
def tiny(scifact_tiny: Path) -> BeirDataset:
    return BeirDataset.open(scifact_tiny)


@pytest.fixture()
def served(tmp_path, tiny):
    """Corpus (with the tiny SciFact corpus ingested) and evaluator on one server."""
    corpus = ObservedCorpus(EmbeddedBackend(tmp_path / "indexes"))
    corpus.create_corpus("tiny", "fp", Bm25Settings())
    list(corpus.ingest("tiny", [list(tiny.corpus())]))
    corpus.seen.clear()
    evaluator = ObservedEvaluator()
    running = start_server([corpus_server.binding(corpus), evaluator_server.binding(evaluator)], port=0)
    yield f"127.0.0.1:{running.port}", corpus, evaluator
    running.stop(grace=0)


def test_unary_call_handler_sees_the_callers_ids(served, request_log):
    address, corpus, _ = served
    with bound(request_id="req-unary-1", job_id="job-1"):
        assert RemoteCorpus(address).get_corpus("tiny").document_count > 0
    assert corpus.seen == [("get", "req-unary-1", "job-1")]
    [line] = request_log.requests("GetCorpus")
    assert (line["request_id"], line["job_id"], line["grpc_code"]) == ("req-unary-1", "job-1", "OK")


def test_a_call_without_ids_gets_a_fresh_request_id_and_no_job(served, request_log):
    address, corpus, _ = served
    RemoteCorpus(address).get_corpus("tiny")
    RemoteCorpus(address).get_corpus("tiny")
    (_, first, job), (_, second, _) = corpus.seen
    assert job is None and len(first) == 32 and first != second   # uuid4 hex, one per call
    assert [line["request_id"] for line in request_log.requests("GetCorpus")] == [first, second]


def test_server_stream_steps_all_see_the_ids(served, tiny):
    address, corpus, _ = served
    queries = list(tiny.queries())
    with bound(request_id="req-stream-1", job_id="job-2"):
        answered = [query_id for query_id, _ in RemoteCorpus(address).batch_search("tiny", queries, 5)]
    assert answered == [q.query_id for q in queries] and len(answered) >= 3
    assert corpus.seen == [(f"search:{q}", "req-stream-1", "job-2") for q in answered]


def test_client_stream_handler_sees_the_ids(served, tiny):
    address, _, evaluator = served
    qrels = tiny.qrels("test")
    run = {q: {doc_id: 1.0 for doc_id in docs} for q, docs in qrels.items()}
    with bound(request_id="req-client-stream", job_id="job-3"):
        result = RemoteEvaluator(address).evaluate(qrels, run, ["nDCG@10"])
    assert result.aggregate["nDCG@10"] == pytest.approx(1.0)
    assert evaluator.seen == [("req-client-stream", "job-3")]


def test_bidirectional_stream_sees_the_ids_while_pulling_requests(tmp_path, tiny):
    corpus = ObservedCorpus(EmbeddedBackend(tmp_path / "indexes"))
    running = start_server([corpus_server.binding(corpus)], port=0)
    try:
        remote = RemoteCorpus(f"127.0.0.1:{running.port}")
        remote.create_corpus("c", "fp", Bm25Settings())
        documents = list(tiny.corpus())
        with bound(request_id="req-ingest", job_id="job-4"):
            reports = list(remote.ingest("c", [documents[:10], documents[10:]]))
        assert reports[-1].committed and reports[-1].indexed == len(documents)
        steps = [step for step, *_ in corpus.seen]
        assert steps.count("ingest-batch") == 2 and steps.count("ingest-report") == 3
        assert {tuple(rest) for _, *rest in corpus.seen} == {("req-ingest", "job-4")}
    finally:
        running.stop(grace=0)


def test_ids_do_not_leak_to_the_next_call_on_the_same_worker_thread(tmp_path, tiny):
    corpus = ObservedCorpus(EmbeddedBackend(tmp_path / "indexes"))
    corpus.create_corpus("tiny", "fp", Bm25Settings())
    list(corpus.ingest("tiny", [list(tiny.corpus())]))
    corpus.seen.clear()
    running = start_server([corpus_server.binding(corpus)], port=0, max_workers=1)  # one thread serves all
    try:
        remote = RemoteCorpus(f"127.0.0.1:{running.port}")
        with bound(request_id="req-first", job_id="job-first"):
            list(remote.batch_search("tiny", list(tiny.queries())[:2], 3))
            remote.get_corpus("tiny")
        list(remote.batch_search("tiny", list(tiny.queries())[:1], 3))
        remote.get_corpus("tiny")
        later = corpus.seen[3:]
        assert len(later) == 2
        assert all(job is None and request_id not in (None, "req-first") for _, request_id, job in later)
    finally:
        running.stop(grace=0)


def test_concurrent_calls_each_keep_their_own_ids(served, tiny):
    address, corpus, _ = served
    queries = list(tiny.queries())
    barrier = threading.Barrier(6)

    def call(n: int) -> None:
        mine = [type(q)(f"t{n}-{q.query_id}", q.text) for q in queries] * 5
        barrier.wait()
        with bound(request_id=f"req-{n}", job_id=f"job-{n}"):
            list(RemoteCorpus(address).batch_search("tiny", mine, 3))

    threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(corpus.seen) == 6 * 5 * len(queries)
    for step, request_id, job_id in corpus.seen:
        n = step.removeprefix("search:t").split("-")[0]
        assert (request_id, job_id) == (f"req-{n}", f"job-{n}")


def test_ids_pass_from_one_service_to_the_next(tmp_path, request_log):
    """Service A's handler calls service B: B's request carries A's request id and job id."""
    downstream = start_server([corpus_server.binding(CorpusService(EmbeddedBackend(tmp_path / "b")))], port=0)
    b_address = f"127.0.0.1:{downstream.port}"

    class RelayingEvaluator(Evaluator):
        def evaluate(self, qrels, run, measures=("nDCG@10",), options=None, **kwargs):
            RemoteCorpus(b_address).find_corpus("absent")   # the call under test: A -> B
            return super().evaluate(qrels, run, measures)

    upstream = start_server([evaluator_server.binding(RelayingEvaluator())], port=0)
    try:
        evaluator = RemoteEvaluator(f"127.0.0.1:{upstream.port}")
        with bound(request_id="chain-1", job_id="job-chain"):
            evaluator.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["P@1"])
        evaluator.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["P@1"])  # no ids: A mints one, B gets it
        a_lines, b_lines = request_log.requests("Evaluate"), request_log.requests("GetCorpus")
        assert [(line["request_id"], line["job_id"]) for line in a_lines][0] == ("chain-1", "job-chain")
        assert [(line["request_id"], line["job_id"]) for line in b_lines][0] == ("chain-1", "job-chain")
        assert b_lines[0]["grpc_code"] == "NOT_FOUND"     # find_corpus of an absent corpus
        minted = a_lines[1]["request_id"]
        assert minted != "chain-1" and b_lines[1]["request_id"] == minted and b_lines[1]["job_id"] is None
    finally:
        upstream.stop(grace=0)
        downstream.stop(grace=0)


def test_health_checks_are_intercepted_and_echo_the_request_id(served, request_log):
    address, _, _ = served
    with open_channel(address) as channel:
        with bound(request_id="probe-1"):
            reply, call = health_pb2_grpc.HealthStub(channel).Check.with_call(health_pb2.HealthCheckRequest())
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        assert ("x-request-id", "probe-1") in tuple(call.trailing_metadata())
        # An unusable id (quotes and spaces could forge text log fields; or far too long) is replaced.
        for unusable in ['evil" level=ERROR "forged', "x" * 129]:
            _, call = corpus_pb2_grpc.CorpusStub(channel).GetCorpus.with_call(
                corpus_pb2.GetCorpusRequest(corpus_id="tiny"), metadata=[("x-request-id", unusable)])
            echoed = dict(call.trailing_metadata())["x-request-id"]
            assert len(echoed) == 32 and unusable not in request_log.text()
        assert "evil" not in request_log.text()


def test_unknown_methods_still_answer_unimplemented(served):
    address, _, _ = served
    with open_channel(address) as channel:
        with pytest.raises(grpc.RpcError) as raised:
            channel.unary_unary("/irforge.v1.Corpus/NoSuchMethod")(b"")
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
