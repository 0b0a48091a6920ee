"""The cross-encoder reranker on Ray Serve, on loopback: scores equal in-process ones, calls carry
many queries, a missing model fails fast, and a batch survives its replica being killed mid-call."""

from __future__ import annotations

import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

with warnings.catch_warnings():  # Ray's own pydantic deprecation warnings, at import
    warnings.simplefilter("ignore", DeprecationWarning)
    ray = pytest.importorskip("ray")
    from irforge.models.reranker_serve import (
        RayReranker,
        RerankerDeploymentConfig,
        start_reranker_app,
    )

from irforge.models.errors import ModelNotFound
from irforge.models.reranker import RerankerSpec

pytestmark = pytest.mark.slow
APP = "reranker-test"
REPLICA_PREFIX = f"SERVE_REPLICA::{APP}#RerankerDeployment#"
QUERIES = ["vitamin D and bone density", "p53 apoptosis", "scurvy", "statins and muscle pain",
           "malaria vaccine efficacy", "gut microbiome obesity", "sleep and memory", "BRCA1 mutations"]


@pytest.fixture(scope="module")
def app(cross_encoder_dir, local_ray):
    try:
        yield start_reranker_app(RerankerSpec(str(cross_encoder_dir)), RerankerDeploymentConfig(num_cpus=2), name=APP)
    finally:
        ray.serve.delete(APP)


@pytest.fixture(scope="module")
def items(scifact_texts) -> list[tuple[str, list[str]]]:
    """8 queries x 12 documents cut to 20 words: 96 pairs, a second or two of work for one replica
    (long enough to kill it mid-call, short enough to keep the module near half a minute)."""
    texts = [" ".join(text.split()[:20]) for text in scifact_texts]
    return [(query, texts[n:n + 12]) for n, query in enumerate(QUERIES)]


@pytest.fixture(scope="module")
def expected(core, items) -> list[np.ndarray]:
    return core.score_batch(items)


def replica_names() -> set[str]:
    return {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
            if a["namespace"] == "serve" and a["name"].startswith(REPLICA_PREFIX)}


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_scores_through_serve_equal_in_process(app, core, items, expected):
    reranker = RayReranker(app)
    for scores, want in zip(reranker.score_batch(items), expected, strict=True):
        np.testing.assert_allclose(scores, want, atol=1e-6, rtol=0)
    assert reranker.score("q", []).shape == (0,) and reranker.retries == 0

    by_name = RayReranker(APP, max_pairs_per_call=20)  # the app's name works as well as a handle
    assert by_name.identity == core.identity
    assert by_name.describe()["replica"]["torch_threads"] == 2  # num_cpus=2 -> OMP_NUM_THREADS=2
    grouped = by_name.score_batch(items[:3])  # 12-pair items, at most 20 a call: three calls
    for scores, want in zip(grouped, expected[:3]):
        np.testing.assert_allclose(scores, want, atol=1e-6, rtol=0)


def test_ray_is_on_loopback(app):
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    assert {node["NodeManagerAddress"] for node in ray.nodes() if node["Alive"]} == {"127.0.0.1"}


def test_missing_model_fails_fast_with_model_not_found(app):
    started = time.monotonic()
    with pytest.raises(ModelNotFound, match="does not exist"):
        start_reranker_app(RerankerSpec("/nonexistent/cross-encoder"), name="missing")
    assert time.monotonic() - started < 5
    assert "missing" not in ray.serve.status().applications


def test_batch_survives_its_replica_dying_mid_call(app, items, expected):
    reranker = RayReranker(app, backoff_s=0.2)
    pid = reranker.describe()["replica"]["pid"]
    (victim,) = replica_names()
    busy_from = cpu_seconds(pid)
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(reranker.score_batch, items)
        deadline = time.monotonic() + 30
        while cpu_seconds(pid) - busy_from < 0.3:  # the replica is scoring our batch
            assert not result.done() and time.monotonic() < deadline, "the replica never started the batch"
            time.sleep(0.05)
        assert not result.done()
        ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=False)
        answer = result.result(timeout=120)

    assert reranker.retries >= 1  # the call was lost with the replica and re-sent
    for scores, want in zip(answer, expected, strict=True):
        np.testing.assert_allclose(scores, want, atol=1e-6, rtol=0)
    replacement = replica_names()
    assert victim not in replacement and len(replacement) == 1  # Serve started a new replica
    assert RayReranker(app).describe()["replica"]["pid"] != pid
