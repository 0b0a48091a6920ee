"""Build a comparison: per measure, paired tests between systems over the queries every system
answered, p-values corrected within each (measure, test) family, and the table of means with
significance letters. The result is a plain dict (comparison.json; shape in docs/compare.md)."""

from __future__ import annotations

import string
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import numpy as np

from irforge import __version__
from irforge.compare import stats
from irforge.compare.corrections import CORRECTIONS, adjust
from irforge.compare.systems import ComparisonError, System, common_measures, common_queries


@dataclass(frozen=True)
class CompareSettings:
    tests: tuple[str, ...] = stats.TESTS
    significance_test: str = "t"          # whose corrected p decides the markers (ranx's default test)
    correction: str = "holm"
    alpha: float = 0.05
    baseline: str | None = None           # None: every pair
    measures: tuple[str, ...] | None = None
    test_settings: stats.TestSettings = stats.TestSettings()

    def __post_init__(self):
        unknown = [t for t in self.tests if t not in stats.TESTS]
        if unknown:
            raise ComparisonError(f"unknown test {unknown[0]!r}: one of {', '.join(stats.TESTS)}")
        if self.significance_test not in self.tests:
            raise ComparisonError(f"the significance test {self.significance_test!r} must be among the tests run "
                                  f"({', '.join(self.tests)})")
        if self.correction not in CORRECTIONS:
            raise ComparisonError(f"unknown correction {self.correction!r}: one of {', '.join(CORRECTIONS)}")
        if not 0 < self.alpha < 1:
            raise ComparisonError(f"alpha must be between 0 and 1, got {self.alpha}")


def letters(count: int) -> list[str]:
    """a, b, ..., z, aa, ab, ...: one per system, in input order."""
    alphabet = string.ascii_lowercase
    return [alphabet[i] if i < 26 else alphabet[i // 26 - 1] + alphabet[i % 26] for i in range(count)]


def compare_systems(systems: list[System], settings: CompareSettings) -> dict:
    if len(systems) < 2:
        raise ComparisonError("compare needs at least two systems")
    labels = [s.label for s in systems]
    if settings.baseline is not None and settings.baseline not in labels:
        raise ComparisonError(f"--baseline {settings.baseline!r} is not one of the systems: {', '.join(labels)}")
    measures = common_measures(systems, list(settings.measures) if settings.measures else None)
    queries, left_out = common_queries(systems)
    values = {m: {s.label: np.array([float(s.per_query[q][m]) for q in queries]) for s in systems} for m in measures}
    pairs = _pairs(labels, settings.baseline)

    comparisons = []
    for measure in measures:
        for system, against in pairs:
            diff = stats.differences(values[measure][system], values[measure][against])
            wins, ties, losses = stats.wins_ties_losses(diff)
            comparisons.append({
                "measure": measure, "system": system, "against": against, "n": len(queries),
                "mean": float(values[measure][system].mean()), "mean_against": float(values[measure][against].mean()),
                "difference": float(diff.mean()), "effect_size": stats.effect_size(diff),
                "wins": wins, "ties": ties, "losses": losses,
                "tests": stats.run_tests(settings.tests, diff, settings.test_settings),
            })
    _correct(comparisons, measures, settings)
    letter_of = dict(zip(labels, letters(len(systems))))
    return {
        "kind": "comparison",
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "irforge_version": __version__,
        "measures": measures,
        "systems": [_describe(s, letter_of[s.label], values, measures) for s in systems],
        "baseline": settings.baseline,
        "pairs": "baseline" if settings.baseline else "all",
        "settings": {"tests": list(settings.tests), "significance_test": settings.significance_test,
                     "correction": settings.correction,
                     "correction_family": "per measure and test: every pair compared for that measure",
                     "alpha": settings.alpha, **_test_settings(settings.test_settings)},
        "queries": {"compared": len(queries), "left_out": left_out},
        "table": _table(systems, measures, values, comparisons, letter_of, settings),
        "comparisons": comparisons,
        "per_query": {m: {q: {s.label: float(s.per_query[q][m]) for s in systems} for q in queries} for m in measures},
    }


def _pairs(labels: list[str], baseline: str | None) -> list[tuple[str, str]]:
    """(system, against): each system against the baseline, or every pair (later input against earlier)."""
    if baseline is not None:
        return [(label, baseline) for label in labels if label != baseline]
    return [(labels[j], labels[i]) for i in range(len(labels)) for j in range(i + 1, len(labels))]


def _correct(comparisons: list[dict], measures: list[str], settings: CompareSettings) -> None:
    """Adjust each (measure, test) family's p-values together; mark what is significant at alpha."""
    for measure in measures:
        family = [c for c in comparisons if c["measure"] == measure]
        for test in settings.tests:
            adjusted = adjust([c["tests"][test]["p"] for c in family], settings.correction)
            for comparison, p in zip(family, adjusted):
                comparison["tests"][test]["p_corrected"] = p
                comparison["tests"][test]["significant"] = p < settings.alpha


def _table(systems, measures, values, comparisons, letter_of, settings) -> list[dict]:
    """One row per system: the mean per measure, whether it is the column's best, and the letters
    of the systems it is significantly better than (by the significance test, corrected)."""
    rows = []
    for system in systems:
        cells = {}
        for measure in measures:
            means = {label: float(v.mean()) for label, v in values[measure].items()}
            better = []
            for c in comparisons:
                if c["measure"] != measure or not c["tests"][settings.significance_test]["significant"]:
                    continue
                if c["system"] == system.label and c["difference"] > 0:
                    better.append(letter_of[c["against"]])
                elif c["against"] == system.label and c["difference"] < 0:
                    better.append(letter_of[c["system"]])
            cells[measure] = {"mean": means[system.label], "best": means[system.label] == max(means.values()),
                              "better_than": sorted(better, key=lambda x: (len(x), x))}
        rows.append({"system": system.label, "letter": letter_of[system.label], "values": cells})
    return rows


def _describe(system: System, letter: str, values, measures) -> dict:
    record = system.record
    reported = record.get("metrics", {})
    return {
        "label": system.label, "letter": letter, "source": system.source,
        "dataset": record.get("dataset"), "split": record.get("split"),
        "retriever": record.get("retriever", {}), "evaluation": record.get("evaluation", {}), "data": record.get("data", {}),
        "metrics": {m: float(values[m][system.label].mean()) for m in measures},
        "metrics_reported": reported,
        "queries": len(system.per_query),
        "timings": record.get("timings", {}), "versions": record.get("versions", {}),
        # The scalar counts (ingest_skipped among them: a report must not show a reused index's
        # opening time as its build time); the lists of examples stay in results.json.
        "counts": {k: v for k, v in record.get("counts", {}).items() if not isinstance(v, (list, dict))},
        "holes": record.get("holes"),
        "judged": {name: value for name, value in reported.items() if name.startswith("Judged@")},
    }


def _test_settings(test_settings: stats.TestSettings) -> dict:
    found = asdict(test_settings)
    return {"permutations": found["permutations"], "bootstrap_samples": found["bootstrap_samples"],
            "confidence": found["confidence"], "seed": found["seed"]}
