"""A suite: the datasets a system is benchmarked on, each under a label (its folder in OUT and
its row in the table), and optionally the several systems (`systems:`) benchmarked on them. Read from a YAML suite file or built from repeated --dataset flags;
refused, naming the file and the field, when it is malformed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


from irforge.common.files import read_yaml
from irforge.evaluator.measures import MeasureError, parse_measures

SUITE_FIELDS = ("name", "split", "measures", "datasets", "systems")
# run: a run file as the system there (irforge eval --run); candidates: what the system's reranker reranks there (--candidates)
ENTRY_FIELDS = ("path", "name", "label", "split", "run", "candidates")
# A label is one folder name in OUT: no separators, no hidden or temporary names, not the suite's own files.
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
RESERVED_LABELS = ("suite.json", "suite.md")


class SuiteError(ValueError):
    """A suite file or --dataset list that cannot be run; the message names the file and field."""


@dataclass(frozen=True)
class SuiteEntry:
    dataset: str      # as given: a folder, or a dataset name `irforge eval --dataset` resolves
    label: str
    split: str
    location: str     # what to pass to `irforge eval --dataset`: `dataset`, or a folder relative to the suite file resolved
    run: str | None = None   # a run file scored as the system on this dataset (`irforge eval --run`), resolved like `path`
    candidates: str | None = None   # the first stage reranked on this dataset (`irforge eval --candidates`), resolved like `path`


@dataclass(frozen=True)
class SuiteSystem:
    """One system of a suite file's `systems:`: its name (its folder in OUT) and its pipeline
    options as a configuration file gives them (nested by section), paths resolved like `run:`."""
    name: str
    options: dict
    place: str        # where the suite file declares it, for messages: "suite file F: systems[1] (bm25s)"
    runs: dict | None = None   # `run: {label: file}`: the system's run file on each dataset, resolved like `run:`


@dataclass(frozen=True)
class Suite:
    name: str
    split: str
    measures: tuple[str, ...] | None   # None: the command's -m flags or eval's defaults
    entries: tuple[SuiteEntry, ...]
    systems: tuple[SuiteSystem, ...] = ()   # empty: one system, the command line's


def label_for(dataset: str) -> str:
    """The default label: the folder's name (`beir/scifact` -> `scifact`)."""
    return Path(str(dataset).rstrip("/")).name


def suite_from_datasets(datasets: list[str], split: str, name: str) -> Suite:
    """The suite of repeated --dataset flags, labelled by folder name."""
    entries = tuple(SuiteEntry(dataset=str(d), label=label_for(d), split=split, location=str(d)) for d in datasets)
    _check_labels(entries, [f"--dataset {entry.dataset}" for entry in entries], "")
    return Suite(name=name, split=split, measures=None, entries=entries)


def load_suite(path: str | Path) -> Suite:
    path = Path(path)
    mapping = read_yaml(path, "suite file", SuiteError)

    def bad(field: str, message: str):
        raise SuiteError(f"suite file {path}: field {field!r}: {message}")

    if not isinstance(mapping, dict):
        raise SuiteError(f"suite file {path}: expected a mapping with fields {', '.join(SUITE_FIELDS)}, "
                         f"got {type(mapping).__name__}")
    for key in mapping:
        if key not in SUITE_FIELDS:
            bad(str(key), f"unknown field (a suite has {', '.join(SUITE_FIELDS)})")
    name = _text(mapping, "name", path.stem, bad)
    split = _text(mapping, "split", "test", bad)
    measures = mapping.get("measures")
    if measures is not None:
        if not isinstance(measures, list) or not measures or not all(isinstance(m, str) for m in measures):
            bad("measures", "must be a non-empty list of measure names like nDCG@10")
        try:
            parse_measures(measures)
        except MeasureError as error:
            bad("measures", str(error))
        measures = tuple(measures)
    datasets = mapping.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        bad("datasets", "required: a non-empty list of dataset folders or names, or mappings {path|name, label, split}")
    base = path.resolve().parent
    entries = tuple(_entry(item, f"datasets[{n}]", split, base, bad) for n, item in enumerate(datasets))
    with_runs = [entry.run is not None for entry in entries]
    if any(with_runs) and not all(with_runs):
        # One suite, one system: a dataset without a run would be scored by another system (the flags' retriever).
        bad(f"datasets[{with_runs.index(False)}]", "has no run: when entries give `run:` (the system's run on that "
            "dataset), every entry gives one")
    with_candidates = [entry.candidates is not None for entry in entries]
    if any(with_candidates) and not all(with_candidates):
        # One system: a dataset without candidates would be reranked over another first stage (the flags' retriever).
        bad(f"datasets[{with_candidates.index(False)}]", "has no candidates: when entries give `candidates:` (what "
            "the system reranks on that dataset), every entry gives them")
    _check_labels(entries, [f"datasets[{n}]" for n in range(len(entries))], f"suite file {path}: ")
    systems = _systems(mapping.get("systems"), path, base, bad, [e.label for e in entries]) if "systems" in mapping else ()
    return Suite(name=name, split=split, measures=measures, entries=entries, systems=systems)


# The options of a system that name files: relative to the suite file, as an entry's `run:` and `candidates:`.
SYSTEM_FILES = (("given", "runs"), ("rerank", "candidates"))


def _systems(items, path: Path, base: Path, bad, labels: list[str]) -> tuple[SuiteSystem, ...]:
    if not isinstance(items, list) or not items:
        bad("systems", "must be a non-empty list of mappings {name: ..., <pipeline options as a configuration file "
            "gives them>}, e.g. {name: bm25s, given: {runs: [bm25s.trec]}}")
    systems: list[SuiteSystem] = []
    for n, item in enumerate(items):
        where = f"systems[{n}]"
        if not isinstance(item, dict):
            bad(where, f"must be a mapping {{name: ..., <pipeline options>}}, got {item!r}")
        name = _text(item, "name", "", bad, f"{where}.")
        # The name is the system's folder in OUT and its name in compare and report.
        if not LABEL.fullmatch(name) or name in RESERVED_LABELS:
            bad(f"{where}.name", f"{name!r} cannot name a folder of OUT (letters, digits, '.', '_', '+', '-', "
                "starting with a letter or digit; not suite.json or suite.md)")
        for other in systems:
            if other.name == name:
                bad(f"{where}.name", f"{name!r} is already the name of {other.place.split(': ')[-1]}; every system "
                    "needs its own name (its folder in OUT)")
        for key in ("dataset", "split"):
            if key in item:   # silently replaced on every dataset otherwise
                bad(f"{where}.{key}", "a system runs on the suite's datasets: `datasets:` names them and their splits")
        options = {key: value for key, value in item.items() if key not in ("name", "run")}
        runs = _system_runs(item["run"], f"{where}.run", base, bad, labels) if "run" in item else None
        for section, field in SYSTEM_FILES:
            values = options.get(section, {}).get(field) if isinstance(options.get(section), dict) else None
            if values is None:
                continue
            resolved = [str(base / value) if isinstance(value, str) and value.strip() and not Path(value).is_absolute()
                        else value for value in (values if isinstance(values, list) else [values])]
            options[section] = {**options[section], field: resolved if isinstance(values, list) else resolved[0]}
        systems.append(SuiteSystem(name=name, options=options, place=f"suite file {path}: {where} ({name})", runs=runs))
    return tuple(systems)


def _text(mapping: dict, field: str, default: str, bad, where: str = "") -> str:
    value = mapping.get(field, default)
    if not isinstance(value, str) or not value.strip():
        bad(where + field, f"must be a non-empty string, got {value!r}")
    return value


def _entry(item, where: str, split: str, base: Path, bad) -> SuiteEntry:
    if isinstance(item, str) and item.strip():
        # A folder relative to the suite file when there is one; else as given (a dataset name,
        # or a path relative to the current folder).
        local = base / item
        return SuiteEntry(dataset=item, label=label_for(item), split=split,
                          location=str(local) if not Path(item).is_absolute() and local.is_dir() else item)
    if not isinstance(item, dict):
        bad(where, f"must be a folder or name, or a mapping {{path|name, label, split}}; got {item!r}")
    for key in item:
        if key not in ENTRY_FIELDS:
            bad(f"{where}.{key}", f"unknown field (a dataset entry has {', '.join(ENTRY_FIELDS)})")
    if ("path" in item) == ("name" in item):
        bad(where, "give exactly one of path (a folder, relative to the suite file) or name (a dataset name)")
    if "path" in item:
        given = _text(item, "path", "", bad, f"{where}.")
        location = given if Path(given).is_absolute() else str(base / given)
    else:
        given = location = _text(item, "name", "", bad, f"{where}.")
    label = _text(item, "label", label_for(given), bad, f"{where}.")
    files = {}
    for field in ("run", "candidates"):
        if field in item:
            value = _text(item, field, "", bad, f"{where}.")
            files[field] = value if Path(value).is_absolute() else str(base / value)
    return SuiteEntry(dataset=given, label=label, split=_text(item, "split", split, bad, f"{where}."), location=location,
                      **files)


def _system_runs(value, where: str, base: Path, bad, labels: list[str]) -> dict:
    """A system's `run: {label: file}`: its run on each dataset of the suite, every dataset once."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                              for k, v in value.items()):
        bad(where, f"must map each dataset's label to the system's run file there, e.g. {{{labels[0]}: run.trec}}")
    for label in value:
        if label not in labels:
            bad(f"{where}.{label}", f"no dataset of the suite has that label ({', '.join(labels)})")
    missing = [label for label in labels if label not in value]
    if missing:   # one system: a dataset without its run would be scored by another system
        bad(where, f"has no run for {', '.join(missing)}: give the system's run on every dataset")
    return {label: file if Path(file).is_absolute() else str(base / file) for label, file in value.items()}


def _check_labels(entries: tuple[SuiteEntry, ...], places: list[str], prefix: str) -> None:
    seen: dict[str, str] = {}
    for entry, place in zip(entries, places):
        if not LABEL.fullmatch(entry.label) or entry.label in RESERVED_LABELS:
            raise SuiteError(f"{prefix}{place}: label {entry.label!r} cannot name a folder of OUT (letters, digits, "
                             "'.', '_', '+', '-', starting with a letter or digit; not suite.json or suite.md)")
        if entry.label in seen:
            raise SuiteError(f"{prefix}{place}: label {entry.label!r} is already used by {seen[entry.label]}; "
                             "every dataset needs its own label (a suite file entry can set `label:`)")
        seen[entry.label] = place
