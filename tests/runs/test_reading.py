"""runs/reading.py: the one reader of run files. Each layout is checked against another reader of
it (pytrec_eval's parse_run, json, sha256 by hashlib over the bytes, hand counts), and each
refusal names the file and line."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
import pytrec_eval

from irforge.data import DataFormatError
from irforge.runs import read_run_file

TREC = ("q1 Q0 d1 1 2.5 pyserini-bm25\n"
        "q1 Q0 d2 2 -1e-3 pyserini-bm25\n"
        "q1 Q0 d10 3 -1e-3 pyserini-bm25 extra column\n"
        "q2\tQ0\td1\t1\t7\tpyserini-bm25\n")


def write(path: Path, text: str) -> Path:
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def refusal(path: Path, format: str = "auto") -> DataFormatError:
    with pytest.raises(DataFormatError) as caught:
        read_run_file(path, format)
    return caught.value


@pytest.mark.parametrize("name", ["run.trec", "run.trec.gz"])
def test_trec_as_pytrec_eval_reads_it(tmp_path, name):
    path = write(tmp_path / name, TREC)
    given = read_run_file(path)
    with gzip.open(path, "rt") if name.endswith(".gz") else open(path) as handle:
        expected = pytrec_eval.parse_run(" ".join(line.split()[:6]) for line in handle)  # it takes six columns only
    assert given.run == expected
    assert (given.format, given.producer, given.queries, given.entries, given.lines) == ("trec", "pyserini-bm25", 2, 4, 4)
    assert given.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()  # the bytes on disk, compressed ones too


@pytest.mark.parametrize("name", ["run.json", "run.json.gz"])
def test_json_as_json_reads_it(tmp_path, name):
    scores = {"q1": {"d1": 2.5, "d2": 1}, "q2": {"d7": -3.25}}
    path = write(tmp_path / name, json.dumps(scores, indent=1))
    given = read_run_file(path)
    assert (given.format, given.producer, given.entries) == ("json", "", 3)
    assert given.run == scores and all(type(score) is float for docs in given.run.values() for score in docs.values())


def test_tsv_scores(tmp_path):
    path = write(tmp_path / "run.tsv", "q1\td1\t0.5\nq1\td2\t0.75\nq2\td1\t3\n")
    given = read_run_file(path)
    assert given.format == "tsv"
    assert given.run == {"q1": {"d1": 0.5, "d2": 0.75}, "q2": {"d1": 3.0}}


def test_msmarco_ranks_found_and_ranked_first_to_last(tmp_path):
    """Third column 1, 2, 3 per query: MS MARCO's ranks. Read as scores they would put the last
    document first; as 1/rank (Pyserini's converter) rank 1 comes first."""
    path = write(tmp_path / "run.dev.tsv", "1048585\t7187158\t1\n1048585\t7187157\t2\n1048585\t3\t3\n2\t9\t1\n")
    given = read_run_file(path)
    assert given.format == "msmarco"
    assert given.run == {"1048585": {"7187158": 1.0, "7187157": 0.5, "3": 1 / 3}, "2": {"9": 1.0}}
    order = sorted(given.run["1048585"], key=given.run["1048585"].get, reverse=True)
    assert order == ["7187158", "7187157", "3"]


def test_named_layout_overrides_detection(tmp_path):
    path = write(tmp_path / "run.tsv", "q1\td1\t1\nq1\td2\t2\n")
    assert read_run_file(path, "tsv").run == {"q1": {"d1": 1.0, "d2": 2.0}}  # the user said scores
    assert read_run_file(path).format == "msmarco"
    error = refusal(write(tmp_path / "bad.tsv", "q1\td1\t0.5\n"), "msmarco")
    assert str(error) == f"{tmp_path / 'bad.tsv'}:1: rank 0.5 is not a whole number from 1 (MS MARCO layout: qid docno rank)"


def test_bad_column_count_names_file_and_line(tmp_path):
    path = write(tmp_path / "run.trec", TREC + "q3 Q0 d1 1 0.5\n")
    assert str(refusal(path)) == f"{path}:5: expected at least 6 fields (qid Q0 docno rank score tag), got 5"
    path = write(tmp_path / "run.tsv", "q1 d1 0.5\n\nq1 d2 0.4 extra\n")
    assert str(refusal(path)) == f"{path}:3: expected 3 fields (qid docno score), got 4"
    path = write(tmp_path / "odd.txt", "q1 d1 0.5 x\n")
    error = refusal(path)
    assert error.line == 1 and "cannot tell the run's layout from its first line: 4 columns" in str(error)


def test_non_numeric_score(tmp_path):
    path = write(tmp_path / "run.trec", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 high t\n")
    assert str(refusal(path)) == f"{path}:2: score 'high' is not a number"
    path = write(tmp_path / "run.json", '{"q1": {"d1": "0.5"}}')
    assert str(refusal(path)) == f"{path}: score '0.5' for query 'q1', document 'd1' is not a number"


@pytest.mark.parametrize("score", ["nan", "inf", "-inf"])
def test_non_finite_score(tmp_path, score):
    path = write(tmp_path / "run.trec", f"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 {score} t\n")
    assert str(refusal(path)) == f"{path}:2: score {float(score)!r} for query 'q1', document 'd2' is not a finite number"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_json_score(tmp_path, constant):
    path = write(tmp_path / "run.json", '{"q1": {"d1": %s}}' % constant)
    assert "is not a finite number" in str(refusal(path))


def test_duplicate_pair_names_both_lines(tmp_path):
    path = write(tmp_path / "run.trec", "q1 Q0 d1 1 0.5 t\nq2 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n")
    assert str(refusal(path)) == f"{path}:3: document 'd1' appears twice for query 'q1' (first at line 1)"
    path = write(tmp_path / "run.json", '{"q1": {"d1": 0.5, "d1": 0.4}}')
    assert str(refusal(path)) == f"{path}: key 'd1' appears twice in one object"


@pytest.mark.parametrize(("name", "text"), [("run.trec", "\n  \n"), ("run.json", " \n")])
def test_empty_file(tmp_path, name, text):
    path = write(tmp_path / name, text)
    assert str(refusal(path, "auto")) == f"{path}: file is empty"
    assert str(refusal(path, "json" if name.endswith("json") else "trec")) == f"{path}: file is empty"


def test_bad_json_names_line(tmp_path):
    path = write(tmp_path / "run.json", '{"q1": {"d1": 0.5,\n "d2" 0.4}}')
    error = refusal(path)
    assert error.line == 2 and "not valid JSON" in str(error)
    path = write(tmp_path / "list.json", '[["q1", "d1", 0.5]]')
    assert "expected a JSON object" in str(refusal(path, "json"))


def test_missing_file_and_unknown_layout(tmp_path):
    assert str(refusal(tmp_path / "nope.trec")) == f"{tmp_path / 'nope.trec'}: file not found"
    path = write(tmp_path / "run.trec", TREC)
    assert "unknown run format 'csv'" in str(refusal(path, "csv"))


def test_errors_exit_2_from_the_cli():
    from irforge.cli.main import USER_ERRORS

    assert issubclass(DataFormatError, USER_ERRORS)
