"""`irforge bench` on two real datasets (a SciFact and an NFCorpus slice) with BM25: the suite table
holds exactly what `irforge eval` gives each dataset, the Mean row is their mean, a second run
reuses both datasets without indexing or evaluating, a changed option redoes them saying why, an
interrupted bench resumes with the next dataset, and bad suite files are refused by file and field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from irforge.cli.main import main
from irforge.pipeline.retrievers.bm25 import Bm25Retriever

from .conftest import LABELS, bench


def copy_of(first_run, tmp_path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(first_run["out"], out)
    return out


def suite_json(out: Path) -> dict:
    return json.loads((out / "suite.json").read_text())


def test_the_suite_table_holds_what_irforge_eval_gives_each_dataset(first_run, workspace, tmp_path):
    record = suite_json(first_run["out"])
    assert [d["label"] for d in record["datasets"]] == LABELS
    assert [d["status"] for d in record["datasets"]] == ["evaluated", "evaluated"]
    for entry, dataset in zip(record["datasets"], workspace["datasets"]):
        out = tmp_path / entry["label"]
        assert main(["eval", "--dataset", str(dataset), "--out", str(out), "--index-dir", str(tmp_path / "eval-index")]) == 0
        expected = json.loads((out / "results.json").read_text())
        assert entry["metrics"] == expected["metrics"]          # exactly: one code path
        mine = json.loads((first_run["out"] / entry["results"]).read_text())
        assert mine["per_query"] == expected["per_query"]
        assert (first_run["out"] / entry["label"] / "run.trec").read_bytes() == (out / "run.trec").read_bytes()
        assert entry["path"] == expected["data"]["path"] == str(dataset.resolve())
        assert entry["queries"] == expected["evaluation"]["queries_evaluated"] > 0
        assert entry["split"] == "test" and set(entry["timings"]) >= {"index_s", "retrieve_s", "evaluate_s"}
    # The two slices differ (the Mean is not one dataset's value twice).
    first, second = (d["metrics"]["nDCG@10"] for d in record["datasets"])
    assert first != second
    assert record["mean"] == {m: (record["datasets"][0]["metrics"][m] + record["datasets"][1]["metrics"][m]) / 2
                              for m in record["measures"]}
    assert record["kind"] == "suite" and record["name"] == "two-slices" and record["split"] == "test"
    assert record["system"] == json.loads((first_run["out"] / "scifact" / "results.json").read_text())["retriever"]
    assert record["measures"] == list(mine["metrics"]) and record["versions"]["bm25s"]
    assert record["datasets"][1]["dataset"] == str(workspace["datasets"][1])


def test_the_printed_table_and_suite_md_have_a_row_per_dataset_and_a_mean(first_run):
    record = suite_json(first_run["out"])
    rows = {line.split()[0]: line.split()[1:] for line in first_run["stdout"].splitlines() if line.split()
            and line.split()[0] in (*LABELS, "Mean")}
    assert list(rows) == [*LABELS, "Mean"]
    assert rows["Mean"][0] == f"{record['mean']['nDCG@10']:.4f}"
    assert rows["nfcorpus"][0] == f"{record['datasets'][1]['metrics']['nDCG@10']:.4f}"
    markdown = (first_run["out"] / "suite.md").read_text()
    assert "| dataset | nDCG@10 |" in markdown and f"| **Mean** | **{record['mean']['nDCG@10']:.4f}** |" in markdown
    assert "[1/2] scifact" in first_run["stderr"] and "[2/2] nfcorpus" in first_run["stderr"]


def test_a_second_run_reuses_both_datasets_without_indexing_or_evaluating(first_run, workspace, tmp_path, monkeypatch, capsys):
    out = copy_of(first_run, tmp_path)
    before = {label: (out / label / "results.json").read_bytes() for label in LABELS}
    prepared = []
    real_prepare = Bm25Retriever.prepare

    def noting_prepare(self, *args):
        real_prepare(self, *args)
        prepared.append(self.counts())

    def no_evaluation(*args):
        raise AssertionError("a reused dataset was evaluated again")

    monkeypatch.setattr(Bm25Retriever, "prepare", noting_prepare)
    monkeypatch.setattr("irforge.app.bench.evaluate", no_evaluation)
    assert main(bench(workspace, out, "--format", "csv")) == 0
    printed = capsys.readouterr()
    record = suite_json(out)
    assert [d["status"] for d in record["datasets"]] == ["reused", "reused"]
    assert printed.err.count("reused") == 2 and "same system, same data" in printed.err
    assert len(prepared) == 2 and all(c["ingest_skipped"] and c["documents_ingested"] == 0 for c in prepared)
    assert {label: (out / label / "results.json").read_bytes() for label in LABELS} == before
    assert record["mean"] == suite_json(first_run["out"])["mean"]
    assert f"Mean,{record['mean']['nDCG@10']!r}," in printed.out   # --format csv: full precision


@pytest.mark.parametrize(("flags", "reason"), [
    (["--top-k", "100"], "top_k: results.json has 1000, this run asks for 100"),
    (["--k1", "1.2"], "retriever: k1: results.json has 0.9, this run 1.2"),
    (["-m", "nDCG@10"], "measures: results.json has"),
])
def test_a_changed_option_redoes_each_dataset_and_says_why(first_run, workspace, tmp_path, capsys, flags, reason):
    out = copy_of(first_run, tmp_path)
    assert main(bench(workspace, out, *flags)) == 0
    err = capsys.readouterr().err
    assert err.count(f"redoing: {reason}") == 2, err
    record = suite_json(out)
    assert [d["status"] for d in record["datasets"]] == ["evaluated", "evaluated"]
    assert json.loads((out / "scifact" / "results.json").read_text())["retriever"]["top_k"] == (100 if "--top-k" in flags else 1000)


def test_a_changed_corpus_redoes_only_that_dataset(workspace, tmp_path, capsys, nfcorpus_subset):
    changed = tmp_path / "nfcorpus"
    shutil.copytree(nfcorpus_subset, changed)
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"datasets: [{workspace['datasets'][0]}, {{path: nfcorpus}}]\n")
    out = tmp_path / "out"
    argv = ["bench", "--suite", str(suite), "--out", str(out), "--index-dir", str(workspace["index"])]
    assert main(argv) == 0
    with open(changed / "corpus.jsonl", "a") as corpus:
        corpus.write(json.dumps({"_id": "extra-doc", "title": "", "text": "vitamin d and breast cancer"}) + "\n")
    capsys.readouterr()
    assert main(argv) == 0
    assert "nfcorpus: redoing: corpus fingerprint" in capsys.readouterr().err
    assert [d["status"] for d in suite_json(out)["datasets"]] == ["reused", "evaluated"]


def test_an_interrupted_bench_resumes_with_the_next_dataset(workspace, tmp_path, monkeypatch, capsys):
    import irforge.app.bench as bench_use_case

    out = tmp_path / "out"
    real_evaluate, calls = bench_use_case.evaluate, []

    def killed_at_the_second(config, folder):
        calls.append(folder.name)
        if len(calls) == 2:
            raise KeyboardInterrupt   # Ctrl-C (or a kill) between the first dataset's set and the second's
        return real_evaluate(config, folder)

    monkeypatch.setattr("irforge.app.bench.evaluate", killed_at_the_second)
    assert main(bench(workspace, out)) == 130
    assert (out / "scifact" / "results.json").exists() and not (out / "nfcorpus").exists()
    assert not (out / "suite.json").exists()     # no table of a suite that did not finish
    monkeypatch.setattr("irforge.app.bench.evaluate", real_evaluate)
    capsys.readouterr()
    assert main(bench(workspace, out)) == 0
    assert [d["status"] for d in suite_json(out)["datasets"]] == ["reused", "evaluated"]
    assert "[1/2] scifact: reused" in capsys.readouterr().err


def test_a_failing_dataset_stops_the_bench_naming_it_and_keeps_the_finished_ones(first_run, workspace, tmp_path, capsys):
    out = copy_of(first_run, tmp_path)
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"datasets:\n  - {{path: {workspace['datasets'][0]}, label: scifact}}\n"
                     f"  - {{path: {workspace['datasets'][1]}, split: dev}}\n")
    assert main(["bench", "--suite", str(suite), "--out", str(out), "--index-dir", str(workspace["index"])]) == 2
    err = capsys.readouterr().err
    assert "error: dataset 'nfcorpus' (2/2" in err and "dev" in err and "kept in OUT" in err
    assert (out / "scifact" / "results.json").exists() and (out / "nfcorpus" / "results.json").exists()


@pytest.mark.parametrize(("text", "field"), [
    ("- a\n- b\n", "expected a mapping"),
    ("datasets: [a]\nsplits: dev\n", "field 'splits': unknown field"),
    ("name: x\n", "field 'datasets': required"),
    ("datasets: []\n", "field 'datasets': required"),
    ("datasets: [{path: a, name: b}]\n", "field 'datasets[0]': give exactly one of path"),
    ("datasets: [{path: a, lable: x}]\n", "field 'datasets[0].lable': unknown field"),
    ("datasets: [{path: a, split: 3}]\n", "field 'datasets[0].split': must be a non-empty string"),
    ("datasets: [7]\n", "field 'datasets[0]': must be a folder or name"),
    ("measures: [nDCG@ten]\ndatasets: [a]\n", "field 'measures'"),
    ("datasets: [a\n", "is not valid YAML"),
    ("datasets: [{path: a, label: ../up}]\n", "label '../up' cannot name a folder"),
])
def test_bad_suite_files_are_refused_naming_file_and_field(tmp_path, capsys, text, field):
    suite = tmp_path / "bad.yaml"
    suite.write_text(text)
    assert main(["bench", "--suite", str(suite), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"suite file {suite}" in err and field in err, err
    assert not (tmp_path / "out").exists()


def test_duplicate_labels_are_refused(tmp_path, capsys, workspace):
    first, second = tmp_path / "a" / "scifact", tmp_path / "b" / "scifact"
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"datasets: [{first}, {{path: {second}}}]\n")
    assert main(["bench", "--suite", str(suite), "--out", str(tmp_path / "out")]) == 2
    assert "datasets[1]: label 'scifact' is already used by datasets[0]" in capsys.readouterr().err
    assert main(["bench", "--dataset", str(first), "--dataset", str(second), "--out", str(tmp_path / "out")]) == 2
    assert f"--dataset {second}: label 'scifact' is already used by --dataset {first}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_every_dataset_is_checked_before_the_first_runs(workspace, tmp_path, capsys, monkeypatch):
    """Issue 29: a mistyped second folder failed only after the first dataset had been evaluated."""
    ran = []
    monkeypatch.setattr("irforge.app.bench.evaluate", lambda *a, **k: ran.append(a) or pytest.fail("a dataset ran"))
    first = workspace["datasets"][0]
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"datasets:\n  - {{path: {first}, label: scifact}}\n  - {{path: {first}t, label: typo}}\n")
    out = tmp_path / "out"
    assert main(["bench", "--suite", str(suite), "--out", str(out), "--index-dir", str(workspace["index"])]) == 2
    err = capsys.readouterr().err
    assert f"dataset 'typo' (2/2, {first}t)" in err and "nothing was run" in err, err
    assert f"did you mean the folder {first}?" in err
    assert not ran and not out.exists()
