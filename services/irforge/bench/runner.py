"""`irforge bench` in-process: one system over a suite, each dataset through `irforge eval`'s own
code path (eval_cmd.evaluate, with the dataset, split and OUT of that dataset), so a suite's
numbers are exactly what `irforge eval` gives dataset by dataset.

Resumable: a dataset whose OUT/<label>/results.json still stands (bench.reuse) is reused, not
redone; each dataset's folder is written as one set, so a bench killed at any moment resumes with
the next unfinished dataset. A dataset that fails stops the bench (DatasetFailed, naming it); the
datasets finished before it stay in OUT and are reused by the next run.
"""

from __future__ import annotations

import argparse
import copy
import time
from collections.abc import Callable
from pathlib import Path

from irforge.bench.record import DatasetOutcome, remove_suite, suite_record, write_suite
from irforge.bench.reuse import reuse_problem
from irforge.bench.suite import Suite, SuiteEntry
from irforge.cli import eval_cmd
from irforge.results import Results


class DatasetFailed(RuntimeError):
    """One dataset of the suite failed; its cause is the error `irforge eval` would have raised."""

    def __init__(self, entry: SuiteEntry, position: int, total: int, error: BaseException):
        super().__init__(f"dataset {entry.label!r} ({position}/{total}, {entry.dataset}) failed: {error}; "
                         "the datasets finished before it are kept in OUT and reused when you run the bench again")
        self.entry = entry
        self.error = error


def dataset_args(args: argparse.Namespace, entry: SuiteEntry, out: Path, measures: list[str], dataset_type) -> argparse.Namespace:
    """`irforge eval`'s Namespace for one dataset: the bench's pipeline flags, that dataset, split and OUT."""
    one = copy.copy(args)
    one.dataset = dataset_type(entry.location)
    one.split = entry.split
    one.out = out / entry.label
    one.measures = list(measures)
    return one


def run_bench(args: argparse.Namespace, suite: Suite, out: Path, measures: list[str], *,
              say: Callable[[str], None], dataset_type=Path) -> dict:
    """Run (or reuse) every dataset, then write OUT/suite.json and suite.md; returns suite.json's record.
    `say` gets the progress lines; `dataset_type` turns a suite's dataset into eval's --dataset value."""
    total = len(suite.entries)
    outcomes: list[DatasetOutcome] = []
    suite_removed = False
    for position, entry in enumerate(suite.entries, 1):
        one = dataset_args(args, entry, out, measures, dataset_type)
        started = time.perf_counter()
        say(f"[{position}/{total}] {entry.label} ({entry.dataset}, {entry.split}) ...")
        try:
            problem = reuse_problem(one, one.out)
            if problem is None:
                results, status = Results.load(one.out), "reused"
            else:
                if problem:
                    say(f"[{position}/{total}] {entry.label}: redoing: {problem}")
                if not suite_removed:  # OUT's datasets are about to change: the old table no longer describes them
                    remove_suite(out)
                    suite_removed = True
                results, _ = eval_cmd.evaluate(one, None)
                status = "evaluated"
        except Exception as error:  # noqa: BLE001 - any failure stops the bench, naming the dataset
            raise DatasetFailed(entry, position, total, error) from error
        first = next(iter(measures))
        why = f" {one.out}/results.json (same system, same data)" if status == "reused" else ""
        say(f"[{position}/{total}] {entry.label}: {status}{why} · {first} {results['metrics'][first]:.4f} · "
            f"{results['evaluation']['queries_evaluated']} queries · {time.perf_counter() - started:.1f}s")
        outcomes.append(DatasetOutcome(label=entry.label, dataset=entry.dataset, split=entry.split,
                                       results=dict(results), status=status))
    record = suite_record(suite.name, suite.split, measures, outcomes)
    write_suite(out, record)
    return record
