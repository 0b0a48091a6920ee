"""Real inputs for the report tests: `irforge eval` BM25 runs on SciFact slices (one with its holes
filled by an LLM judge, the scripted chat server on loopback), the comparison.json `irforge compare`
writes for two of them, and a suite.json in the shape `irforge bench` writes, with its per-dataset
results beside it and a dataset that failed (which bench itself never writes)."""

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

from irforge.bench.record import DATASET_STATUSES, EVALUATED
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
        evaluate(scifact_subset, root / "bm25-b", root, "--k1", "1.2", "--b", "0.75", "--fill-holes", "3",
                     "--judge", str(judge), "--store", str(root / "judgements.sqlite3"))
    finally:
        chat.stop()
    tiny = evaluate(scifact_tiny, root / "bm25-tiny", root)
    comparison = root / "compare" / "comparison.json"
    assert main(["compare", str(root / "bm25-a"), str(root / "bm25-b"), "--label", "bm25", "--label", ODD_LABEL,
                 *itertools.chain.from_iterable(("-m", m) for m in COMPARED), "--out", str(comparison.parent)]) == 0
    suite = root / "bench" / "suite.json"
    suite.parent.mkdir()
    suite.write_text(json.dumps(handmade_suite(suite.parent, {"scifact-subset": (root / "bm25-a", a),
                                                              "scifact-tiny": (root / "bm25-tiny", tiny)}), indent=2))
    return Inputs(root, root / "bm25-a", root / "bm25-b", comparison, suite, COMPARED, ODD_LABEL)


# ---- suite.json, by hand, in bench's shape ---------------------------------------------------------

def handmade_suite(out: Path, runs: dict[str, tuple[Path, dict]]) -> dict:
    datasets = []
    for label, (folder, results) in runs.items():
        (out / label).mkdir()
        shutil.copy(folder / "results.json", out / label / "results.json")
        datasets.append({"label": label, "dataset": results["dataset"], "path": results["data"]["path"], "split": "test",
                         "results": f"{label}/results.json", "status": EVALUATED, "metrics": results["metrics"],
                         "queries": results["evaluation"]["queries_evaluated"], "timings": results["timings"]})
    # A dataset that failed: no metrics, no results file; the page must say so, not break.
    datasets.append({"label": "nfcorpus-missing", "dataset": "nfcorpus", "path": "/nowhere/nfcorpus", "split": "test",
                     "results": "nfcorpus-missing/results.json", "status": "failed", "error": "no such folder: /nowhere/nfcorpus",
                     "metrics": {}, "queries": 0, "timings": {}})
    ok = [d for d in datasets if d["status"] in DATASET_STATUSES]
    first = next(iter(runs.values()))[1]
    return {"kind": "suite", "name": "scifact-slices", "created_at": "2026-11-26T05:10:00+00:00", "split": "test",
            "measures": MEASURES, "system": first["retriever"], "datasets": datasets,
            "mean": {m: float(np.mean([d["metrics"][m] for d in ok])) for m in MEASURES},
            "versions": first["versions"]}
