"""Nonsense numbers and unusable output paths get `irforge CMD: error: ...` naming the flag, exit 2,
no traceback and no work done (no index built, no judge opened, nothing written)."""

from __future__ import annotations

import subprocess

import pytest


@pytest.fixture(scope="module")
def irforge(irforge_command):
    """The command as a user runs it: its own process, exit status, stdout and stderr (forked from
    the pre-imported irforge, tests/conftest.py)."""
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*irforge_command, *args], capture_output=True, text=True, timeout=120)
    return run


def assert_refused(done: subprocess.CompletedProcess, command: str, message: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"irforge {command}: error: {message}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.fixture(scope="module")
def trec_files(tmp_path_factory):
    """Real SciFact judgements (query 1's) and a small run over them, as TREC files."""
    root = tmp_path_factory.mktemp("trec")
    (root / "qrels").write_text("1 0 31715818 1\n3 0 14717500 1\n")
    (root / "run").write_text("1 Q0 31715818 1 9.5 t\n1 Q0 4983 2 8.0 t\n3 Q0 14717500 1 7.0 t\n")
    return root / "qrels", root / "run"


@pytest.mark.parametrize(("flags", "message"), [
    (["-M", "-5"], "-M must be 0 (every document) or more, got -5"),
    (["-l", "0"], "-l must be at least 1, got 0"),
    (["-l", "-3"], "-l must be at least 1, got -3"),
])
def test_metrics_refuses_nonsense_options(irforge, trec_files, flags, message):
    qrels, run = trec_files
    assert_refused(irforge("metrics", str(qrels), str(run), "-m", "P.1", *flags), "metrics", message)


@pytest.mark.parametrize(("measure", "value"), [("P.0", "0"), ("P.5,0", "0"), ("ndcg_cut.0.5", "0.5"), ("success.1,-2", "-2")])
def test_metrics_refuses_cutoffs_that_abort_trec_eval(irforge, trec_files, measure, value):
    """pytrec_eval takes these and then kills the process with a C assertion (SIGABRT)."""
    qrels, run = trec_files
    assert_refused(irforge("metrics", str(qrels), str(run), "-m", measure), "metrics",
                   f"measure {measure!r}: cutoffs must be numbers of at least 1, got {value!r}")


def test_metrics_still_takes_sensible_options(irforge, trec_files):
    qrels, run = trec_files
    done = irforge("metrics", str(qrels), str(run), "-m", "P.1", "-M", "1", "-l", "1")
    assert done.returncode == 0 and done.stdout.split() == ["P_1", "all", "1.0000"], done.stderr


@pytest.mark.parametrize(("flags", "message"), [
    (["--k1", "1e16"], "--k1 must be a finite number within 0..10, got 1e+16"),
    (["--k1", "inf"], "--k1 must be a finite number within 0..10, got inf"),
    (["--k1", "nan"], "--k1 must be a finite number within 0..10, got nan"),
    (["--k1", "-0.5"], "--k1 must be a finite number within 0..10, got -0.5"),
    (["--b", "inf"], "--b must be a finite number within 0..1, got inf"),
    (["--b", "nan"], "--b must be a finite number within 0..1, got nan"),
    (["--top-k", "-3"], "--top-k must be at least 1, got -3"),
    (["--rrf-k", "-5"], "--rrf-k must be a finite number within 0..1000000, got -5.0"),
    (["--rrf-k", "nan"], "--rrf-k must be a finite number within 0..1000000, got nan"),
    (["--fusion-weights", "nan,1"], "--fusion-weights must be finite numbers >= 0, not all 0; got 'nan,1'"),
    (["--fusion-weights=-1,1"], "--fusion-weights must be finite numbers >= 0, not all 0; got '-1,1'"),
    (["--fusion-weights", "0,0"], "--fusion-weights must be finite numbers >= 0, not all 0; got '0,0'"),
    (["--hnsw-m", "0"], "--hnsw-m must be at least 2, got 0"),
    (["--hnsw-ef-construct", "1"], "--hnsw-ef-construct must be at least 4, got 1"),
    (["--hnsw-ef", "0"], "--hnsw-ef must be at least 1, got 0"),
    (["--max-seq-length", "0"], "--max-seq-length must be at least 1, got 0"),
    (["--rerank-depth", "0"], "--rerank-depth must be at least 1, got 0"),
])
def test_eval_refuses_nonsense_numbers_before_any_work(irforge, beir_dir, tmp_path, flags, message):
    done = irforge("eval", "--dataset", str(beir_dir / "scifact"), "--out", str(tmp_path / "out"),
                   "--index-dir", str(tmp_path / "indexes"), "--vector-dir", str(tmp_path / "vectors"),
                   "--embedding-cache", str(tmp_path / "cache.sqlite3"), *flags)
    assert_refused(done, "eval", message)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no index, vectors, cache or output


def test_eval_out_naming_a_file_is_refused_before_any_work(irforge, beir_dir, tmp_path):
    (tmp_path / "results").write_text("mine\n")
    done = irforge("eval", "--dataset", str(beir_dir / "scifact"), "--out", str(tmp_path / "results"),
                   "--index-dir", str(tmp_path / "indexes"))
    assert_refused(done, "eval", f"--out {tmp_path / 'results'}: exists and is not a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"] and (tmp_path / "results").read_text() == "mine\n"


def test_judge_holes_out_naming_a_file_is_refused_before_judging(irforge, beir_dir, trec_files, tmp_path):
    _, run = trec_files
    (tmp_path / "holes").write_text("mine\n")
    done = irforge("judge-holes", "--dataset", str(beir_dir / "scifact"), "--run", str(run), "--depth", "1",
                   "--out", str(tmp_path / "holes"), "--store", str(tmp_path / "store.sqlite3"))
    assert_refused(done, "judge-holes", f"--out {tmp_path / 'holes'}: exists and is not a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["holes"]  # the judgement store was never opened


@pytest.mark.parametrize(("flags", "message"), [
    (["--k1", "inf"], "job spec field 'pipeline.bm25.k1': --k1 must be a finite number within 0..10, got inf"),
    (["--rrf-k", "nan"], "job spec field 'pipeline.fusion.rrf_k': --rrf-k must be a finite number within 0..1000000, got nan"),
    (["--hnsw-ef", "0"], "job spec field 'pipeline.vectors.hnsw_ef': --hnsw-ef must be at least 1, got 0"),
])
def test_submit_refuses_the_same_numbers_before_reaching_a_server(irforge, beir_dir, unused_port, flags, message):
    done = irforge("submit", "--server", f"127.0.0.1:{unused_port}", "--dataset", str(beir_dir / "scifact"), *flags)
    assert_refused(done, "submit", message)
