"""What `irforge compare` sets side by side: a System is one evaluated run's per-query values
with the record it came from (results.json, or what a bare TREC run was evaluated with here).

Systems are comparable only when they were scored the same way on the same data; `identity`
names each field that must agree and `check_comparable` refuses, naming the field and both
values, unless the user allowed that field to differ."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from irforge.common.files import not_a_regular_file
from irforge.data import DataFormatError
from irforge.data.qrels import qrels_fingerprint
from irforge.evaluator.measures import DEFAULT_MEASURES
from irforge.results.reading import check_results, read_json_object
from irforge.runs import read_run_file


class ComparisonError(ValueError):
    """Inputs that cannot be compared: the message names the input and what is wrong."""


# field -> (what it means, how to read it from a results record); None where a record lacks it.
IDENTITY = {
    "dataset": ("the dataset", lambda r: r.get("dataset")),
    "split": ("the split", lambda r: r.get("split")),
    "corpus": ("the corpus (data.corpus_fingerprint_sha256)", lambda r: r.get("data", {}).get("corpus_fingerprint_sha256")),
    "qrels": ("the relevance labels (data.qrels_sha256)", lambda r: r.get("data", {}).get("qrels_sha256")),
    "options": ("the evaluation options (evaluation.options)", lambda r: r.get("evaluation", {}).get("options")),
}


@dataclass
class System:
    label: str
    source: str
    record: dict                              # results.json as written (synthesised for a TREC run)
    per_query: dict[str, dict[str, float]]    # query id -> measure -> value

    def measures(self) -> list[str]:
        """Measures with a value for every query, in the order the record lists them."""
        order = list(self.record.get("metrics", {})) or sorted({m for v in self.per_query.values() for m in v})
        return [m for m in order if self.per_query and all(m in values for values in self.per_query.values())]


def load_results(path: str | Path, label: str | None = None) -> System:
    """A results.json (or the folder holding one) written by `irforge eval` or `irforge.evaluate`."""
    path = Path(path)
    file = path / "results.json" if path.is_dir() else path
    kind = not_a_regular_file(file)
    if kind:   # a FIFO would block the read, /dev/zero never end it
        raise ComparisonError(f"{file}: the results.json given is {kind}, not a regular file")
    if not file.is_file():
        raise ComparisonError(f"{path}: no results.json there (give a results folder, a results.json, "
                              "or a TREC run with --qrels)")
    record = read_json_object(file)   # ResultsFileError naming the file (and the field) when it cannot be used
    check_results(record, str(file), required=("per_query",))
    if record.get("kind") == "instructions":
        raise ComparisonError(f"{file}: instruction-following results hold one run per dimension and mode; "
                              "compare their run files with --qrels (one mode's qrels) instead")
    default = file.parent.name if file.name == "results.json" else file.stem
    return System(label or default, str(path), record, record["per_query"])


def load_run(path: str | Path, qrels, qrels_name: str, measures: list[str] | None, keep_identical_ids: bool,
             label: str | None = None) -> System:
    """A TREC run evaluated here, as `irforge eval` evaluates (qrels queries the run misses score 0)."""
    path = Path(path)
    try:
        trec = read_run_file(path)
    except DataFormatError:
        raise
    except OSError as error:
        raise ComparisonError(f"{path}: cannot be read ({error.strerror})") from None
    from irforge.evaluator import EvaluationOptions, Evaluator   # here: `irforge --help` reads IDENTITY (numpy-free)

    options = EvaluationOptions(drop_identical_ids=not keep_identical_ids, complete=True)
    result = Evaluator().evaluate(qrels, trec.run, list(measures or DEFAULT_MEASURES), options)
    record = {
        "dataset": None, "split": None,
        "retriever": {"name": "trec-run", "run_file": str(path), "tag": trec.producer, "format": trec.format,
                      "sha256": trec.sha256},
        "metrics": {name: result.aggregate[name] for name in result.measure_names},
        "per_query": result.per_query,
        "evaluation": {"measures": list(result.measure_names), "options": options.as_dict(),
                       "identical_ids_dropped": result.identical_ids_dropped, "queries_evaluated": result.queries_evaluated},
        "data": {"qrels": qrels_name, "qrels_sha256": qrels_fingerprint(qrels)},
        "versions": result.versions,
    }
    default = path.parent.name if path.name == "run.trec" else path.stem   # eval's run.trec: its folder names it
    return System(label or default, str(path), record, result.per_query)


def check_comparable(systems: list[System], allowed: set[str]) -> None:
    """Refuse systems that differ in a field of IDENTITY (unless allowed), naming the field and
    the systems; a field a record does not have (a bare TREC run has no dataset) is not compared."""
    unknown = allowed - set(IDENTITY)
    if unknown:
        raise ComparisonError(f"--allow-different: unknown field {', '.join(sorted(unknown))}; one of {', '.join(IDENTITY)}")
    labels = [s.label for s in systems]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise ComparisonError(f"two inputs share the label {duplicates[0]!r}: name them with --label (one per input, in order)")
    first = systems[0]
    for field, (meaning, read) in IDENTITY.items():
        if field in allowed:
            continue
        reference = read(first.record)
        for other in systems[1:]:
            value = read(other.record)
            if reference is not None and value is not None and value != reference:
                raise ComparisonError(
                    f"{first.label} and {other.label} differ in {meaning}: {_short(reference)} vs {_short(value)}; "
                    f"their numbers are not comparable (pass --allow-different {field} to compare them anyway)")


def common_queries(systems: list[System]) -> tuple[list[str], dict[str, list[str]]]:
    """The queries every system has a value for (sorted), and per system the ones left out."""
    shared = set(systems[0].per_query)
    for system in systems[1:]:
        shared &= set(system.per_query)
    if not shared:
        raise ComparisonError("the inputs have no query in common: nothing to compare")
    left_out = {s.label: sorted(set(s.per_query) - shared) for s in systems}
    return sorted(shared), left_out


def common_measures(systems: list[System], asked: list[str] | None) -> list[str]:
    """The measures to compare: those asked for (each must be in every system), else every
    measure all systems have, in the first system's order."""
    available = [set(s.measures()) for s in systems]
    if asked:
        for measure in asked:
            for system, names in zip(systems, available):
                if measure not in names:
                    raise ComparisonError(f"{system.label} has no per-query {measure!r} (it has: {', '.join(system.measures())})")
        return list(asked)
    shared = [m for m in systems[0].measures() if all(m in names for names in available)]
    if not shared:
        raise ComparisonError("the inputs share no measure: evaluate them with the same -m")
    return shared


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 24 else text[:12] + "…"
