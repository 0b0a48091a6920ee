"""`irforge bench` in-process: one system (a PipelineConfig) over a suite, each dataset through
`irforge eval`'s own use case (irforge.app.evaluate.evaluate, with the dataset, split and OUT of
that dataset), so a suite's numbers are exactly what `irforge eval` gives dataset by dataset.

Resumable: a dataset whose OUT/<label>/results.json still stands (bench.reuse) is reused, not
redone; each dataset's folder is written as one set, so a bench killed at any moment resumes with
the next unfinished dataset. A dataset that fails stops the bench (DatasetFailed, naming it); the
datasets finished before it stay in OUT and are reused by the next run. A dataset whose run
retrieved nothing for more than half its queries is written and marked (status
`retrieved-nothing`, the reason in `error`), as `irforge eval` writes it and exits 3; the bench
goes on and exits 3.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from irforge.bench.record import EVALUATED, REUSED, DatasetOutcome, outcome_of, remove_suite, suite_record, write_suite
from irforge.bench.reuse import reuse_problem
from irforge.bench.suite import Suite, SuiteEntry, SuiteError
from irforge.app.evaluate import checked, evaluate
from irforge.config import ConfigError, PipelineConfig, validate
from irforge.config.values import from_mapping
from irforge.results import Results


class DatasetFailed(RuntimeError):
    """One dataset of the suite failed; its cause is the error `irforge eval` would have raised."""

    def __init__(self, entry: SuiteEntry, position: int, total: int, error: BaseException):
        super().__init__(f"dataset {entry.label!r} ({position}/{total}, {entry.dataset}) failed: {error}; "
                         "the datasets finished before it are kept in OUT and reused when you run the bench again")
        self.entry = entry
        self.error = error


def dataset_config(config: PipelineConfig, entry: SuiteEntry, measures: list[str]) -> PipelineConfig:
    """The system's configuration on one dataset of the suite: that dataset, split and measures, and
    the entry's run file as the system (or its candidates as the first stage) when the suite gives one."""
    given = dataclasses.replace(config.given, runs=(entry.run,)) if entry.run else config.given
    rerank = dataclasses.replace(config.rerank, candidates=entry.candidates) if entry.candidates else config.rerank
    return dataclasses.replace(config, dataset=str(entry.location), split=entry.split, given=given, rerank=rerank,
                               evaluation=dataclasses.replace(config.evaluation, measures=tuple(measures)))


def check_given_runs(config: PipelineConfig, suite: Suite) -> None:
    """A run file belongs to one dataset: --run fits a suite of one, entries' `run:` any suite, not both."""
    if config.given.runs and any(entry.run for entry in suite.entries):
        raise SuiteError("--run and the suite file's `run:` entries both name the system: give one of them")
    if config.given.runs and len(suite.entries) > 1:
        raise SuiteError(f"--run names one dataset's run, and the suite has {len(suite.entries)} datasets: give each "
                         "its run in a suite file (datasets: [{path: ..., run: ...}], docs/bench.md)")
    # The same for candidates: a file of one dataset's query ids.
    if config.rerank.candidates and any(entry.candidates for entry in suite.entries):
        raise SuiteError("--candidates and the suite file's `candidates:` entries both name the first stage: give one of them")
    if config.rerank.candidates and len(suite.entries) > 1:
        raise SuiteError(f"--candidates names one dataset's candidates, and the suite has {len(suite.entries)} datasets: "
                         "give each its candidates in a suite file (datasets: [{path: ..., candidates: ...}], docs/bench.md)")


def run_bench(config: PipelineConfig, suite: Suite, out: Path, measures: list[str], *,
              say: Callable[[str], None]) -> dict:
    """Run (or reuse) every dataset, then write OUT/suite.json and suite.md; returns suite.json's
    record. `say` gets the progress lines (the command prints them on stderr, so logs keep them)."""
    check_given_runs(config, suite)
    total = len(suite.entries)
    check_every_dataset(config, suite, out, measures)
    outcomes: list[DatasetOutcome] = []
    suite_removed = False
    for position, entry in enumerate(suite.entries, 1):
        one = dataset_config(config, entry, measures)
        folder = out / entry.label
        started = time.perf_counter()
        say(f"[{position}/{total}] {entry.label} ({entry.dataset}, {entry.split}) ...")
        try:
            one = checked(one, folder)
            problem = reuse_problem(one, folder)
            if problem is None:
                results, status = Results.load(folder), REUSED
            else:
                if problem:
                    say(f"[{position}/{total}] {entry.label}: redoing: {problem}")
                if not suite_removed:  # OUT's datasets are about to change: the old table no longer describes them
                    remove_suite(out)
                    suite_removed = True
                results = evaluate(one, folder)
                status = EVALUATED
        except Exception as error:  # noqa: BLE001 - any failure stops the bench, naming the dataset
            raise DatasetFailed(entry, position, total, error) from error
        first = next(iter(measures))
        why = f" {folder}/results.json (same system, same data)" if status == REUSED else ""
        outcome = outcome_of(entry.label, entry.dataset, entry.split, dict(results), status)
        say(f"[{position}/{total}] {entry.label}: {status}{why} · {first} {results['metrics'][first]:.4f} · "
            f"{results['evaluation']['queries_evaluated']} queries · {time.perf_counter() - started:.1f}s"
            + (f" · error: {outcome.error}" if outcome.error else ""))
        outcomes.append(outcome)
    record = suite_record(suite.name, suite.split, measures, outcomes)
    write_suite(out, record)
    return record


def check_every_dataset(config: PipelineConfig, suite: Suite, out: Path, measures: list[str]) -> None:
    """Each dataset's configuration checked as `irforge eval` checks it (its folder found, options
    valid, its OUT writable) before the first one runs: a mistyped last folder fails now, not after
    the first datasets' hours of work (SuiteError naming the dataset; nothing is run or written)."""
    for position, entry in enumerate(suite.entries, 1):
        try:
            checked(dataset_config(config, entry, measures), out / entry.label)
        except ValueError as error:
            raise SuiteError(f"dataset {entry.label!r} ({position}/{len(suite.entries)}, {entry.dataset}): {error}; "
                             "nothing was run") from None


def system_configs(base: PipelineConfig, suite: Suite, measures: list[str]) -> dict[str, PipelineConfig]:
    """Each of the suite file's `systems:` as a configuration: the command line's (`base`) with the
    system's options over it, validated once here, before any dataset runs (SuiteError naming it)."""
    configs: dict[str, PipelineConfig] = {}
    for system in suite.systems:
        try:
            config = from_mapping(PipelineConfig, system.options, system.place, base=base)
            if config.evaluation.sample is not None:   # a suite's figures stand for its datasets
                raise SuiteError("--sample applies to irforge eval only: a suite's figures stand for its datasets")
            if system.runs and (config.given.runs or any(entry.run for entry in suite.entries)):
                raise SuiteError("its `run:` and `given: {runs: ...}` (or --run, or the datasets' `run:`) both name "
                                 "the system's runs: give one of them")
            seen = system_suite(suite, system.runs)
            check_given_runs(config, seen)
            for entry in seen.entries:   # the rules see the system as it runs: on a dataset, its split and measures
                validate(dataset_config(config, entry, measures))
        except (ConfigError, SuiteError) as error:
            message = str(error)
            raise SuiteError(message if message.startswith(system.place) else f"{system.place}: {message}") from None
        configs[system.name] = config
    return configs


def system_suite(suite: Suite, runs: dict | None, name: str | None = None) -> Suite:
    """The suite as one system sees it: its own name, and its `run: {label: file}` as the entries' runs."""
    entries = tuple(dataclasses.replace(entry, run=runs[entry.label]) for entry in suite.entries) if runs else suite.entries
    return dataclasses.replace(suite, name=name or suite.name, entries=entries, systems=())


def run_systems(configs: dict[str, PipelineConfig], suite: Suite, out: Path, measures: list[str], *,
                say: Callable[[str], None]) -> dict[str, dict]:
    """Every system over the suite, each into OUT/<system name>/ as a one-system bench (its own
    suite.json, reused and resumed as run_bench does); returns each system's suite.json record."""
    records: dict[str, dict] = {}
    runs = {system.name: system.runs for system in suite.systems}
    for position, (name, config) in enumerate(configs.items(), 1):
        say(f"system {position}/{len(configs)}: {name} -> {out / name}")
        try:
            records[name] = run_bench(config, system_suite(suite, runs.get(name), name), out / name, measures, say=say)
        except DatasetFailed as failed:
            failed.args = (f"system {name!r}: {failed}",)   # which system, as well as which dataset
            raise
    return records


def check_airbench_suite(suite: Suite) -> None:
    """Before any dataset runs: every dataset of the suite can be filed in AIR-Bench's submission
    (its layout and task, domain, language, name and version found), else SubmissionError."""
    from irforge.bench.airbench import check_dataset
    from irforge.datasets import resolve_dataset

    for entry in suite.entries:
        check_dataset(resolve_dataset(entry.location), entry.label)


def write_airbench_submission(record: dict, out: Path, folder: Path, model: str | None, reranker: str | None) -> list[Path]:
    """suite.json's datasets (run by run_bench into OUT) as AIR-Bench's submission in `folder`;
    the model and reranker names default to the system's (bench.airbench.system_names)."""
    from irforge.bench.airbench import Submission, check_names, system_names, write_submission

    default_model, default_reranker = system_names(record["system"])
    submission = Submission(folder, model or default_model, reranker or default_reranker)
    check_names(submission.model, submission.reranker)
    return write_submission(submission, out, record["datasets"])


def check_mteb_suite(suite: Suite) -> None:
    """Before any dataset runs: every dataset of the suite has an MTEB task (SubmissionError)."""
    from irforge.bench.airbench import SubmissionError
    from irforge.results.mteb import BEIR_TASKS, task_for

    for entry in suite.entries:
        if task_for(entry.dataset) is None and task_for(entry.label) is None:
            raise SubmissionError(f"dataset {entry.label!r} ({entry.dataset}): no MTEB task irforge knows for it "
                                  f"(MTEB's names of BEIR's datasets: {', '.join(sorted(BEIR_TASKS))}); "
                                  "label it by its BEIR name in the suite file")


def write_mteb_results(record: dict, out: Path, folder: Path) -> list[Path]:
    """Each dataset's results as MTEB's per-task file, folder/<Task>.json (irforge.results.mteb)."""
    from irforge.common.files import write_json_atomic
    from irforge.results.mteb import task_for, task_result_record

    written = []
    for entry in record["datasets"]:
        results = Results.load(out / entry["label"])
        task = task_for(entry.get("dataset")) or task_for(entry["label"])
        language = (results.get("retriever") or {}).get("language")
        task_record = task_result_record(dict(results), task, entry["split"],
                                     "eng-Latn" if language in (None, "en") else str(language))
        written.append(write_json_atomic(folder / f"{task}.json", task_record))
    return written
