"""Real inputs for the report tests: `irforge eval` BM25 runs on SciFact slices (one with its holes
filled by an LLM judge, the scripted chat server on loopback), a comparison.json made by hand in
the shape `irforge compare` writes (docs: /work/notes/comparison_shape.md), and a suite.json in the
shape `irforge bench` writes, with its per-dataset results beside it."""

from __future__ import annotations

import importlib.util
import itertools
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from irforge.cli.main import main

HERE = Path(__file__).resolve().parent
MEASURES = ["nDCG@10", "R@100", "Judged@10"]
COMPARED = ["nDCG@10", "R@100"]
# A label with markup in it: the page must show it, escaped, never run it.
ODD_LABEL = 'bm25 "k1=1.2" <b=0.75> & co'


def _scripted_chat():
    name = "irforge_report_tests_scripted_chat"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE.parent / "judge" / "scripted_chat.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


@dataclass
class Inputs:
    root: Path
    bm25_a: Path          # results folder: k1=0.9, b=0.4 on the SciFact subset
    bm25_b: Path          # k1=1.2, b=0.75, holes of the top 3 judged by the scripted LLM
    comparison: Path      # comparison.json (hand-made, in compare's shape)
    suite: Path           # suite.json (bench's shape) with <label>/results.json beside it
    compared: list[str]   # the comparison's measures
    odd_label: str        # bm25_b's label in the comparison


def evaluate(dataset: Path, out: Path, root: Path, *flags: str) -> dict:
    argv = ["eval", "--dataset", str(dataset), "--retriever", "bm25", "--index-dir", str(root / "indexes"),
            "--out", str(out), *itertools.chain.from_iterable(("-m", m) for m in MEASURES), *flags]
    assert main(argv) == 0, f"irforge {' '.join(argv)} failed"
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="session")
def report_inputs(scifact_subset, scifact_tiny, tmp_path_factory) -> Inputs:
    root = tmp_path_factory.mktemp("report-inputs")
    chat = _scripted_chat().ScriptedChat().start()
    try:
        judge = root / "judge.yaml"
        judge.write_text(f"kind: openai-chat\nurl: {chat.url}\nmodel: scripted\nmax_concurrency: 8\n")
        a = evaluate(scifact_subset, root / "bm25-a", root, "--k1", "0.9", "--b", "0.4")
        b = evaluate(scifact_subset, root / "bm25-b", root, "--k1", "1.2", "--b", "0.75", "--fill-holes", "3",
                     "--judge", str(judge), "--store", str(root / "judgements.sqlite3"))
    finally:
        chat.stop()
    tiny = evaluate(scifact_tiny, root / "bm25-tiny", root)
    comparison = root / "compare" / "comparison.json"
    comparison.parent.mkdir()
    comparison.write_text(json.dumps(handmade_comparison(
        [("bm25", root / "bm25-a/results.json", a), (ODD_LABEL, root / "bm25-b/results.json", b)], COMPARED), indent=2))
    suite = root / "bench" / "suite.json"
    suite.parent.mkdir()
    suite.write_text(json.dumps(handmade_suite(suite.parent, {"scifact-subset": (root / "bm25-a", a),
                                                              "scifact-tiny": (root / "bm25-tiny", tiny)}), indent=2))
    return Inputs(root, root / "bm25-a", root / "bm25-b", comparison, suite, COMPARED, ODD_LABEL)


# ---- comparison.json, by hand, in compare's shape --------------------------------------------------

def holm(p_values: list[float]) -> list[float]:
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    corrected, running = [0.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        corrected[i] = running
    return corrected


def pair_tests(differences: np.ndarray, rng: np.random.Generator) -> dict:
    t = stats.ttest_rel(differences, np.zeros_like(differences))
    t_p = float(t.pvalue) if np.isfinite(t.pvalue) else 1.0      # every query tied: nothing to find
    nonzero = differences[differences != 0]
    w = stats.wilcoxon(nonzero) if len(nonzero) else None
    observed = abs(differences.mean())
    signs = rng.choice([-1.0, 1.0], size=(2000, len(differences)))
    randomization = float(((np.abs((signs * differences).mean(axis=1)) >= observed - 1e-12).sum() + 1) / 2001)
    means = rng.choice(differences, size=(2000, len(differences))).mean(axis=1)
    ci = [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]
    shifted = means - differences.mean()
    bootstrap = float(((np.abs(shifted) >= observed - 1e-12).sum() + 1) / 2001)
    return {"t": {"statistic": float(np.nan_to_num(t.statistic)), "p": t_p},
            "wilcoxon": {"statistic": float(w.statistic) if w else 0.0, "p": float(w.pvalue) if w else 1.0},
            "randomization": {"p": randomization, "permutations": 2000},
            "bootstrap": {"p": bootstrap, "ci": ci, "samples": 2000}}


def handmade_comparison(systems: list[tuple[str, Path, dict]], measures: list[str], alpha: float = 0.05) -> dict:
    letters = "abcdefghij"
    queries = sorted(set.intersection(*(set(r["per_query"]) for _, _, r in systems)))
    per_query = {m: {q: {label: r["per_query"][q][m] for label, _, r in systems} for q in queries} for m in measures}
    means = {m: {label: float(np.mean([per_query[m][q][label] for q in queries])) for label, _, _ in systems} for m in measures}
    rng = np.random.default_rng(0)
    comparisons = []
    for m in measures:
        for (label_a, _, _), (label_b, _, _) in itertools.combinations(systems, 2):
            d = np.array([per_query[m][q][label_b] - per_query[m][q][label_a] for q in queries])
            sd = d.std(ddof=1)
            comparisons.append({"measure": m, "system": label_b, "against": label_a, "n": len(queries),
                                "mean": means[m][label_b], "mean_against": means[m][label_a], "difference": float(d.mean()),
                                "effect_size": float(d.mean() / sd) if sd else 0.0,
                                "wins": int((d > 0).sum()), "ties": int((d == 0).sum()), "losses": int((d < 0).sum()),
                                "tests": pair_tests(d, rng)})
        mine = [c for c in comparisons if c["measure"] == m]
        for test in ("t", "wilcoxon", "randomization", "bootstrap"):
            for c, p in zip(mine, holm([c["tests"][test]["p"] for c in mine])):
                c["tests"][test].update(p_corrected=p, significant=p < alpha)
    letter = {label: letters[n] for n, (label, _, _) in enumerate(systems)}
    table = []
    for label, _, _ in systems:
        values = {}
        for m in measures:
            better = [letter[c["against"] if c["system"] == label else c["system"]] for c in comparisons
                      if c["measure"] == m and c["tests"]["t"]["significant"] and label in (c["system"], c["against"])
                      and (c["difference"] > 0) == (c["system"] == label)]
            values[m] = {"mean": means[m][label], "best": means[m][label] == max(means[m].values()), "better_than": better}
        table.append({"system": label, "letter": letter[label], "values": values})
    return {
        "kind": "comparison", "created_at": "2026-11-26T05:00:00+00:00", "irforge_version": "0.1.0",
        "measures": measures,
        "systems": [{"label": label, "letter": letter[label], "source": str(path), "dataset": r["dataset"], "split": r["split"],
                     "retriever": r["retriever"], "evaluation": r["evaluation"], "data": r["data"],
                     "metrics": {m: means[m][label] for m in measures}, "metrics_reported": r["metrics"],
                     "queries": len(queries), "timings": r.get("timings", {}), "versions": r.get("versions", {}),
                     "holes": r.get("holes"), "judged": {k: v for k, v in r["metrics"].items() if k.startswith("Judged@")}}
                    for label, path, r in systems],
        "baseline": None, "pairs": "all",
        "settings": {"tests": ["t", "wilcoxon", "randomization", "bootstrap"], "significance_test": "t",
                     "correction": "holm", "correction_family": "per measure and test: every pair compared for that measure",
                     "alpha": alpha, "permutations": 2000, "bootstrap_samples": 2000, "confidence": 0.95, "seed": 0},
        "queries": {"compared": len(queries), "left_out": {label: [] for label, _, _ in systems}},
        "table": table,
        "comparisons": comparisons,
        "per_query": per_query,
    }


# ---- suite.json, by hand, in bench's shape ---------------------------------------------------------

def handmade_suite(out: Path, runs: dict[str, tuple[Path, dict]]) -> dict:
    datasets = []
    for label, (folder, results) in runs.items():
        (out / label).mkdir()
        shutil.copy(folder / "results.json", out / label / "results.json")
        datasets.append({"label": label, "dataset": results["dataset"], "path": results["data"]["path"], "split": "test",
                         "results": f"{label}/results.json", "status": "ok", "metrics": results["metrics"],
                         "queries": results["evaluation"]["queries_evaluated"], "timings": results["timings"]})
    # A dataset that failed: no metrics, no results file; the page must say so, not break.
    datasets.append({"label": "nfcorpus-missing", "dataset": "nfcorpus", "path": "/nowhere/nfcorpus", "split": "test",
                     "results": "nfcorpus-missing/results.json", "status": "failed", "error": "no such folder: /nowhere/nfcorpus",
                     "metrics": {}, "queries": 0, "timings": {}})
    ok = [d for d in datasets if d["status"] == "ok"]
    first = next(iter(runs.values()))[1]
    return {"kind": "suite", "name": "scifact-slices", "created_at": "2026-11-26T05:10:00+00:00", "split": "test",
            "measures": MEASURES, "system": first["retriever"], "datasets": datasets,
            "mean": {m: float(np.mean([d["metrics"][m] for d in ok])) for m in MEASURES},
            "versions": first["versions"]}
