"""Comparing systems across a suite: each input is the OUT folder of `irforge bench` (suite.json
beside one results folder per dataset), one system per folder. Every dataset the suites share is
compared as `irforge compare` compares one dataset (its own tests and corrections: a BEIR table
is read dataset by dataset), and the systems' means over those datasets are given beside it."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from irforge import __version__
from irforge.bench.record import check_suite
from irforge.compare.comparison import CompareSettings, compare_systems
from irforge.compare.systems import ComparisonError, check_comparable, load_results
from irforge.results.reading import read_json_object


def is_suite(path: str | Path) -> bool:
    return (Path(path) / "suite.json").is_file()


def load_suite(path: str | Path) -> dict:
    file = Path(path) / "suite.json"
    record = read_json_object(file)
    if record.get("kind") != "suite" or not isinstance(record.get("datasets"), list):
        raise ComparisonError(f"{file}: not a suite.json of irforge bench")
    check_suite(record, str(file))
    for n, entry in enumerate(record["datasets"]):
        if not (isinstance(entry, dict) and isinstance(entry.get("label"), str) and isinstance(entry.get("results"), str)):
            raise ComparisonError(f"{file}: datasets[{n}]: expected an object with a \"label\" and a \"results\" string")
    return record


def compare_suites(paths: list[str], labels: list[str] | None, settings: CompareSettings, allowed: set[str]) -> dict:
    labels = labels or [Path(p).resolve().name for p in paths]
    suites = {label: (Path(path), load_suite(path)) for label, path in zip(labels, paths)}
    if len(suites) != len(labels):
        raise ComparisonError("two suites share a label: name them with --label (one per input, in order)")
    names_per_suite = [[d["label"] for d in record["datasets"]] for _, record in suites.values()]
    shared = [name for name in names_per_suite[0] if all(name in names for names in names_per_suite[1:])]
    if not shared:
        raise ComparisonError("the suites share no dataset label: nothing to compare")
    left_out = {label: sorted(set(names) - set(shared)) for label, names in zip(labels, names_per_suite)}
    comparisons = {}
    for dataset in shared:
        systems = []
        for label, (folder, record) in suites.items():
            entry = next(d for d in record["datasets"] if d["label"] == dataset)
            systems.append(load_results(folder / entry["results"], label))
        check_comparable(systems, allowed)
        comparisons[dataset] = compare_systems(systems, settings)
    measures = comparisons[shared[0]]["measures"]
    for dataset, comparison in comparisons.items():
        if comparison["measures"] != measures:
            raise ComparisonError(f"dataset {dataset!r} compares {comparison['measures']} but {shared[0]!r} {measures}: "
                                  "choose the measures with -m")
    means = {label: {m: sum(c["systems"][i]["metrics"][m] for c in comparisons.values()) / len(comparisons) for m in measures}
             for i, label in enumerate(labels)}
    first = comparisons[shared[0]]
    return {
        "kind": "suite-comparison",
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "irforge_version": __version__,
        "systems": [{"label": s["label"], "letter": s["letter"], "source": str(suites[s["label"]][0]),
                     "retriever": s["retriever"]} for s in first["systems"]],
        "datasets": shared, "datasets_left_out": left_out, "measures": measures,
        "baseline": first["baseline"], "pairs": first["pairs"], "settings": first["settings"],
        "mean": means,
        "comparisons": comparisons,
    }
