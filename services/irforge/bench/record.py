"""suite.json (and suite.md beside it): what a bench wrote, per dataset and on average. The
in-process bench and the orchestrator's suite jobs both write it through here, so its shape is
one; a report generator reads exactly these keys."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from irforge.bench.table import mean_metrics, suite_markdown
from irforge.common.files import atomic_write, write_json_atomic
from irforge.results import reading as field

SUITE_FILES = ("suite.json", "suite.md")
# What suite.json's datasets[].status can say when the dataset succeeded (a dataset that failed to
# run stops the bench and is never written). Readers (the report) take their meaning from here,
# not from a copy.
EVALUATED, REUSED = "evaluated", "reused"
DATASET_STATUSES = (EVALUATED, REUSED)
# A dataset evaluated (or reused) whose run retrieved nothing for more than half its queries: its
# results are written, as `irforge eval` writes them before exiting 3, and its entry carries the
# reason in `error` (irforge.pipeline.eval_job.mostly_empty); the bench exits 3 too.
RETRIEVED_NOTHING = "retrieved-nothing"


@dataclass(frozen=True)
class DatasetOutcome:
    label: str
    dataset: str        # as given
    split: str
    results: dict       # that dataset's results.json
    status: str         # one of DATASET_STATUSES, or RETRIEVED_NOTHING
    error: str = ""     # why the status is not a success


def suite_record(name: str, split: str, measures: list[str], outcomes: list[DatasetOutcome]) -> dict:
    first = outcomes[0].results
    datasets = [{
        "label": o.label, "dataset": o.dataset, "path": o.results["data"]["path"], "split": o.split,
        "results": f"{o.label}/results.json", "status": o.status,
        "metrics": {name: o.results["metrics"][name] for name in measures},
        "queries": o.results["evaluation"]["queries_evaluated"], "timings": o.results["timings"],
        **({"error": o.error} if o.error else {}),
    } for o in outcomes]
    return {
        "kind": "suite", "name": name, "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "split": split, "measures": list(measures), "system": first["retriever"], "datasets": datasets,
        "mean": mean_metrics(datasets, list(measures)), "versions": first["versions"],
    }


# The fields of suite.json its readers use (compare across suites, the report), as suite_record writes them.
SUITE = field.fields({
    "name": field.optional(field.name), "split": field.optional(field.name), "created_at": field.optional(field.name),
    "measures": field.list_of(field.name), "system": field.any_object, "mean": field.mapping(field.number),
    "versions": field.mapping(field.optional(field.long_text)),
    "datasets": field.list_of(field.fields({
        "label": field.optional(field.name), "dataset": field.optional(field.name), "path": field.optional(field.long_text),
        "split": field.optional(field.name), "results": field.optional(field.long_text), "status": field.optional(field.name),
        "error": field.optional(field.long_text), "metrics": field.mapping(field.number), "queries": field.optional(field.count),
        "timings": field.mapping(field.seconds)})),
})


def outcome_of(label: str, dataset: str, split: str, results: dict, status: str) -> DatasetOutcome:
    """A dataset's outcome: `status` (evaluated, reused), or RETRIEVED_NOTHING with the reason when
    its run retrieved nothing for most queries."""
    from irforge.pipeline.eval_job import mostly_empty

    reason = mostly_empty(results)
    return DatasetOutcome(label=label, dataset=dataset, split=split, results=results,
                          status=RETRIEVED_NOTHING if reason else status, error=reason)


def failures(record: dict) -> list[str]:
    """'<label>: <error>' for each dataset of suite.json whose status is not a success."""
    return [f"{d['label']}: {d.get('error') or d['status']}" for d in record["datasets"] if d["status"] not in DATASET_STATUSES]


def check_suite(record: dict, file: str) -> None:
    """suite.json read back: ResultsFileError naming the file and the field a reader could not use."""
    field.check_record(SUITE, record, file)


def write_suite(folder: Path, record: dict) -> None:
    """suite.md first, then suite.json: a kill between them leaves no suite.json, which a reader
    takes as "no complete suite" (see remove_suite)."""
    with atomic_write(folder / "suite.md") as handle:
        handle.write(suite_markdown(record))
    write_json_atomic(folder / "suite.json", record)


def remove_suite(folder: Path) -> None:
    """Before OUT's datasets change: an old suite.json would describe results no longer there."""
    for name in SUITE_FILES:
        (folder / name).unlink(missing_ok=True)


def bench_folders(inputs: list) -> list:
    """The inputs with each OUT of a several-systems bench (no suite.json or results.json of its
    own, a folder per system holding one) replaced by those folders, by name: so compare and
    report take OUT itself as they take OUT/*. Any other input stays as given."""
    expanded: list = []
    for given in inputs:
        path = Path(given)
        systems = ([] if not path.is_dir() or (path / "suite.json").exists() or (path / "results.json").exists()
                   else sorted(child for child in path.iterdir() if (child / "suite.json").is_file()))
        expanded += [str(child) for child in systems] if systems else [given]
    return expanded
