"""Dense and hybrid jobs through a real models (Encoder) service and hole filling through a real
judge service (the embedded MiniLM judge), on a small real SciFact slice: the encode + index and
judge steps, the embedding cache shared with `irforge eval`, and the vector collection shared
between jobs."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from irforge.cli.main import main
from irforge.common.grpc_server import start_server
from irforge.corpus import server as corpus_server
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.vectors import make_vector_backend
from irforge.data import BeirDataset
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.core import Evaluator
from irforge.judge import server as judge_server
from irforge.judge.factory import open_judge
from irforge.judge.holes import find_holes
from irforge.models import server as models_server
from irforge.models.client import RemoteEncoder
from irforge.models.encoder import EncoderCore, EncoderSpec
from irforge.orchestrator.context import ServiceAddresses, worker_encoder_spec
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState, JobStore

from .conftest import wait_for

MODEL = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    root = tmp_path_factory.mktemp("dense-platform")
    encoder = EncoderCore(EncoderSpec(model=MODEL))
    judge = open_judge("embedded", root / "judgements.sqlite3")
    corpus = CorpusService(EmbeddedBackend(root / "indexes"), make_vector_backend("embedded", vector_dir=root / "vectors"))
    running = start_server([corpus_server.binding(corpus), evaluator_server.binding(Evaluator()),
                            models_server.binding({encoder.identity["model"]: encoder}), judge_server.binding(judge)], port=0)
    address = f"127.0.0.1:{running.port}"
    orchestrator = Orchestrator(root / "state", ServiceAddresses(corpus=address, evaluator=address, encoder=address, judge=address),
                                cache_path=root / "embeddings.sqlite3", backoff_s=0.05).start()
    yield orchestrator, root
    orchestrator.shutdown()
    running.stop(grace=0)
    judge.close()


def results_of(orchestrator, job_id) -> dict:
    return json.loads((orchestrator.results_dir(job_id) / "results.json").read_text())


def test_dense_job_matches_irforge_eval_and_shares_the_cache(platform, scifact_tiny, tmp_path):
    orchestrator, root = platform
    record, _ = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(scifact_tiny), retriever="dense")))
    assert record.state == JobState.SUCCEEDED, record.error
    assert [s.name for s in record.steps] == ["encode_vectors", "retrieve", "evaluate"]
    got = results_of(orchestrator, record.job_id)
    documents = sum(1 for _ in BeirDataset.open(scifact_tiny).corpus())
    assert got["counts"]["documents_encoded"] == documents and got["counts"]["queries_encoded"] == 3

    # `irforge eval` on the same embedding cache: nothing to encode, the same vectors, the same numbers.
    out = tmp_path / "eval"
    assert main(["eval", "--dataset", str(scifact_tiny), "--retriever", "dense", "--model", MODEL, "--out", str(out),
                 "--embedding-cache", str(root / "embeddings.sqlite3"), "--vector-dir", str(tmp_path / "vectors")]) == 0
    expected = json.loads((out / "results.json").read_text())
    assert expected["counts"]["documents_encoded"] == 0 and expected["counts"]["queries_encoded"] == 0
    assert got["metrics"] == pytest.approx(expected["metrics"], abs=1e-12)
    assert (orchestrator.results_dir(record.job_id) / "run.trec").read_bytes() == (out / "run.trec").read_bytes()

    # A second job on the same corpus and model reuses the collection the first one built.
    again, _ = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(scifact_tiny), retriever="dense", top_k=10)))
    assert results_of(orchestrator, again.job_id)["counts"]["vectors_skipped"] is True


def test_hybrid_job_with_hole_filling_through_the_judge_service(platform, scifact_tiny):
    orchestrator, _ = platform
    spec = JobSpec.of(dataset=str(scifact_tiny), retriever="hybrid", fill_holes=3, top_k=20)
    record, events = wait_for(orchestrator, orchestrator.submit(spec))
    assert record.state == JobState.SUCCEEDED, record.error
    assert [s.name for s in record.steps] == ["ingest_lexical", "encode_vectors", "retrieve", "evaluate", "judge_holes"]
    results = results_of(orchestrator, record.job_id)
    holes = results["holes"]
    dataset = BeirDataset.open(scifact_tiny)
    run = {}
    for line in (orchestrator.results_dir(record.job_id) / "run.trec").read_text().splitlines():
        query_id, _, doc_id, _, score, _ = line.split()
        run.setdefault(query_id, {})[doc_id] = float(score)
    assert holes["holes"] == len(find_holes(dataset.qrels("test"), run, 3)) > 0
    assert holes["judged"] + holes["unparsed"] + holes["failed"] == holes["holes"]
    assert holes["metrics_before"]["nDCG@10"] == pytest.approx(results["metrics"]["nDCG@10"], abs=1e-12)
    assert holes["store"].startswith("judge service 127.0.0.1:")
    assert any(e.step == "judge_holes" and e.state == "progress" and e.unit == "pair" for e in events)
    if holes["judged"]:
        assert (orchestrator.results_dir(record.job_id) / "qrels.judged.tsv").exists()


def test_shard_workers_load_the_model_the_encoder_service_serves(platform):
    orchestrator, _ = platform
    remote = RemoteEncoder(orchestrator.services.encoder)
    try:
        spec = worker_encoder_spec(remote.describe())
    finally:
        remote.close()
    assert EncoderCore(spec).identity_key == remote.identity_key  # the key the shard outputs are checked against


def test_a_sharded_job_on_a_cached_corpus_runs_no_shard(platform, scifact_tiny):
    orchestrator, _ = platform
    record, _ = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(scifact_tiny), retriever="dense", shards=2)))
    assert record.state == JobState.SUCCEEDED, record.error
    sharding = {s.name: s for s in orchestrator.store.steps(record.job_id)}["encode_vectors"].output["sharding"]
    assert sharding["all_cached"] is True and sharding["shards_run"] == [] and sharding["shard_count"] == 2


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("IRFORGE_TEST_SHARD_WORKERS"),
                    reason="starts two shard-worker processes that each load torch and the model (22-66 s here, by load); "
                           "set IRFORGE_TEST_SHARD_WORKERS=1 to run")
def test_sharded_encoding_fills_the_cache_before_indexing(platform, scifact_tiny, tmp_path):
    orchestrator, _ = platform
    # The same documents in another order: another corpus fingerprint (a new vector collection),
    # and a fresh embedding cache, so the shard workers really encode.
    dataset = tmp_path / "reordered"
    shutil.copytree(scifact_tiny, dataset)
    lines = (scifact_tiny / "corpus.jsonl").read_text().splitlines(keepends=True)
    (dataset / "corpus.jsonl").write_text("".join(reversed(lines)))
    sharded = Orchestrator(tmp_path / "state", orchestrator.services, cache_path=tmp_path / "fresh-cache.sqlite3")
    sharded.services = ServiceAddresses(**{**vars(orchestrator.services), "shard_options": {"max_parallel": 2}})
    sharded.start()
    try:
        record, _ = wait_for(sharded, sharded.submit(JobSpec.of(dataset=str(dataset), retriever="dense", shards=2)), timeout=240)
    finally:
        sharded.shutdown()
    assert record.state == JobState.SUCCEEDED, record.error
    report = {s.name: s for s in JobStore(tmp_path / "state" / "jobs.sqlite3", owner=False).steps(record.job_id)}["encode_vectors"].output
    assert report["sharding"]["shards_run"] == [0, 1] and report["sharding"]["vectors_merged"] == len(lines)
    results = json.loads((tmp_path / "state" / "jobs" / record.job_id / "results" / "results.json").read_text())
    assert results["counts"]["documents_encoded"] == 0                      # every vector came from the shards
    assert results["counts"]["documents_reused_from_cache"] == len(lines)


@pytest.mark.parametrize("retriever", ["dense", "hybrid"])
def test_instruction_job_matches_the_command(platform, beir_dir, tmp_path, retriever):
    """An instruction-following job (dense, or hybrid: BM25 + the Encoder service) gives the metrics
    `irforge eval-instructions` gives in-process with the same model."""
    from irforge.instructions.scifact_build import build

    orchestrator, root = platform
    collection = tmp_path / "scifact-if"
    build(beir_dir / "scifact", collection, max_queries=5, distractors=30)
    job_id = orchestrator.submit(JobSpec.of(dataset=str(collection), retriever=retriever, model=MODEL, instructions=True,
                                         measures=("nDCG@10",)).validate())
    record, _ = wait_for(orchestrator, job_id, timeout=300)
    assert record.state == JobState.SUCCEEDED, record.error
    job = results_of(orchestrator, job_id)
    out = tmp_path / "local"
    assert main(["eval-instructions", "--dataset", str(collection), "--retriever", retriever, "--model", MODEL,
                 "--index-dir", str(tmp_path / "idx"), "--vector-dir", str(tmp_path / "vec"),
                 "--embedding-cache", str(tmp_path / "cache.sqlite3"), "--out", str(out)]) == 0
    local = json.loads((out / "results.json").read_text())
    assert job["retriever"]["name"] == local["retriever"]["name"] == retriever
    assert job["metrics"] == pytest.approx(local["metrics"], abs=1e-6)
    assert set(job["metrics"]) >= {"nDCG@10[og]", "WISE", "SICR", "p-MRR"}
