"""`irforge shard-worker` refuses bad invocations with exit status 2 (a Kubernetes pod failure
policy then fails the index at once instead of retrying) before loading any model."""

from __future__ import annotations

import pytest
from irforge.cli.main import main


@pytest.fixture()
def worker_args(small_corpus, tmp_path) -> list[str]:
    return ["shard-worker", "--dataset", str(small_corpus), "--shard-count", "3", "--out", str(tmp_path / "work"),
            "--model", "all-MiniLM-L6-v2"]


def test_the_index_comes_from_the_flag_or_job_completion_index(worker_args, monkeypatch, capsys):
    monkeypatch.delenv("JOB_COMPLETION_INDEX", raising=False)
    assert main(worker_args) == 2
    assert "--shard-index is required (or $JOB_COMPLETION_INDEX" in capsys.readouterr().err
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "3")
    assert main(worker_args) == 2
    assert r"shard index must be in [0, 3), got 3" in capsys.readouterr().err
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "one")
    assert main(worker_args) == 2
    assert "$JOB_COMPLETION_INDEX must be an integer, got 'one'" in capsys.readouterr().err


def test_a_changed_corpus_is_refused(worker_args, capsys):
    assert main([*worker_args, "--shard-index", "0", "--fingerprint", "0" * 64]) == 2
    assert "the dataset changed since the shards were planned" in capsys.readouterr().err
    assert main([*worker_args, "--shard-index", "0", "--total-documents", "60"]) == 2
    assert "has 61 documents, the plan counted 60" in capsys.readouterr().err


def test_a_missing_dataset_is_named(tmp_path, capsys):
    assert main(["shard-worker", "--dataset", str(tmp_path / "nowhere"), "--shard-count", "2", "--shard-index", "0",
                 "--out", str(tmp_path / "work")]) == 2
    assert "nowhere" in capsys.readouterr().err


@pytest.mark.parametrize("flags,message", [(["--shards", "0"], "shard_count must be a positive integer, got 0"),
                                           (["--shards", "2", "--parallel", "0"], "max_parallel must be a positive integer")])
def test_encode_shards_refuses_bad_counts(small_corpus, tmp_path, capsys, flags, message):
    assert main(["encode-shards", "--dataset", str(small_corpus), "--work-dir", str(tmp_path / "work"),
                 "--embedding-cache", str(tmp_path / "cache.sqlite3"), *flags]) == 2
    assert message in capsys.readouterr().err
