"""max_batch_size / batch_wait_timeout_s: Serve merges concurrent calls into one forward pass,
and every caller still gets exactly its own vectors (roles kept apart)."""

from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    pytest.importorskip("ray")
    from irforge.models.serve import EncoderDeploymentConfig, start_encoder_app
    from irforge.models.serve_client import RayEncoder

from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole

pytestmark = pytest.mark.slow
TEXTS = [f"sentence number {i} about bone density and vitamin D" for i in range(12)]


@pytest.fixture(scope="module")
def merging_encoder(local_ray):
    from ray import serve

    try:
        config = EncoderDeploymentConfig(num_cpus=2, max_batch_size=4, batch_wait_timeout_s=0.5)
        yield RayEncoder(start_encoder_app(EncoderSpec("all-MiniLM-L6-v2"), config, name="encoder-merging"))
    finally:
        serve.delete("encoder-merging")


def test_concurrent_calls_are_merged_and_split_back(merging_encoder):
    assert merging_encoder.describe()["merging"] == {"max_batch_size": 4, "batch_wait_timeout_s": 0.5}
    calls = [(TEXTS[0:4], TextRole.PASSAGE), (TEXTS[4:7], TextRole.QUERY), (TEXTS[7:12], TextRole.PASSAGE)]
    with ThreadPoolExecutor(len(calls)) as pool:
        answers = list(pool.map(lambda call: merging_encoder.encode(*call), calls))
    core = EncoderCore(EncoderSpec("all-MiniLM-L6-v2"))
    for (texts, role), vectors in zip(calls, answers, strict=True):
        np.testing.assert_allclose(vectors, core.encode(texts, role), atol=1e-5)


def test_bad_merging_options_are_refused():
    with pytest.raises(ValueError, match="max_batch_size"):
        start_encoder_app(EncoderSpec("all-MiniLM-L6-v2"), EncoderDeploymentConfig(num_cpus=1, max_batch_size=0))
