"""Search endpoints (the team owns retrieval) against real servers: irforge's own BM25 served over
HTTP JSON and over the irforge.v1.Retriever gRPC service. Evaluated through the endpoint, the
metrics must equal irforge's in-process BM25 on the same data; every malformed answer must stop
the run with an error naming the query; retries, the breaker and the key behave as for embeddings.
"""

from __future__ import annotations

import json
import time

import pytest

from irforge.common.progress import no_progress
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical import make_backend
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.endpoints.errors import EndpointAnswerError, EndpointSpecError, EndpointUnavailable
from irforge.endpoints.search import PROBE_QUERY_ID, GrpcSearchRetriever, HttpSearchRetriever
from irforge.endpoints.spec import EndpointSpec
from irforge.evaluator.core import Evaluator
from irforge.pipeline.eval_job import EvalJob, EvalJobSpec
from irforge.pipeline.retrievers.base import CorpusTracker
from irforge.pipeline.retrievers.bm25 import Bm25Retriever

KEY_VARIABLE = "IRFORGE_TEST_ENDPOINT_KEY"


@pytest.fixture(scope="module")
def bm25(servers, scifact_subset, tmp_path_factory):
    search = servers.Bm25Search(scifact_subset, tmp_path_factory.mktemp("team-bm25"))
    yield search
    search.close()


@pytest.fixture(scope="module")
def http_server(servers, bm25):
    server = servers.HttpSearchServer(bm25)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def grpc_address(servers, bm25):
    running = servers.start_grpc_search(servers.Bm25RetrieverServicer(bm25))
    yield f"127.0.0.1:{running.port}"
    running.stop(grace=0)


@pytest.fixture(scope="module")
def unary_address(servers, bm25):
    running = servers.start_grpc_search(servers.UnaryOnlyServicer(bm25))
    yield f"127.0.0.1:{running.port}"
    running.stop(grace=0)


@pytest.fixture(autouse=True)
def clean(bm25, http_server):
    bm25.faults.clear()
    bm25.requests.clear()
    http_server.default = None


@pytest.fixture(scope="module")
def reference(scifact_subset, tmp_path_factory):
    """irforge's own BM25, in-process, on the same subset: what the endpoints must reproduce."""
    out = tmp_path_factory.mktemp("bm25-reference")
    corpus = CorpusService(make_backend("embedded", index_dir=out / "index"))
    try:
        results = EvalJob(EvalJobSpec(dataset=scifact_subset, out_dir=out), Bm25Retriever(corpus, Bm25Settings(), no_progress),
                          Evaluator(), mode="in-process").run()
    finally:
        corpus.close()
    return {**results, "run_path": out / results["files"]["run"]}


def spec(kind: str, url: str, **overrides) -> EndpointSpec:
    return EndpointSpec.from_dict({"kind": kind, "url": url, "backoff_initial_s": 0.05, "backoff_max_s": 0.5,
                                   "timeout_s": 30, **overrides}, source="test spec")


def make(kind: str, url: str, **overrides):
    cls = HttpSearchRetriever if kind == "search-http" else GrpcSearchRetriever
    return cls(spec(kind, url, **overrides))


def evaluate(retriever, scifact_subset, out_dir):
    return EvalJob(EvalJobSpec(dataset=scifact_subset, out_dir=out_dir), retriever, Evaluator(), mode="endpoint").run()


def assert_same_metrics(results, reference):
    assert results["metrics"].keys() == reference["metrics"].keys()
    for name, value in reference["metrics"].items():
        assert results["metrics"][name] == pytest.approx(value, abs=1e-9), name
    for query_id, values in reference["per_query"].items():
        for name, value in values.items():
            assert results["per_query"][query_id][name] == pytest.approx(value, abs=1e-9), (query_id, name)


def run_lines(path):
    return [line.rsplit(" ", 1)[0] for line in path.read_text().splitlines()]  # without the run tag


@pytest.mark.parametrize("kind", ["search-http", "search-grpc"])
def test_endpoint_metrics_equal_irforge_bm25(kind, http_server, grpc_address, scifact_subset, reference, tmp_path):
    url = http_server.url if kind == "search-http" else grpc_address
    retriever = make(kind, url, batch_size=8, max_concurrency=3)
    results = evaluate(retriever, scifact_subset, tmp_path)
    assert_same_metrics(results, reference)
    # Scores cross JSON / protobuf doubles unchanged, so the run itself is the same, line for line.
    assert run_lines(tmp_path / "run.trec") == run_lines(reference["run_path"])
    recorded = results["retriever"]
    assert recorded["name"] == kind and recorded["endpoint"]["host"] == url.removeprefix("http://").split("/")[0]
    assert len(recorded["probe"]["sha256"]) == 64
    assert results["counts"]["queries_searched"] == 40 and results["counts"]["documents_read"] > 300
    if kind == "search-grpc":
        assert recorded["endpoint"]["mode"] == "BatchSearch streams of 8 queries"
        assert results["counts"]["endpoint_requests"] == 1 + 5  # the probe, then 40 queries in streams of 8
    else:
        assert results["counts"]["endpoint_requests"] == 1 + 40


def test_probe_fingerprint_is_stable_and_follows_the_answers(http_server, grpc_address, scifact_subset):
    dataset = BeirDataset.open(scifact_subset)
    prints = []
    for kind, url in [("search-http", http_server.url), ("search-grpc", grpc_address), ("search-http", http_server.url)]:
        retriever = make(kind, url)
        retriever.prepare(dataset, dataset.corpus_fingerprint(), CorpusTracker(judged=set()))
        prints.append(retriever.probe_sha256)
    assert prints[0] == prints[1] == prints[2]  # the same retriever behind either transport


def test_grpc_server_without_batch_search_is_called_query_by_query(unary_address, scifact_subset, reference, tmp_path):
    retriever = make("search-grpc", unary_address, max_concurrency=4)
    results = evaluate(retriever, scifact_subset, tmp_path)
    assert_same_metrics(results, reference)
    assert results["retriever"]["endpoint"]["mode"] == "unary Search per query (the server has no BatchSearch)"


@pytest.fixture(scope="module")
def dataset_and_queries(scifact_subset):
    dataset = BeirDataset.open(scifact_subset)
    qrels = dataset.qrels("test")
    return dataset, [q for q in dataset.queries() if q.query_id in qrels][:12]


def prepared(kind, url, dataset, **overrides):
    retriever = make(kind, url, **overrides)
    retriever.prepare(dataset, dataset.corpus_fingerprint(), CorpusTracker(judged=set()))
    return retriever


HTTP_FAULTS = [
    ("unknown-id", r"1 document id\(s\) not in the corpus, e.g. \['no-such-document'\]"),
    ("duplicate-id", r"document '.+' appears twice"),
    ("string-score", r"hit 0 \('.+'\) has a non-numeric score '0.5'"),
    ("nan-score", r"hit 0 \('.+'\) has a non-finite score nan"),
    ("too-many", r"11 hits for k=10"),
    ("malformed", r"the answer is not valid JSON"),
    ("no-hits-key", r'expected \{"hits": \[...\]\}'),
]
GRPC_FAULTS = [f for f in HTTP_FAULTS if f[0] in ("unknown-id", "duplicate-id", "nan-score", "too-many")] + [
    ("missing", r"the stream ended without answering 1 query"),
    ("wrong-query-id", r"the stream answered a query that was not asked in it"),
]


@pytest.mark.parametrize("kind, fault, message", [("search-http", *f) for f in HTTP_FAULTS] + [("search-grpc", *f) for f in GRPC_FAULTS],
                         ids=[f"http-{f[0]}" for f in HTTP_FAULTS] + [f"grpc-{f[0]}" for f in GRPC_FAULTS])
def test_bad_answers_stop_the_run_naming_the_query(kind, fault, message, bm25, http_server, grpc_address, dataset_and_queries):
    dataset, queries = dataset_and_queries
    retriever = prepared(kind, http_server.url if kind == "search-http" else grpc_address, dataset, batch_size=4)
    victim = queries[5].query_id
    bm25.faults[victim] = fault
    named = "another-query" if fault == "wrong-query-id" else victim
    with pytest.raises(EndpointAnswerError, match=rf"answer for query '{named}': {message}"):
        retriever.retrieve(queries, 10)
    assert sum(1 for q, _ in bm25.requests if q == victim) == 1  # a wrong answer is not asked again


def test_wrong_query_id_over_unary_search(bm25, unary_address, dataset_and_queries):
    dataset, queries = dataset_and_queries
    retriever = prepared("search-grpc", unary_address, dataset)
    bm25.faults[queries[0].query_id] = "wrong-query-id"
    with pytest.raises(EndpointAnswerError, match=rf"answer for query '{queries[0].query_id}': the answer is for query 'another-query'"):
        retriever.retrieve(queries, 10)


@pytest.mark.parametrize("kind", ["search-http", "search-grpc"])
def test_transient_failures_are_retried(kind, bm25, http_server, grpc_address, dataset_and_queries):
    dataset, queries = dataset_and_queries
    url = http_server.url if kind == "search-http" else grpc_address
    clean = prepared(kind, url, dataset).retrieve(queries, 10)
    retriever = prepared(kind, url, dataset, batch_size=4)
    bm25.faults[queries[2].query_id] = "503"
    bm25.faults[queries[7].query_id] = "429:1" if kind == "search-http" else "500"
    begun = time.monotonic()
    assert retriever.retrieve(queries, 10) == clean
    assert retriever.counts()["endpoint_retries"] == 2
    if kind == "search-http":
        assert retriever.counts()["endpoint_rate_limited"] == 1 and time.monotonic() - begun >= 1.0


def test_a_server_error_on_every_request_opens_the_breaker(http_server, dataset_and_queries):
    dataset, queries = dataset_and_queries
    retriever = prepared("search-http", http_server.url, dataset, max_concurrency=3, max_retries=20, circuit_breaker_failures=4)
    http_server.default = "500"
    with pytest.raises(EndpointUnavailable, match=r"looks down: 4 consecutive requests failed \(last: HTTP 500"):
        retriever.retrieve(queries, 10)
    assert retriever.counts()["endpoint_requests"] <= 1 + 4 + 2


@pytest.mark.parametrize("kind", ["search-http", "search-grpc"])
def test_a_closed_port_opens_the_breaker(kind, unused_port, dataset_and_queries):
    dataset, _ = dataset_and_queries
    url = f"http://127.0.0.1:{unused_port}/search" if kind == "search-http" else f"127.0.0.1:{unused_port}"
    begun = time.monotonic()
    with pytest.raises(EndpointUnavailable, match=rf"endpoint 127.0.0.1:{unused_port} looks down: 3 consecutive .*probe query"):
        prepared(kind, url, dataset, max_retries=10, circuit_breaker_failures=3, timeout_s=2)
    assert time.monotonic() - begun < 15


@pytest.mark.parametrize("kind", ["search-http", "search-grpc"])
def test_the_key_is_sent_and_never_shown(kind, bm25, http_server, grpc_address, dataset_and_queries, fake_key):
    dataset, queries = dataset_and_queries
    url = http_server.url if kind == "search-http" else grpc_address
    retriever = prepared(kind, url, dataset, api_key_env=KEY_VARIABLE)
    assert bm25.requests[0] == (PROBE_QUERY_ID, f"Bearer {fake_key}")
    bm25.faults[queries[1].query_id] = "unknown-id"
    with pytest.raises(EndpointAnswerError) as error:
        retriever.retrieve(queries, 10)
    shown = [json.dumps(retriever.describe()), json.dumps(retriever.counts()), str(error.value)]
    assert all(fake_key not in text for text in shown)


def test_kind_must_match_and_prepare_comes_first(grpc_address):
    with pytest.raises(EndpointSpecError, match="HttpSearchRetriever needs kind search-http"):
        HttpSearchRetriever(spec("search-grpc", grpc_address))
    with pytest.raises(RuntimeError, match=r"prepare\(\) must run before retrieve\(\)"):
        GrpcSearchRetriever(spec("search-grpc", grpc_address)).retrieve([], 10)


def test_the_instruction_is_its_own_field_and_only_in_instruction_evaluation():
    """Plain evaluation sends what it always sent; instruction evaluation adds the instruction beside
    the bare query (never appended to it), so a team's server decides how to use it."""
    from irforge.data.types import Query

    plain = Query("q1", "vitamin d bone density")
    instructed = Query("q1", "vitamin d bone density only trials", instruction="only trials", bare_text="vitamin d bone density")
    original_mode = Query("q1", "vitamin d bone density", instruction="", bare_text="vitamin d bone density")
    assert HttpSearchRetriever.request_body(plain, 10) == {"query_id": "q1", "query": "vitamin d bone density", "k": 10}
    assert HttpSearchRetriever.request_body(instructed, 10) == {
        "query_id": "q1", "query": "vitamin d bone density", "k": 10, "instruction": "only trials"}
    assert HttpSearchRetriever.request_body(original_mode, 10)["instruction"] == ""
    assert not GrpcSearchRetriever.request(plain, 10).HasField("instruction")
    request = GrpcSearchRetriever.request(instructed, 10)
    assert (request.query, request.instruction) == ("vitamin d bone density", "only trials")
    assert GrpcSearchRetriever.request(original_mode, 10).HasField("instruction")
