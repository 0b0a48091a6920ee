"""`irforge compare` end to end on real runs: its p-values against scipy and statsmodels computed
here from the run files (read and scored independently with pytrec_eval), its refusals, its outputs."""

from __future__ import annotations

import csv
import io
import json
import shutil

import numpy as np
import pytest
import pytrec_eval
from scipy import stats as scipy_stats

from irforge.cli.main import main

multitest = pytest.importorskip("statsmodels.stats.multitest")
TREC_NAMES = {"nDCG@10": "ndcg_cut_10", "R@100": "recall_100"}


def independent_per_query(folder, qrels_path, measure: str) -> dict[str, float]:
    """Per-query values computed from run.trec and the qrels file with nothing of irforge:
    identical ids dropped (BEIR), qrels queries missing from the run scored 0 (as eval's -c)."""
    qrels: dict = {}
    for line in qrels_path.read_text().splitlines()[1:]:
        q, d, r = line.split("\t")
        qrels.setdefault(q, {})[d] = int(r)
    run: dict = {}
    for line in (folder / "run.trec").read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        if d != q:
            run.setdefault(q, {})[d] = float(score)
    name = TREC_NAMES[measure]
    values = pytrec_eval.RelevanceEvaluator(qrels, {name.rsplit("_", 1)[0] + "." + name.rsplit("_", 1)[1]}).evaluate(run)
    return {q: values.get(q, {}).get(name, 0.0) for q in qrels}


def run_cli(*argv, capsys=None) -> tuple[int, str, str]:
    code = main([*map(str, argv)])
    captured = capsys.readouterr() if capsys else None
    return code, captured.out if captured else "", captured.err if captured else ""


@pytest.mark.parametrize("correction, method", [("holm", "holm"), ("bh", "fdr_bh"), ("bonferroni", "bonferroni")])
def test_every_pair_p_values_equal_scipy_and_statsmodels(bm25_systems, scifact_subset, tmp_path, capsys, correction, method):
    labels = list(bm25_systems)
    code, _, err = run_cli("compare", *bm25_systems.values(), "-m", "nDCG@10", "-m", "R@100", "--correction", correction,
                           "--out", tmp_path / "cmp", "--format", "json", capsys=capsys)
    assert code == 0, err
    comparison = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert comparison["queries"]["compared"] == 40 and comparison["pairs"] == "all"
    for measure in ("nDCG@10", "R@100"):
        values = {label: independent_per_query(bm25_systems[label], scifact_subset / "qrels" / "test.tsv", measure)
                  for label in labels}
        queries = sorted(values[labels[0]])
        pairs = [(labels[j], labels[i]) for i in range(3) for j in range(i + 1, 3)]
        found = [c for c in comparison["comparisons"] if c["measure"] == measure]
        assert [(c["system"], c["against"]) for c in found] == pairs
        for test, scipy_test in (("t", scipy_stats.ttest_rel), ("wilcoxon", scipy_stats.wilcoxon)):
            raw = []
            for (system, against), c in zip(pairs, found):
                a = np.array([values[system][q] for q in queries])
                b = np.array([values[against][q] for q in queries])
                raw.append(1.0 if np.allclose(a, b) else scipy_test(a, b).pvalue)
                assert c["tests"][test]["p"] == pytest.approx(raw[-1], abs=1e-9)
                assert c["mean"] == pytest.approx(a.mean(), abs=1e-12) and c["difference"] == pytest.approx((a - b).mean(), abs=1e-12)
            corrected = multitest.multipletests(raw, method=method)[1]
            assert [c["tests"][test]["p_corrected"] for c in found] == pytest.approx(list(corrected), abs=1e-9)


def test_baseline_letters_and_every_output_format(bm25_systems, tmp_path, capsys):
    code, out, err = run_cli("compare", *bm25_systems.values(), "--baseline", "bm25-flat", "--alpha", "0.5",
                             "--out", tmp_path / "cmp", capsys=capsys)
    assert code == 0, err
    comparison = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert comparison["pairs"] == "baseline"
    assert {(c["system"], c["against"]) for c in comparison["comparisons"]} == {
        ("bm25-default", "bm25-flat"), ("bm25-lucene", "bm25-flat")}
    letter = {s["label"]: s["letter"] for s in comparison["systems"]}
    marked = 0
    for row in comparison["table"]:
        for measure, cell in row["values"].items():
            for c in comparison["comparisons"]:
                if c["measure"] != measure:
                    continue
                significant = c["tests"]["t"]["significant"]
                if c["system"] == row["system"]:
                    assert (letter[c["against"]] in cell["better_than"]) == (significant and c["difference"] > 0)
                    marked += letter[c["against"]] in cell["better_than"]
    assert marked > 0, "alpha 0.5 should let some difference through; the letters were never exercised"
    names = sorted(p.name for p in (tmp_path / "cmp").iterdir())
    assert names == ["comparison.csv", "comparison.json", "comparison.md", "comparison.tex"]
    latex = (tmp_path / "cmp" / "comparison.tex").read_text()
    assert r"\toprule" in latex and r"\bottomrule" in latex and r"\textbf{" in latex and r"\textsuperscript{" in latex
    rows = list(csv.DictReader(io.StringIO((tmp_path / "cmp" / "comparison.csv").read_text())))
    assert len(rows) == 3 * 2                                   # 3 measures x 2 pairs
    for test in ("t", "wilcoxon", "randomization", "bootstrap"):
        assert all(0 <= float(r[f"{test}_p"]) <= float(r[f"{test}_p_corrected"]) <= 1 for r in rows)
    markdown = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "**" in markdown and "<sup>" in markdown
    assert "bm25-flat" in out and "pairwise" in out


def test_trec_runs_with_qrels_give_the_same_comparison(bm25_systems, scifact_subset, capsys):
    common = ["-m", "nDCG@10", "--test", "t", "--test", "randomization", "--format", "json"]
    code, from_results, _ = run_cli("compare", *bm25_systems.values(), *common, capsys=capsys)
    runs = [folder / "run.trec" for folder in bm25_systems.values()]
    code2, from_runs, err = run_cli("compare", *runs, "--qrels", scifact_subset / "qrels" / "test.tsv",
                                    *[x for label in bm25_systems for x in ("--label", label)], *common, capsys=capsys)
    assert code == code2 == 0, err
    a, b = json.loads(from_results), json.loads(from_runs)
    assert [c["tests"] for c in a["comparisons"]] == [c["tests"] for c in b["comparisons"]]


def test_refuses_results_scored_differently(bm25_systems, scifact_subset, tmp_path, capsys):
    default, lucene = bm25_systems["bm25-default"], bm25_systems["bm25-lucene"]
    other_split = tmp_path / "other-split"
    shutil.copytree(lucene, other_split)
    record = json.loads((other_split / "results.json").read_text())
    record["split"] = "dev"
    (other_split / "results.json").write_text(json.dumps(record))
    code, _, err = run_cli("compare", default, other_split, capsys=capsys)
    assert code == 2 and "differ in the split: test vs dev" in err and "--allow-different split" in err

    # The same run scored against labels with one judgement removed: different qrels.
    lines = (scifact_subset / "qrels" / "test.tsv").read_text().splitlines()
    fewer = tmp_path / "fewer.tsv"
    fewer.write_text("\n".join(lines[:-1]) + "\n")
    code, _, err = run_cli("compare", default / "run.trec", lucene / "run.trec", "--qrels", fewer, capsys=capsys)
    assert code == 0, err                                        # both runs against the same (smaller) labels: fine
    code, _, err = run_cli("compare", default, other_split, "--allow-different", "split", capsys=capsys)
    assert code == 0, err
    relabelled = tmp_path / "relabelled"
    shutil.copytree(lucene, relabelled)
    record = json.loads((relabelled / "results.json").read_text())
    record["data"]["qrels_sha256"] = "0" * 64
    (relabelled / "results.json").write_text(json.dumps(record))
    code, _, err = run_cli("compare", default, relabelled, capsys=capsys)
    assert code == 2 and "differ in the relevance labels (data.qrels_sha256)" in err


@pytest.mark.parametrize("argv, message", [
    (["--baseline", "nope"], "--baseline 'nope' is not one of the systems"),
    (["--label", "x", "--label", "x"], "share the label 'x'"),
    (["--label", "x"], "--label given 1 times for 2 inputs"),
    (["-m", "P@5"], "has no per-query 'P@5'"),
    (["--permutations", "10"], "permutations must be at least 100"),
])
def test_bad_requests_are_refused_with_a_reason(bm25_systems, capsys, argv, message):
    code, _, err = run_cli("compare", bm25_systems["bm25-default"], bm25_systems["bm25-lucene"], *argv, capsys=capsys)
    assert code == 2 and message in err, err


def test_latex_escapes_what_a_label_may_hold(bm25_systems, capsys):
    code, out, err = run_cli("compare", bm25_systems["bm25-default"], bm25_systems["bm25-lucene"], "--label", "bm25_k1=0.9 & b",
                             "--label", "100% lucene", "--format", "latex", "--test", "t", capsys=capsys)
    assert code == 0, err
    assert r"bm25\_k1=0.9 \& b" in out and r"100\% lucene" in out


def test_a_missing_input_is_named(tmp_path, capsys):
    code, _, err = run_cli("compare", tmp_path / "nothing", tmp_path / "nothing2", capsys=capsys)
    assert code == 2 and f"{tmp_path / 'nothing'}: no results.json there" in err


def test_python_api_gives_what_the_command_writes(bm25_systems, tmp_path, capsys):
    import irforge

    comparison = irforge.compare_results(*bm25_systems.values(), baseline="bm25-default", tests=["t", "wilcoxon"],
                                 measures=["nDCG@10"], out=tmp_path / "cmp")
    written = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert [c["tests"] for c in comparison["comparisons"]] == [c["tests"] for c in written["comparisons"]]
    assert comparison["settings"]["tests"] == ["t", "wilcoxon"]
    with pytest.raises(ValueError, match="is not one of the systems"):
        irforge.compare_results(*bm25_systems.values(), baseline="nope")
    agreement = irforge.agreement(a=list(bm25_systems.values()), b=list(bm25_systems.values()), permutations=200)
    assert agreement["spearman_rho"]["value"] == 1.0


def test_python_api_returns_the_json_the_command_prints(bm25_systems, scifact_subset, tmp_path, capsys):
    """irforge.compare_results calls the use case `irforge compare` calls: with the same options,
    the dict is what `--format json` prints (and --out writes), p-values and all, for results
    folders and for TREC runs with --qrels (the time stamp aside)."""
    import irforge

    def same(api: dict, printed: dict) -> None:
        api, printed = json.loads(json.dumps(api)), dict(printed)
        assert api.pop("created_at") and printed.pop("created_at")
        assert api == printed

    argv = ["--baseline", "bm25-default", "--test", "t", "--test", "randomization", "--correction", "bh", "-m", "nDCG@10",
            "-m", "RR@10", "--permutations", "500", "--bootstrap-samples", "300", "--seed", "7", "--format", "json"]
    code, out, err = run_cli("compare", *bm25_systems.values(), *argv, "--out", tmp_path / "cli", capsys=capsys)
    assert code == 0, err
    comparison = irforge.compare_results(*bm25_systems.values(), baseline="bm25-default", tests=["t", "randomization"],
                                         correction="bh", measures=["nDCG@10", "RR@10"], permutations=500,
                                         bootstrap_samples=300, seed=7, out=tmp_path / "api")
    same(comparison, json.loads(out))
    same(comparison, json.loads((tmp_path / "cli" / "comparison.json").read_text()))
    assert (tmp_path / "api" / "comparison.md").read_text() == (tmp_path / "cli" / "comparison.md").read_text()

    qrels = scifact_subset / "qrels" / "test.tsv"
    runs = [folder / "run.trec" for folder in bm25_systems.values()]
    code, out, err = run_cli("compare", *runs, "--qrels", qrels, "--label", "a", "--label", "b", "--label", "c",
                             "--test", "wilcoxon", "--test", "bootstrap", "--bootstrap-samples", "300", "--format", "json",
                             capsys=capsys)
    assert code == 0, err
    same(irforge.compare_results(*runs, qrels=qrels, labels=["a", "b", "c"], tests=["wilcoxon", "bootstrap"],
                                 bootstrap_samples=300), json.loads(out))


def test_python_api_refuses_what_the_command_refuses(bm25_systems, tmp_path):
    import irforge

    systems = list(bm25_systems.values())
    for options, message in (({"labels": ["x"]}, "--label given 1 times for 3 inputs"),
                             ({"permutations": 10}, "permutations must be at least 100"),
                             ({"tests": ["z"]}, "unknown test 'z'"), ({"correction": "nope"}, "unknown correction 'nope'"),
                             ({"allow_different": "colour"}, "--allow-different 'colour'")):
        with pytest.raises(ValueError, match=message):
            irforge.compare_results(*systems, out=tmp_path / "never", **options)
    with pytest.raises(TypeError, match="baselin"):
        irforge.compare_results(*systems, baselin="bm25-default")
    assert not (tmp_path / "never").exists()
