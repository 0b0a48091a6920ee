"""`irforge check DATASET [RUN...]`: lint a dataset's split and any runs against it before they
are scored. DATASET is what --dataset takes (a BEIR folder or a downloaded dataset's name)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from irforge.app.errors import UsageError
from irforge.check import CheckReport, check, open_view
from irforge.common.files import write_json_atomic
from irforge.datasets import resolve_dataset
from irforge.runs import RUN_FORMATS


def check_runs(dataset: str | Path, runs: Iterable[str | Path] = (), *, split: str = "test", run_format: str = "auto",
               keep_identical_ids: bool = False, json_path: str | Path | None = None) -> CheckReport:
    """Check the split's qrels against the corpus and queries, and each run against all three.
    UsageError / DatasetError / DataFormatError (ValueErrors) when an input cannot be read at all;
    what is wrong *inside* readable files comes back as findings. `json_path`: the report is also
    written there, atomically (nothing half-written, no temporary left)."""
    runs = [Path(run) for run in runs]
    if run_format not in RUN_FORMATS:
        raise UsageError(f"--run-format {run_format!r}: choose one of {', '.join(RUN_FORMATS)}")
    if json_path is not None and Path(json_path).is_dir():
        raise UsageError(f"--json {json_path}: is a folder; name the file to write")
    report = check(open_view(resolve_dataset(dataset), split), runs, run_format=run_format,
                   keep_identical_ids=keep_identical_ids)
    if json_path is not None:
        write_json_atomic(json_path, report.as_dict())
    return report
