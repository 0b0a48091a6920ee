"""The Python API (irforge.evaluate, metrics, judge_holes) is the CLI's own path: the same files,
the same numbers, the same errors, on real SciFact data."""

from __future__ import annotations

import json

import pytest

import irforge
from irforge.cli.main import main


def test_evaluate_returns_what_irforge_eval_writes(scifact_subset, tmp_path, capsys):
    index = str(tmp_path / "indexes")
    assert main(["eval", "--dataset", str(scifact_subset), "--out", str(tmp_path / "cli"), "--index-dir", index,
                 "--k1", "1.2", "-m", "nDCG@10", "-m", "P@5"]) == 0
    results = irforge.evaluate(scifact_subset, out=tmp_path / "api", index_dir=index, k1=1.2, measures=["nDCG@10", "P@5"])
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert results == json.loads((tmp_path / "api" / "results.json").read_text())      # the object is the file
    assert list(results.metrics) == ["nDCG@10", "P@5"] and results.metrics == cli["metrics"]
    assert results.per_query == cli["per_query"] and results["retriever"] == cli["retriever"]
    assert results.run_path.read_bytes() == (tmp_path / "cli" / "run.trec").read_bytes()
    assert "nDCG@10" in results.table() and "api" not in capsys.readouterr().out   # quiet unless asked
    assert irforge.Results.load(tmp_path / "api") == results


def test_metrics_equals_irforge_metrics(conformance_dir, capsys):
    qrels, run = conformance_dir / "qrels.test", conformance_dir / "results.test"
    assert main(["metrics", str(qrels), str(run), "-m", "map", "-m", "P.5", "-c"]) == 0
    printed = {line.split("\t")[0].strip(): float(line.split("\t")[2]) for line in capsys.readouterr().out.splitlines()
               if line.split("\t")[1] == "all" and not line.startswith("runid")}
    scores = irforge.metrics(qrels, run, measures=["map", "P.5"], complete=True)
    assert {name: round(value, 4) for name, value in scores.metrics.items()} == printed
    assert scores["options"]["complete"] is True and scores["qrels_layout"].startswith("TREC")


def test_judge_holes_writes_and_returns_the_report(scifact_tiny, tmp_path):
    results = irforge.evaluate(scifact_tiny, out=tmp_path / "run", index_dir=str(tmp_path / "ix"))
    report = irforge.judge_holes(scifact_tiny, results.run_path, depth=3, out=tmp_path / "holes",
                                 store=str(tmp_path / "judgements.sqlite3"))
    written = json.loads((tmp_path / "holes" / "holes.json").read_text())
    assert report["holes"] == written["holes"] == report["judged"] > 0
    assert report["metrics_after"]["Judged@3"] == 1.0


def test_options_are_checked_like_flags(scifact_tiny, tmp_path):
    with pytest.raises(TypeError, match="has no option 'retriver'; did you mean 'retriever'"):
        irforge.evaluate(scifact_tiny, retriver="dense")
    with pytest.raises(ValueError, match="--k1 must be a finite number"):
        irforge.evaluate(scifact_tiny, out=tmp_path / "x", k1=float("inf"))
    with pytest.raises(ValueError, match="invalid choice: 'dens'"):
        irforge.evaluate(scifact_tiny, out=tmp_path / "x", retriever="dens")
    assert not (tmp_path / "x").exists()          # nothing written before the options were found bad


def test_metrics_keywords_are_the_flags(conformance_dir, capsys):
    """irforge.metrics calls the use case `irforge metrics` calls: -q's per-query lines and the
    'all' lines are its values, for -m, -c, -M, -l given as keywords; bad values are the flags' errors."""
    from irforge.evaluator.measures import AGGREGATE_ONLY

    qrels, run = conformance_dir / "qrels.test", conformance_dir / "results.test"
    assert main(["metrics", str(qrels), str(run), "-q", "-m", "map", "-m", "P.5,10", "-m", "ndcg_cut.10", "-m", "num_rel_ret",
                 "-c", "-M", "20", "-l", "2"]) == 0
    printed = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    scores = irforge.metrics(qrels, run, measures=["map", "P.5,10", "ndcg_cut.10", "num_rel_ret"], complete=True,
                             max_docs=20, relevance_level=2)
    expected = [(name, query, values[name]) for query, values in sorted(scores.per_query.items())
                for name in scores["measures"] if name not in AGGREGATE_ONLY]
    expected += [(name, "all", value) for name, value in scores.metrics.items()]
    assert [(name.strip(), query) for name, query, _ in printed] == [(name, query) for name, query, _ in expected]
    for (_, _, text), (_, _, value) in zip(printed, expected):
        assert float(text) == pytest.approx(value, abs=5e-5)
    assert scores["options"]["max_docs_per_query"] == 20 and scores["options"]["relevance_level"] == 2
    with pytest.raises(ValueError, match="-M must be 0"):
        irforge.metrics(qrels, run, max_docs=-1)
    with pytest.raises(ValueError, match="-l must be at least 1"):
        irforge.metrics(qrels, run, relevance_level=0)
    with pytest.raises(TypeError, match="measure"):
        irforge.metrics(qrels, run, measure=["map"])


def test_importing_irforge_stays_light():
    """`import irforge` loads no numpy, torch or grpc until a function is called (notebooks, CLIs that only print)."""
    import subprocess
    import sys

    code = "import sys, irforge; print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'torch', 'grpc', 'scipy'}))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
