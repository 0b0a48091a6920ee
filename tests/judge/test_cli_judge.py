"""The judge commands' exit codes and messages on bad input, and `irforge eval --fill-holes`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irforge.cli.main import main


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-judge-env")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IRFORGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "judge-embedding-cache"))
        patch.setenv("IRFORGE_JUDGE_THRESHOLDS", str(root / "thresholds.json"))
        patch.setenv("IRFORGE_JUDGE_STORE", str(root / "judgements.sqlite3"))
        patch.setenv("IRFORGE_INDEX_DIR", str(tmp_path_factory.getbasetemp() / "judge-bm25-indexes"))
        yield root


@pytest.fixture(scope="module")
def run_file(scifact_subset, env) -> Path:
    out = env / "bm25"
    assert main(["eval", "--dataset", str(scifact_subset), "--out", str(out)]) == 0
    return out / "run.trec"


def holes(dataset, run, out, *extra) -> int:
    return main(["judge-holes", "--dataset", str(dataset), "--run", str(run), "--out", str(out), *extra])


def test_missing_run_file(scifact_subset, env, tmp_path, capsys):
    assert holes(scifact_subset, tmp_path / "nope.trec", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "nope.trec" in err and "not found" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("depth", ["0", "-2"])
def test_bad_depth(scifact_subset, run_file, tmp_path, capsys, depth):
    assert holes(scifact_subset, run_file, tmp_path / "out", "--depth", depth) == 2
    assert "--depth" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_run_with_unknown_queries(scifact_subset, run_file, env, tmp_path, capsys):
    bad = tmp_path / "bad.trec"
    bad.write_text(run_file.read_text() + "no-such-query Q0 4983 1 9.5 x\n")
    assert holes(scifact_subset, bad, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "'no-such-query'" in err and "queries.jsonl" in err and str(bad) in err


def test_run_with_unknown_documents(scifact_subset, run_file, env, tmp_path, capsys):
    query_id = run_file.read_text().split()[0]
    bad = tmp_path / "bad.trec"
    bad.write_text(f"{query_id} Q0 not-a-doc 1 1000.0 x\n" + run_file.read_text())
    assert holes(scifact_subset, bad, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "'not-a-doc'" in err and "corpus.jsonl" in err


def test_run_sharing_no_query_with_the_split(scifact_subset, run_file, tmp_path, capsys):
    # A copy of the subset whose qrels judge one query; the run holds only another (known) query.
    dataset = tmp_path / "dataset"
    (dataset / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        (dataset / name).symlink_to(scifact_subset / name)
    qrels = (scifact_subset / "qrels" / "test.tsv").read_text().splitlines()
    judged_query = qrels[1].split("\t")[0]
    (dataset / "qrels" / "test.tsv").write_text("\n".join([qrels[0]] + [l for l in qrels[1:] if l.startswith(judged_query + "\t")]) + "\n")
    other = next(line.split()[0] for line in run_file.read_text().splitlines() if line.split()[0] != judged_query)
    run = tmp_path / "other.trec"
    run.write_text("".join(line + "\n" for line in run_file.read_text().splitlines() if line.split()[0] == other))
    assert holes(dataset, run, tmp_path / "out") == 2
    assert "no query of the run is in the 'test' qrels" in capsys.readouterr().err


def test_unknown_judge_spec(scifact_subset, run_file, tmp_path, capsys):
    assert holes(scifact_subset, run_file, tmp_path / "out", "--judge", str(tmp_path / "judge.yaml")) == 2
    assert "judge.yaml" in capsys.readouterr().err


def test_eval_fill_holes(scifact_subset, env, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(["eval", "--dataset", str(scifact_subset), "--out", str(out), "--fill-holes", "3"]) == 0
    results = json.loads((out / "results.json").read_text())
    report = results["holes"]
    assert report["depth"] == 3 and report["holes"] == report["judged"] > 0
    assert report["run"] == str(out / "run.trec")  # where the run is, not the staging folder it was judged in
    assert (out / "qrels.judged.tsv").is_file() and results["files"]["judged_qrels"] == "qrels.judged.tsv"
    assert sum(1 for _ in (out / "qrels.judged.tsv").open()) == report["judged"] + 1
    for name, value in results["metrics"].items():
        assert report["metrics_before"][name] == pytest.approx(value, abs=1e-12)
    assert report["metrics_after"]["Judged@3"] == 1.0 and report["metrics_before"]["Judged@3"] < 1.0
    printed = capsys.readouterr().out
    assert "Hole@3" in printed
    assert (f"judged {report['judged']} ({report['from_store']} from the store) · judge calls 0 (embedded judge, on this machine: no paid "
            "call needed) · unparsed 0") in printed


def test_eval_fill_holes_refuses_zero(scifact_subset, env, tmp_path, capsys):
    assert main(["eval", "--dataset", str(scifact_subset), "--out", str(tmp_path / "x"), "--fill-holes", "0"]) == 2
    assert "--fill-holes" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_eval_fill_holes_checks_the_judge_before_evaluating(scifact_subset, env, tmp_path, capsys):
    out = tmp_path / "x"
    assert main(["eval", "--dataset", str(scifact_subset), "--out", str(out), "--fill-holes", "3",
                 "--judge", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err and not out.exists()


def test_a_run_without_holes_judges_nothing(scifact_subset, env, tmp_path):
    # A run that retrieves exactly the judged documents: nothing to judge, nothing written but the report.
    qrels = [line.split("\t") for line in (scifact_subset / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    run = tmp_path / "perfect.trec"
    run.write_text("".join(f"{q} Q0 {d} 1 1.0 perfect\n" for q, d, _ in qrels))
    out = tmp_path / "out"
    assert holes(scifact_subset, run, out) == 0
    report = json.loads((out / "holes.json").read_text())
    assert report["holes"] == report["judged"] == report["judge_calls"] == 0
    assert report["metrics_after"] == report["metrics_before"] and report["metrics_before"]["nDCG@10"] == 1.0
    assert not (out / "qrels.judged.tsv").exists()
