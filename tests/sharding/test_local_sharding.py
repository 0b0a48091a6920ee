"""Sharded encoding on one machine, end to end: real `irforge shard-worker` processes encode 61
SciFact documents (one empty) in 3 shards with all-MiniLM-L6-v2, merge into the embedding cache;
then the dense indexing step encodes nothing, every vector equals in-process encoding, and
killed, retried, missing and foreign shards are handled without duplicates or gaps.

The model is capped at 32 tokens so each worker encodes in about a second; what is tested
(which documents land where, under which keys) does not depend on length.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from irforge.common.progress import no_progress
from irforge.corpus.core import CorpusService
from irforge.corpus.lexical import make_backend
from irforge.corpus.vectors import make_vector_backend
from irforge.data import BeirDataset
from irforge.models.cache import EmbeddingCache, text_hash
from irforge.models.cached_encoding import encode_with_cache
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole
from irforge.pipeline.retrievers.base import CorpusTracker
from irforge.pipeline.retrievers.dense import DenseRetriever
from irforge.sharding import (
    ShardFailed,
    ShardingCancelled,
    ShardOutputError,
    check_shard_outputs,
    encode_corpus_in_shards,
    make_shard_runner,
    merge_shards,
    plan_shards,
)
from irforge.sharding.corpus_facts import corpus_facts
from irforge.sharding.job import ShardJob
from irforge.sharding.output import data_path, manifest_path, open_records
from irforge.sharding.worker import encode_shard, expected_manifest

SPEC = EncoderSpec("all-MiniLM-L6-v2", max_seq_length=32)
SHARDS = 3


@pytest.fixture(scope="module")
def model() -> Iterator[EncoderCore]:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the workers run beside this process on the same cores
    try:
        yield EncoderCore(SPEC)
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def sharded(small_corpus: Path, tmp_path_factory):
    """One real sharded run: 3 local worker processes, all at once."""
    root = tmp_path_factory.mktemp("sharded")
    report = encode_corpus_in_shards(small_corpus, SPEC, root / "cache.sqlite3", SHARDS,
                                     make_shard_runner("local", max_parallel=SHARDS), root / "work")
    return report, root / "work", root / "cache.sqlite3"


def texts_of(corpus: Path) -> list[str]:
    return [document.full_text for document in BeirDataset.open(corpus).corpus()]


def test_every_document_is_encoded_exactly_once(sharded, small_corpus):
    report, work, cache_path = sharded
    assert (report.total_documents, report.shard_count, report.shards_run) == (61, 3, [0, 1, 2])
    assert (report.vectors_merged, report.empty_documents) == (60, 1)
    assert report.attempts == {0: 1, 1: 1, 2: 1} and report.runner["runner"] == "local"
    # The shard outputs, in shard order, hold exactly the corpus's documents in corpus order.
    rows = np.concatenate([np.load(data_path(work, s)) for s in plan_shards(61, SHARDS)])
    assert [row.tobytes() for row in rows["text_hash"]] == [text_hash(t) for t in texts_of(small_corpus)]
    assert rows["encoded"].tolist() == [True] * 60 + [False]
    with EmbeddingCache(cache_path) as cache:
        assert cache.count() == cache.count(report.encoder_key, TextRole.PASSAGE) == 60


def test_vectors_equal_in_process_encoding(sharded, small_corpus, model):
    report, _, cache_path = sharded
    assert report.encoder_key == model.identity_key
    texts = [t for t in texts_of(small_corpus) if t]
    expected = model.encode(texts, TextRole.PASSAGE)
    with EmbeddingCache(cache_path) as cache:
        stored = cache.get_many(model.identity_key, TextRole.PASSAGE, [text_hash(t) for t in texts])
    np.testing.assert_allclose(np.stack([stored[text_hash(t)] for t in texts]), expected, atol=1e-5)


def test_dense_indexing_afterwards_encodes_nothing(sharded, small_corpus, model, tmp_path):
    report, _, cache_path = sharded
    dataset = BeirDataset.open(small_corpus)
    with EmbeddingCache(cache_path) as cache:
        stream = encode_with_cache(model, cache, TextRole.PASSAGE, ((str(i), t) for i, t in enumerate(texts_of(small_corpus)) if t))
        assert sum(len(ids) for ids, _ in stream) == 60 and stream.stats.encoded == 0
        corpus = CorpusService(make_backend("embedded", index_dir=tmp_path / "index"),
                               make_vector_backend("embedded", vector_dir=tmp_path / "vectors"))
        try:
            dense = DenseRetriever(corpus, model, cache, no_progress)
            tracker = CorpusTracker(judged=set())
            dense.prepare(dataset, report.corpus_fingerprint, tracker)
            counts = dense.counts()
        finally:
            corpus.close()
    assert (counts["documents_encoded"], counts["documents_reused_from_cache"]) == (0, 60)
    assert tracker.failed == 1  # the empty document: skipped there too


def test_a_second_run_reuses_every_shard(sharded, small_corpus, model):
    _, work, cache_path = sharded
    again = encode_corpus_in_shards(small_corpus, SPEC, cache_path, SHARDS, make_shard_runner("local"), work)
    assert (again.shards_run, again.shards_reused, again.vectors_merged) == ([], [0, 1, 2], 60)
    cached = encode_corpus_in_shards(small_corpus, SPEC, cache_path, SHARDS, make_shard_runner("local"), work / "unused",
                                     encoder_key=model.identity_key)
    assert cached.all_cached and cached.shards_run == [] and not (work / "unused").exists()
    with EmbeddingCache(cache_path) as cache:
        assert cache.count() == 60


def copy_outputs(work: Path, target: Path) -> Path:
    shutil.copytree(work, target, ignore=shutil.ignore_patterns("logs"))
    return target


def test_a_retried_shard_is_skipped_or_replaced_never_duplicated(sharded, small_corpus, model, tmp_path):
    _, work, _ = sharded
    work = copy_outputs(work, tmp_path / "work")
    facts = corpus_facts(small_corpus)
    shard = plan_shards(facts.total_documents, SHARDS)[1]
    before = manifest_path(work, shard).read_text()
    assert encode_shard(small_corpus, shard, facts, SPEC, model, work).skipped        # a pod restarted after success
    assert manifest_path(work, shard).read_text() == before
    redone = encode_shard(small_corpus, shard, facts, SPEC, model, work, force=True)  # rerun by hand: replaced
    assert not redone.skipped and redone.documents_encoded == shard.size
    with EmbeddingCache(tmp_path / "cache.sqlite3") as cache:
        merged = merge_shards(work, plan_shards(61, SHARDS), expected_manifest(facts, SPEC), cache)
        assert (merged.vectors_merged, cache.count()) == (60, 60)


def test_a_worker_killed_mid_shard_leaves_it_incomplete_and_a_rerun_fills_only_it(sharded, small_corpus, model, tmp_path):
    _, work, _ = sharded
    work = copy_outputs(work, tmp_path / "work")
    facts = corpus_facts(small_corpus)
    shards = plan_shards(facts.total_documents, SHARDS)
    job = ShardJob(small_corpus, work, facts, tuple(shards), SPEC)
    # One document per encoder call (batch size 1) keeps the worker inside its shard long enough to kill.
    arguments = [a for a in job.worker_arguments(1) if not a.startswith("--encode-batch-size=")]
    command = [sys.executable, "-m", "irforge.cli.main", *arguments, "--force", "--encode-batch-size=1"]
    worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(work.glob(".shard-1-of-3.npy.*.tmp")) and worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        worker.send_signal(signal.SIGKILL)
    finally:
        worker.wait()
    assert worker.returncode == -signal.SIGKILL, "the worker finished before it could be killed"
    assert not manifest_path(work, shards[1]).exists()
    with pytest.raises(ShardOutputError, match=r"shard 1 of 3 \(documents 21-40\): no output"):
        check_shard_outputs(work, shards, expected_manifest(facts, SPEC))
    # The coordinator asks its runner for shard 1 only. (A runner whose "python" is /bin/false
    # fails every shard it starts at once, so the failures name exactly the shards it was given.)
    with pytest.raises(ShardFailed) as raised:
        encode_corpus_in_shards(small_corpus, SPEC, tmp_path / "cache.sqlite3", SHARDS,
                                make_shard_runner("local", python="/bin/false", retries=0), work)
    assert set(raised.value.failures) == {1}
    # The rerun (here in-process, the same code a worker runs) completes it; the merge takes all three.
    assert not encode_shard(small_corpus, shards[1], facts, SPEC, model, work).skipped
    report = encode_corpus_in_shards(small_corpus, SPEC, tmp_path / "cache.sqlite3", SHARDS, make_shard_runner("local"), work)
    assert (report.shards_run, report.shards_reused, report.vectors_merged) == ([], [0, 1, 2], 60)
    assert not list(work.glob(".*.tmp"))  # the killed writer's temporary is cleaned up
    with EmbeddingCache(tmp_path / "cache.sqlite3") as cache:
        assert cache.count() == 60


def test_missing_or_foreign_shards_are_named_and_nothing_is_merged(sharded, small_corpus, tmp_path):
    _, work, _ = sharded
    work = copy_outputs(work, tmp_path / "work")
    facts = corpus_facts(small_corpus)
    shards = plan_shards(facts.total_documents, SHARDS)
    expected = expected_manifest(facts, SPEC)
    manifest_path(work, shards[2]).unlink()
    # Shard 0 encoded by another model (a different identity key and dimension).
    foreign = json.loads(manifest_path(work, shards[0]).read_text())
    manifest_path(work, shards[0]).write_text(json.dumps({**foreign, "encoder_key": "another-model", "dimension": 768}))
    with EmbeddingCache(tmp_path / "cache.sqlite3") as cache:
        with pytest.raises(ShardOutputError) as raised:
            merge_shards(work, shards, expected, cache)
        assert cache.count() == 0
    message = str(raised.value)
    assert "shard 2 of 3 (documents 41-60): no output" in message
    assert "shard 0 of 3 (documents 0-20): encoders disagree" in message
    # Bytes changed after the manifest was written (a bad disk, a stray writer).
    with open(data_path(work, shards[1]), "r+b") as handle:
        handle.seek(-4, 2)
        handle.write(b"\0\0\0\0")
    with pytest.raises(ShardOutputError, match=r"shard 1 of 3 .*does not match the manifest's sha256"):
        check_shard_outputs(work, shards, expected)
    # Another corpus: the plan's fingerprint differs.
    with pytest.raises(ShardOutputError, match="manifest dataset_fingerprint"):
        check_shard_outputs(work, shards, {**expected, "dataset_fingerprint": "0" * 64})


def test_failing_workers_are_retried_then_reported_with_their_error(small_corpus, tmp_path):
    facts = corpus_facts(small_corpus)
    stale = facts.__class__(facts.dataset, facts.corpus_file, "f" * 64, facts.total_documents)  # the corpus changed since
    job = ShardJob(small_corpus, tmp_path / "work", stale, tuple(plan_shards(facts.total_documents, 2)), SPEC)
    runner = make_shard_runner("local", max_parallel=2, retries=1)
    with pytest.raises(ShardFailed) as raised:
        runner.run(job, list(job.shards))
    assert set(raised.value.failures) == {0, 1}
    assert "2 of 2 shard(s) failed" in str(raised.value)
    for index in (0, 1):
        failure = raised.value.failures[index]
        assert failure.startswith("exit status 2 after 2 attempt(s)")
        assert "the dataset changed since the shards were planned" in failure
        assert (tmp_path / "work" / "logs" / f"shard-{index}-of-2.attempt-2.log").is_file()


def test_cancel_stops_the_workers(small_corpus, tmp_path):
    facts = corpus_facts(small_corpus)
    job = ShardJob(small_corpus, tmp_path / "work", facts, tuple(plan_shards(facts.total_documents, 2)), SPEC)
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(ShardingCancelled, match="cancelled"):
        make_shard_runner("local", max_parallel=2).run(job, list(job.shards), cancel=cancel)
    assert time.monotonic() - started < 5
    assert not list((tmp_path / "work").glob("shard-*.json"))


def test_an_empty_shard_commits_an_empty_output(small_corpus, model, tmp_path):
    # More shards than documents: the surplus shards are empty, and still complete.
    facts = corpus_facts(small_corpus)
    shard = plan_shards(facts.total_documents, 70)[65]
    result = encode_shard(small_corpus, shard, facts, SPEC, model, tmp_path)
    assert (shard.size, result.documents_encoded, result.skipped) == (0, 0, False)
    assert open_records(tmp_path, shard, model.dimension).shape == (0,)
    assert encode_shard(small_corpus, shard, facts, SPEC, model, tmp_path).skipped
