"""What a report is made from: the files `irforge eval`, `eval-instructions`, `compare` and
`bench` write, told apart by their "kind" key and read into one shape (`System`) per evaluated
system, so every section can list systems without knowing which command made them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from irforge.bench.record import bench_folders, check_suite
from irforge.common.files import not_a_regular_file
from irforge.results.reading import ResultsFileError, check_compared_system, check_results, read_json_object

# A folder given as input: the first of these it holds is the input.
FOLDER_FILES = ("comparison.json", "suite.json", "results.json")
KINDS = {"comparison": "comparison", "suite-comparison": "suite-comparison", "suite": "suite", "instructions": "instructions",
         None: "results"}
# Per kind, the keys a report cannot do without and the JSON type each must have (lists: of objects
# where marked), so a malformed file is refused with its reason, not met halfway through the page.
REQUIRED = {
    "results": {"metrics": dict, "retriever": dict},
    "instructions": {"metrics": dict, "retriever": dict},
    "comparison": {"measures": list, "systems": (list, dict), "table": (list, dict), "comparisons": (list, dict)},
    "suite": {"measures": list, "datasets": (list, dict)},
    "suite-comparison": {"measures": list, "datasets": list, "systems": list, "comparisons": dict, "mean": dict},
}
JSON_NAMES = {dict: "an object", list: "a list"}


class ReportInputError(ValueError):
    """An input the report cannot read: the message names the file and what is wrong with it."""


@dataclass
class System:
    """One evaluated system as every section sees it (from a results.json or a comparison's systems)."""

    label: str
    source: str
    record: dict                    # what it was read from, per-query values left out
    letter: str | None = None       # a comparison's a, b, c...

    def get(self, key: str, default=None):
        value = self.record.get(key)
        return default if value is None else value

    @property
    def metrics(self) -> dict[str, float]:
        return self.get("metrics", {})

    @property
    def reported(self) -> dict[str, float]:
        """The metrics as results.json wrote them (a comparison's means are over the compared queries only)."""
        return self.get("metrics_reported", self.metrics)

    @property
    def judged(self) -> dict[str, float]:
        """Judged@k as evaluated (a comparison lists them apart, as "judged")."""
        if isinstance(self.record.get("judged"), dict):
            return self.record["judged"]
        return {name: value for name, value in self.reported.items() if name.startswith("Judged@")}

    @property
    def queries(self):
        if "queries" in self.record:
            return self.record["queries"]
        return self.get("evaluation", {}).get("queries_evaluated")


@dataclass
class ReportInput:
    path: Path                      # the file read (a folder given resolves to its file)
    given: str                      # what the user typed
    kind: str                       # results | instructions | comparison | suite
    record: dict
    sha256: str
    systems: list[System] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # what could not be read and why (a suite's missing results)
    children: list["ReportInput"] = field(default_factory=list)   # a suite comparison's per-dataset comparisons


def read_json(path: Path, what: str) -> dict:
    """The object in `path`, its depth bounded (irforge.results.reading): ReportInputError otherwise."""
    try:
        return read_json_object(path, what)
    except ResultsFileError as error:
        raise ReportInputError(str(error)) from None


def resolve(given: str) -> Path:
    path = Path(given)
    if path.is_dir():
        for name in FOLDER_FILES:
            if (path / name).is_file():
                return path / name
        raise ReportInputError(f"{given}: the folder holds none of {', '.join(FOLDER_FILES)}")
    if not path.exists():
        raise ReportInputError(f"{given}: no such file or folder")
    kind = not_a_regular_file(path)
    if kind:   # a FIFO would block the read, /dev/zero never end it
        raise ReportInputError(f"{given}: the report input is {kind}, not a regular file or folder")
    return path


def kind_of(record: dict, path: Path) -> str:
    kind = record.get("kind")
    if not isinstance(kind, (str, type(None))) or kind not in KINDS:
        raise ReportInputError(f"{path}: unknown kind {kind!r} (a report reads results.json of irforge eval or "
                               "eval-instructions, comparison.json of irforge compare, suite.json of irforge bench)")
    kind = KINDS[kind]
    missing = [key for key in REQUIRED[kind] if key not in record]
    if missing:
        hint = "" if "kind" in record else " (no \"kind\" key, so it was read as an irforge eval results.json)"
        raise ReportInputError(f"{path}: not a complete {kind} file: missing {', '.join(map(repr, missing))}{hint}")
    for key, expected in REQUIRED[kind].items():
        container, items = expected if isinstance(expected, tuple) else (expected, None)
        value = record[key]
        if not isinstance(value, container) or (items and not all(isinstance(v, items) for v in value)):
            wanted = JSON_NAMES[container] + (f" of {JSON_NAMES[items].split(' ', 1)[1]}s" if items else "")
            raise ReportInputError(f"{path}: {key!r} must be {wanted}, not {json.dumps(value)[:80]}")
    return kind


def without_per_query(record: dict) -> dict:
    return {key: value for key, value in record.items() if key != "per_query"}


def load_input(given: str) -> ReportInput:
    path = resolve(given)
    record = read_json(path, given)
    kind = kind_of(record, path)
    if kind in ("results", "instructions"):
        check_results(record, str(path), required=())   # every field a section reads, typed
    elif kind == "suite":
        check_suite(record, str(path))
    item = ReportInput(path, given, kind, record, hashlib.sha256(path.read_bytes()).hexdigest())
    if kind in ("results", "instructions"):
        item.systems = [System(path.parent.name or path.stem, str(path), without_per_query(record))]
    elif kind == "comparison":
        item.systems = comparison_systems(record, path)
    elif kind == "suite-comparison":
        for dataset, inner in record["comparisons"].items():
            if not isinstance(inner, dict) or any(key not in inner for key in REQUIRED["comparison"]):
                raise ReportInputError(f"{path}: the comparison of dataset {dataset!r} is incomplete")
            item.children.append(ReportInput(path, f"{given} · {dataset}", "comparison", inner, item.sha256,
                                             comparison_systems(inner, path)))
        # Every dataset's systems, named by dataset, for the reproducibility tables.
        item.systems = [System(f"{s.label} · {child.given.rsplit(' · ', 1)[1]}", s.source, s.record, s.letter)
                        for child in item.children for s in child.systems]
    else:
        item.systems, item.notes = suite_systems(path, record)
    return item


def comparison_systems(record: dict, path: Path) -> list[System]:
    for n, system in enumerate(record["systems"]):
        check_compared_system(system, f"{path}: systems[{n}]")
    return [System(str(s.get("label")), str(s.get("source", path)), s, s.get("letter")) for s in record["systems"]]


def suite_systems(path: Path, suite: dict) -> tuple[list[System], list[str]]:
    """The per-dataset results.json a suite names (they lie beside suite.json): one System each,
    named as the system on that dataset (a suite is one system; its rows are datasets, not systems)."""
    systems, notes = [], []
    system_name = str(suite.get("name") or path.parent.name)
    for entry in suite["datasets"]:
        label = str(entry.get("label") or entry.get("dataset"))
        name = entry.get("results")
        if not name:
            notes.append(f"{label}: no results file recorded (status {entry.get('status')!r})")
            continue
        results_path = path.parent / name
        if not results_path.is_file():
            notes.append(f"{label}: {results_path} not found (status {entry.get('status')!r})")
            continue
        try:
            record = read_json(results_path, label)
            check_results(record, str(results_path))
        except (ReportInputError, ResultsFileError) as error:
            notes.append(str(error))
            continue
        systems.append(System(f"{system_name} · {label}", str(results_path), without_per_query(record)))
    return systems, notes


def identity(system: System) -> str:
    """What makes two Systems one evaluated run, whichever input they came through (a results.json
    given directly and the same file inside a comparison, a bench folder and the suite comparison
    made from it): the data, the retriever, the figures results.json reported and its timings."""
    record = system.record
    return json.dumps([record.get(key) for key in ("dataset", "split", "retriever", "data", "timings")]
                      + [system.reported], sort_keys=True, default=str)


def distinct_systems(inputs: list[ReportInput]) -> list[tuple[list[int], System]]:
    """Each evaluated run once, in the order first met, with the numbers (1-based) of every input
    that holds it."""
    found: dict[str, tuple[list[int], System]] = {}
    for n, item in enumerate(inputs, start=1):
        for system in item.systems:
            numbers, _ = found.setdefault(identity(system), ([], system))
            if n not in numbers:
                numbers.append(n)
    return list(found.values())


def load_inputs(given: list[str]) -> list[ReportInput]:
    """Every input read and checked before anything is written; results labels made unique."""
    inputs = [load_input(g) for g in bench_folders(given)]   # a several-systems bench's OUT: its systems' folders
    used: set[str] = set()
    for item in inputs:
        if item.kind not in ("results", "instructions"):
            continue
        system = item.systems[0]
        label = system.label
        if label in used:   # two runs/<x>/results.json: tell them apart by the folder above
            label = f"{item.path.parent.parent.name}/{label}"
        base, n = label, 2
        while label in used:
            label, n = f"{base} #{n}", n + 1
        used.add(label)
        system.label = label
    return inputs
