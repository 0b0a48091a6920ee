"""The corpus service under faults: what a client did not commit is never committed, concurrent
writers never lose an acknowledged document, readers never see a generation vanish, and open
streams never starve health checks. Real gRPC servers on 127.0.0.1, the real backends, SciFact.

Racy cases run TRIALS times (IRFORGE_FAULT_TRIALS raises it: run 50+ before trusting a change).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
import uuid
import warnings

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from irforge.common.grpc_server import open_channel, start_server
from irforge.corpus import protocol
from irforge.corpus import server as corpus_server
from irforge.corpus.client import RemoteCorpus
from irforge.corpus.core import CorpusService
from irforge.corpus.errors import CorpusBusy, IngestAborted
from irforge.corpus.lexical.base import CorpusState
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.data.types import Document, Query
from irforge.v1 import common_pb2, corpus_pb2, corpus_pb2_grpc

TRIALS = int(os.environ.get("IRFORGE_FAULT_TRIALS", "3"))
ES_URL = os.environ.get("IRFORGE_TEST_ELASTICSEARCH_URL")


@pytest.fixture(scope="module")
def scifact_docs(beir_dir) -> list[Document]:
    return list(itertools.islice(BeirDataset.open(beir_dir / "scifact").corpus(), 2000))


@pytest.fixture()
def served(tmp_path):
    """(address, CorpusService) of a real corpus server over the embedded backend."""
    service = CorpusService(EmbeddedBackend(tmp_path / "indexes"))
    running = start_server([corpus_server.binding(service)], port=0)
    yield f"127.0.0.1:{running.port}", service
    running.stop(grace=0)


def batches_of(documents, size=250):
    return [documents[i:i + size] for i in range(0, len(documents), size)]


def raw_requests(corpus_id, documents, *, commit: bool):
    yield corpus_pb2.IngestRequest(corpus_id=corpus_id)
    for batch in batches_of(documents):
        yield corpus_pb2.IngestRequest(documents=[protocol.document_to_proto(d) for d in batch])
    if commit:
        yield corpus_pb2.IngestRequest(commit=True)


# -- 1. only what the client meant to commit ---------------------------------------------------

def test_a_stream_ending_without_its_commit_message_commits_nothing(served, scifact_docs):
    # What gRPC sometimes makes of an aborted client: the request stream simply ends.
    address, service = served
    service.create_corpus("c", "fp", Bm25Settings())
    with open_channel(address) as channel:
        stub = corpus_pb2_grpc.CorpusStub(channel)
        with pytest.raises(grpc.RpcError) as error:
            list(stub.Ingest(raw_requests("c", scifact_docs[:1000], commit=False), timeout=60))
    assert error.value.code() == grpc.StatusCode.ABORTED
    assert "without a commit message" in error.value.details()
    info = service.get_corpus("c")
    assert (info.state, info.document_count) == (CorpusState.EMPTY, 0)


def test_an_aborted_reingest_leaves_the_committed_corpus_as_it_was(served, scifact_docs):
    address, service = served
    client = RemoteCorpus(address)
    service.create_corpus("c", "fp", Bm25Settings())
    list(client.ingest("c", batches_of(scifact_docs[:500])))
    before = service.search("c", Query("q", "vitamin d deficiency"), 10).pairs()
    with open_channel(address) as channel:
        stub = corpus_pb2_grpc.CorpusStub(channel)
        with pytest.raises(grpc.RpcError):
            list(stub.Ingest(raw_requests("c", scifact_docs[500:1500], commit=False), timeout=60))
    info = service.get_corpus("c")
    assert (info.state, info.document_count) == (CorpusState.READY, 500)
    assert service.search("c", Query("q", "vitamin d deficiency"), 10).pairs() == before


def test_a_client_whose_documents_fail_mid_stream_never_commits(served, scifact_docs):
    address, service = served
    client = RemoteCorpus(address)
    for trial in range(TRIALS * 5):
        corpus_id = f"c{trial}"
        service.create_corpus(corpus_id, "fp", Bm25Settings())
        fail_after = trial % 5  # 0..4 batches of 250 get through first

        def failing():
            for n, batch in enumerate(batches_of(scifact_docs)):
                if n == fail_after:
                    raise ValueError(f"corpus.jsonl:{n * 250 + 1}: bad document")
                yield batch

        with pytest.raises(ValueError, match="bad document"):
            list(client.ingest(corpus_id, failing()))
        info = service.get_corpus(corpus_id)
        assert (info.state, info.document_count) == (CorpusState.EMPTY, 0), f"trial {trial}"
    client.close()


def test_a_reused_index_must_prove_it_is_complete(tmp_path, beir_dir):
    """A READY index holding part of the corpus (committed by an older irforge from a cut stream)
    is re-indexed, not reused: `index reused` is said only of a complete index."""
    from irforge.common.progress import no_progress
    from irforge.pipeline.retrievers.base import CorpusTracker
    from irforge.pipeline.retrievers.bm25 import Bm25Retriever, corpus_id_for

    dataset = BeirDataset.open(beir_dir / "scifact")
    fingerprint = dataset.corpus_fingerprint()
    service = CorpusService(EmbeddedBackend(tmp_path / "indexes"))
    corpus_id = corpus_id_for(dataset.name, fingerprint, Bm25Settings())
    service.create_corpus(corpus_id, fingerprint, Bm25Settings())
    list(service.ingest(corpus_id, batches_of(list(itertools.islice(dataset.corpus(), 1200)))))

    retriever = Bm25Retriever(service, Bm25Settings(), no_progress)
    retriever.prepare(dataset, fingerprint, CorpusTracker(judged=set()))
    counts = retriever.counts()
    assert counts["ingest_skipped"] is False
    assert "1200 documents" in counts["reindexed_because"]
    assert service.get_corpus(corpus_id).document_count == 5183

    again = Bm25Retriever(service, Bm25Settings(), no_progress)
    again.prepare(dataset, fingerprint, CorpusTracker(judged=set()))
    assert again.counts()["ingest_skipped"] is True


# -- 2. concurrent writers --------------------------------------------------------------------

def test_concurrent_ingests_never_lose_an_acknowledged_document(served, scifact_docs):
    address, service = served
    for trial in range(TRIALS):
        corpus_id = f"c{trial}"
        service.create_corpus(corpus_id, "fp", Bm25Settings())
        halves = {"a": scifact_docs[:1000], "b": scifact_docs[1000:2000]}
        outcome: dict[str, object] = {}
        start = threading.Barrier(2)

        def ingest(name):
            client = RemoteCorpus(address)
            start.wait()
            try:
                outcome[name] = list(client.ingest(corpus_id, batches_of(halves[name], 100)))[-1].committed
            except CorpusBusy as error:
                outcome[name] = error
            finally:
                client.close()

        threads = [threading.Thread(target=ingest, args=(name,)) for name in halves]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        committed = [name for name, result in outcome.items() if result is True]
        assert committed, outcome
        busy = [name for name, result in outcome.items() if isinstance(result, CorpusBusy)]
        assert sorted(committed + busy) == ["a", "b"], outcome
        assert service.get_corpus(corpus_id).document_count == 1000 * len(committed), f"trial {trial}"
        for name in busy:  # the refused client retries, as the message tells it to
            assert "being ingested by another client" in str(outcome[name])
            list(service.ingest(corpus_id, batches_of(halves[name])))
        assert service.get_corpus(corpus_id).document_count == 2000


def test_two_processes_sharing_an_index_folder_cannot_both_write_one_corpus(tmp_path, scifact_docs):
    # Two backends on one folder stand for two processes: the flock is per open file.
    first, second = EmbeddedBackend(tmp_path), EmbeddedBackend(tmp_path)
    first.create("c", "fp", Bm25Settings())
    writing = first.ingest("c", iter(batches_of(scifact_docs[:500])))
    next(writing)
    with pytest.raises(CorpusBusy):
        next(second.ingest("c", iter(batches_of(scifact_docs[500:1000]))))
    list(writing)
    list(second.ingest("c", iter(batches_of(scifact_docs[500:1000]))))
    assert first.info("c").document_count == 1000


# -- 3. reads during a re-ingest ----------------------------------------------------------------

def test_searches_during_reingests_never_fail_nor_see_a_partial_index(tmp_path, scifact_docs):
    writer, reader = EmbeddedBackend(tmp_path), EmbeddedBackend(tmp_path)   # two processes, one folder
    writer.create("c", "fp", Bm25Settings())
    list(writer.ingest("c", iter(batches_of(scifact_docs[:300]))))
    errors: list[BaseException] = []
    counts: set[int] = set()
    stop = threading.Event()

    def search_forever():
        while not stop.is_set():
            try:
                reader.search("c", [Query("q", "protein expression in cancer cells")], 10)
                counts.add(reader.info("c").document_count)
            except BaseException as error:  # noqa: BLE001 - any failure is the finding
                errors.append(error)
                return

    thread = threading.Thread(target=search_forever)
    thread.start()
    try:
        for n in range(TRIALS * 4):
            list(writer.ingest("c", iter([[Document(f"extra-{n}", "", "protein expression")]])))
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[0]
    assert min(counts) >= 300


def test_a_commit_landing_while_a_reader_loads_never_removes_the_generation_it_loads(tmp_path, scifact_docs):
    """The interleaving behind `FileNotFoundError .../params.index.json`, made deterministic: a
    reader has read meta.json (naming generation N) when another process commits N+1, and only
    then opens N's files."""
    writer, reader = EmbeddedBackend(tmp_path), EmbeddedBackend(tmp_path)
    writer.create("c", "fp", Bm25Settings())
    list(writer.ingest("c", iter(batches_of(scifact_docs[:300]))))
    read_meta = reader._read_meta
    commits = iter(range(2))

    def read_meta_then_a_commit_lands(corpus_id):
        meta = read_meta(corpus_id)
        if next(commits, None) is not None:
            list(writer.ingest("c", iter([[Document(f"late-{meta['generation']}", "", "protein")]])))
        return meta

    reader._read_meta = read_meta_then_a_commit_lands
    hits = reader.search("c", [Query("q", "protein expression in cancer cells")], 10)[0]
    assert len(hits) == 10


@pytest.mark.skipif(not ES_URL, reason="IRFORGE_TEST_ELASTICSEARCH_URL is not set: no Elasticsearch server to test against")
def test_elasticsearch_reingest_switches_an_alias_so_searches_never_see_an_empty_index(scifact_docs):
    from irforge.corpus.lexical.elasticsearch import ElasticsearchBackend

    backend = ElasticsearchBackend(ES_URL, index_prefix=f"irforge-test-{uuid.uuid4().hex[:8]}-")
    try:
        backend.create("c", "fp", Bm25Settings())
        list(backend.ingest("c", iter(batches_of(scifact_docs[:300]))))
        query = [Query("q", "protein expression in cancer cells")]
        before = backend.search("c", query, 10)[0].pairs()
        reingest = backend.ingest("c", iter(batches_of(scifact_docs[300:600])))
        next(reingest)  # mid-ingest: the committed generation still answers, whole
        assert backend.search("c", query, 10)[0].pairs() == before
        assert backend.info("c").document_count == 300
        list(reingest)
        assert backend.info("c").document_count == 600

        def failing():
            yield scifact_docs[600:700]
            raise RuntimeError("source went away")

        with pytest.raises(RuntimeError):
            list(backend.ingest("c", failing()))
        assert backend.info("c").document_count == 600
        assert len(backend._generations(backend._index("c"))) <= 2
    finally:
        backend.delete("c")
        backend.close()


# -- 4. the server stays responsive -------------------------------------------------------------

def test_idle_ingest_streams_never_starve_health_checks_and_unary_calls(tmp_path):
    service = CorpusService(EmbeddedBackend(tmp_path / "indexes"))
    for n in range(8):
        service.create_corpus(f"c{n}", "fp", Bm25Settings())
    running = start_server([corpus_server.binding(service)], port=0)
    address = f"127.0.0.1:{running.port}"
    release = threading.Event()

    def idle_requests(corpus_id):
        yield corpus_pb2.IngestRequest(corpus_id=corpus_id)
        release.wait(30)

    channel = open_channel(address)
    stub = corpus_pb2_grpc.CorpusStub(channel)
    calls = [stub.Ingest(idle_requests(f"c{n}"), timeout=30) for n in range(8)]  # 8: the old worker count
    try:
        time.sleep(1.0)
        health = health_pb2_grpc.HealthStub(channel)
        reply = health.Check(health_pb2.HealthCheckRequest(service="irforge.v1.Corpus"), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        assert stub.GetCorpus(corpus_pb2.GetCorpusRequest(corpus_id="c0"), timeout=5).corpus_id == "c0"
        refused = []
        for call in calls:  # the open streams answer nothing yet; the refused ones have ended
            if call.done():
                with pytest.raises(grpc.RpcError) as error:
                    next(call)
                assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                refused.append(error.value)
        assert len(refused) == 8 - corpus_server.DEFAULT_MAX_INGEST_STREAMS
        assert "Ingest streams open" in refused[0].details()
    finally:
        release.set()
        for call in calls:
            call.cancel()
        channel.close()
        running.stop(grace=0)


def test_an_idle_ingest_stream_is_cancelled_and_commits_nothing(tmp_path, scifact_docs):
    service = CorpusService(EmbeddedBackend(tmp_path / "indexes"))
    service.create_corpus("c", "fp", Bm25Settings())
    running = start_server([corpus_server.binding(service, ingest_idle_timeout_s=1.0)], port=0)
    release = threading.Event()

    def stalls_after_one_batch():
        yield corpus_pb2.IngestRequest(corpus_id="c", documents=[protocol.document_to_proto(d) for d in scifact_docs[:50]])
        release.wait(30)

    try:
        with open_channel(f"127.0.0.1:{running.port}") as channel:
            started = time.monotonic()
            with pytest.raises(grpc.RpcError) as error:
                list(corpus_pb2_grpc.CorpusStub(channel).Ingest(stalls_after_one_batch(), timeout=30))
            assert error.value.code() == grpc.StatusCode.CANCELLED
            assert time.monotonic() - started < 10
        info = service.get_corpus("c")
        assert (info.state, info.document_count) == (CorpusState.EMPTY, 0)
        # ...and its slot is free again: a full ingest goes through.
        list(RemoteCorpus(f"127.0.0.1:{running.port}").ingest("c", batches_of(scifact_docs[:100])))
        assert service.get_corpus("c").document_count == 100
    finally:
        release.set()
        running.stop(grace=0)


# -- 7. per-document errors, quiet empty corpora ----------------------------------------------------

def test_one_bad_metadata_json_is_that_documents_error_and_the_rest_commits(served, scifact_docs):
    address, service = served
    service.create_corpus("c", "fp", Bm25Settings())
    good = [protocol.document_to_proto(d) for d in scifact_docs[:20]]
    bad = common_pb2.Document(doc_id="broken-meta", title="t", text="some text", metadata_json="{not json")

    def requests():
        yield corpus_pb2.IngestRequest(corpus_id="c", documents=[*good[:10], bad, *good[10:]])
        yield corpus_pb2.IngestRequest(commit=True)

    with open_channel(address) as channel:
        replies = list(corpus_pb2_grpc.CorpusStub(channel).Ingest(requests(), timeout=60))
    assert replies[-1].committed
    assert (replies[-1].received, replies[-1].indexed, replies[-1].failed) == (21, 20, 1)
    (error,) = replies[0].errors
    assert error.doc_id == "broken-meta" and "metadata_json is not valid JSON" in error.message
    assert service.get_corpus("c").document_count == 20


def test_an_all_empty_corpus_evaluates_without_numpy_warnings(tmp_path):
    from irforge.common.progress import no_progress
    from irforge.evaluator.core import Evaluator
    from irforge.pipeline.eval_job import EvalJob, EvalJobSpec
    from irforge.pipeline.retrievers.bm25 import Bm25Retriever

    root = tmp_path / "empty"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": ""}) + "\n" for i in range(3)))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "anything at all"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    retriever = Bm25Retriever(CorpusService(EmbeddedBackend(tmp_path / "indexes")), Bm25Settings(), no_progress)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = EvalJob(EvalJobSpec(dataset=root, out_dir=tmp_path / "out"), retriever, Evaluator(), "in-process").run()
    assert results["metrics"]["nDCG@10"] == 0.0
    assert results["evaluation"]["queries_evaluated"] == 1
