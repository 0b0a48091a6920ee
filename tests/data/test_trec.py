"""TREC run and qrels files: readers naming file and line, the atomic tie-rule writer, round trips."""

from pathlib import Path

import pytest

from irforge.data import DataFormatError, read_trec_qrels, write_trec_run
from irforge.runs import read_run_file


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def error_of(call, path) -> DataFormatError:
    with pytest.raises(DataFormatError) as caught:
        call(path)
    return caught.value


# --- runs ------------------------------------------------------------------------------------

def test_read_run_and_tag(tmp_path):
    path = write(tmp_path / "run.txt",
                 "q1 Q0 d1 1 2.5 bm25\n"
                 "q1 Q0 d2 2 -1e-3 bm25\n"
                 "q2 Q0 d1 1 7 bm25\n")
    trec = read_run_file(path)
    assert trec.run == {"q1": {"d1": 2.5, "d2": -0.001}, "q2": {"d1": 7.0}}
    assert trec.producer == "bm25"


def test_read_run_ignores_extra_columns(tmp_path):
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 0.5 tag junk more junk\nq1\tQ0\td2\t2\t0.25\ttag\textra\n")
    assert read_run_file(path).run == {"q1": {"d1": 0.5, "d2": 0.25}}


def test_read_run_too_few_columns(tmp_path):
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2 0.4\n")
    error = error_of(read_run_file, path)
    assert error.line == 2
    assert "expected at least 6 fields" in str(error) and "got 5" in str(error)


def test_read_run_non_numeric_score(tmp_path):
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2 high tag\n")
    error = error_of(read_run_file, path)
    assert str(error) == f"{path}:2: score 'high' is not a number"


@pytest.mark.parametrize("score", ["nan", "inf", "-inf", "NaN"])
def test_read_run_rejects_non_finite(tmp_path, score):
    path = write(tmp_path / "run.txt", f"q1 Q0 d1 1 {score} tag\n")
    error = error_of(read_run_file, path)
    assert str(error) == f"{path}:1: score {float(score)!r} for query 'q1', document 'd1' is not a finite number"


def test_read_run_duplicate_doc(tmp_path):
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 0.5 t\nq2 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n")
    error = error_of(read_run_file, path)
    assert error.line == 3
    assert "document 'd1' appears twice for query 'q1'" in str(error)


def test_read_run_empty_file(tmp_path):
    path = write(tmp_path / "run.txt", "\n\n")
    assert str(error_of(read_run_file, path)) == f"{path}: file is empty"


# --- qrels -----------------------------------------------------------------------------------

def test_read_qrels(tmp_path):
    path = write(tmp_path / "qrels.txt", "q1 0 d1 1\nq1 0 d2 0\nq2 Q0 d1 2.0\n")
    assert read_trec_qrels(path) == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}


def test_read_qrels_wrong_column_count(tmp_path):
    path = write(tmp_path / "qrels.txt", "q1 0 d1 1\nq1 d2 1\n")
    error = error_of(read_trec_qrels, path)
    assert error.line == 2
    assert "expected 4 fields" in str(error) and "got 3" in str(error)


def test_read_qrels_five_columns_rejected(tmp_path):
    path = write(tmp_path / "qrels.txt", "q1 0 d1 1 extra\n")
    assert error_of(read_trec_qrels, path).line == 1


def test_read_qrels_bad_relevance(tmp_path):
    path = write(tmp_path / "qrels.txt", "q1 0 d1 yes\n")
    assert str(error_of(read_trec_qrels, path)) == f"{path}:1: relevance 'yes' is not a number"
    path = write(tmp_path / "qrels.txt", "q1 0 d1 0.5\n")
    assert str(error_of(read_trec_qrels, path)) == f"{path}:1: relevance '0.5' is not an integer"


def test_read_qrels_conflicting(tmp_path):
    path = write(tmp_path / "qrels.txt", "q1 0 d1 1\nq1 0 d1 1\nq1 0 d1 0\n")
    error = error_of(read_trec_qrels, path)
    assert error.line == 3
    assert "conflicting judgements for query 'q1', document 'd1': 1 (line 1) and 0" in str(error)


# --- writing ---------------------------------------------------------------------------------

def test_write_run_ranks_follow_tie_rule(tmp_path):
    # Equal scores: doc id descending, compared as strings ("d9" > "d10" > "d1").
    path = write_trec_run(tmp_path / "run.txt", {"q1": {"d1": 1.0, "d10": 1.0, "d9": 1.0, "top": 2.0}}, "t")
    assert path.read_text().splitlines() == [
        "q1 Q0 top 1 2.0 t",
        "q1 Q0 d9 2 1.0 t",
        "q1 Q0 d10 3 1.0 t",
        "q1 Q0 d1 4 1.0 t",
    ]


def test_write_run_queries_sorted(tmp_path):
    path = write_trec_run(tmp_path / "run.txt", {"q2": {"a": 1.0}, "q1": {"b": 0.5}}, "t")
    assert [line.split()[0] for line in path.read_text().splitlines()] == ["q1", "q2"]


def test_write_run_is_atomic(tmp_path):
    path = write_trec_run(tmp_path / "run.txt", {"q1": {"a": 1.0}}, "first")
    before = path.read_text()
    # The second query's scores are not a mapping: the write fails part-way through.
    with pytest.raises(AttributeError):
        write_trec_run(path, {"q1": {"a": 1.0}, "q2": None}, "second")
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["run.txt"]


def test_write_run_creates_parent_and_leaves_no_temp(tmp_path):
    path = write_trec_run(tmp_path / "runs" / "a" / "run.txt", {"q1": {"a": 1.0}}, "t")
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.txt"]


@pytest.mark.parametrize("tag", ["", "two words", "tab\there"])
def test_write_run_bad_tag(tmp_path, tag):
    with pytest.raises(ValueError, match="run tag must be one non-empty word"):
        write_trec_run(tmp_path / "run.txt", {"q1": {"a": 1.0}}, tag)
    assert list(tmp_path.iterdir()) == []


def test_round_trip(tmp_path):
    run = {"q1": {"a": 1 / 3, "b": 0.1, "c": 0.1, "d": -2.5e-7}, "q2": {"a": 12345.678901234567}}
    path = write_trec_run(tmp_path / "run.txt", run, "my-run")
    back = read_run_file(path)
    assert back.run == run  # floats survive exactly (repr round-trips)
    assert back.producer == "my-run"


def test_round_trip_numpy_scores(tmp_path):
    import numpy as np

    path = write_trec_run(tmp_path / "run.txt", {"q1": {"a": np.float32(0.5), "b": np.float64(0.25)}}, "t")
    assert read_run_file(path).run == {"q1": {"a": 0.5, "b": 0.25}}
