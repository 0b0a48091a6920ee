"""A bench's runs in AIR-Bench's submission layout (`irforge bench --airbench-submission DIR`).

AIR-Bench's evaluation writes one file per dataset and split (air_benchmark/evaluation_utils/
evaluator.py, save_search_results; docs/submit_to_leaderboard.md shows the tree):

    DIR/<model>/<reranker or NoReranker>/<task_type>/<domain>/<language>_<dataset_name>_<split>.json
        {"model_name", "reranker_name", "benchmark_version", "task_type", "domain", "language",
         "dataset_name", "split", "search_results": {qid: {docid: score}}}

and its scripts/zip_results.py zips DIR/<model>/<reranker>/ (relative paths, *_dev.json left out:
the dev qrels are public, the leaderboard scores test) into <model>_<reranker>.zip, the file the
leaderboard takes. Both are written here from each dataset's run.trec, which holds every
retrieved document with its score (ties are broken by trec_eval's rule, the one pytrec_eval, which
AIR-Bench scores with, applies to the same scores).
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from irforge.common.files import atomic_write, write_json_atomic
from irforge.data.airbench import AIRBENCH, airbench_facts, layout_of
from irforge.runs.reading import read_run_file

NO_RERANKER = "NoReranker"   # AIR-Bench's name for a retrieval-only system


class SubmissionError(ValueError):
    """A bench whose datasets or names cannot make an AIR-Bench submission; the message says why."""


@dataclass(frozen=True)
class Submission:
    folder: Path          # DIR
    model: str
    reranker: str


def _model_of(description: dict) -> str:
    model = description.get("model") or (description.get("encoder") or {}).get("model") if isinstance(description, dict) else None
    return Path(str(model)).name if model else str(description.get("name", "irforge"))


def system_names(description: dict) -> tuple[str, str]:
    """(model, reranker) AIR-Bench's tree is named by, from results.json's `retriever`: a reranked
    system's first stage and reranker, else the retriever and NoReranker."""
    if "first_stage" in description:
        return _model_of(description["first_stage"]), _model_of(description.get("reranker") or {})
    return _model_of(description), NO_RERANKER


def check_names(model: str, reranker: str) -> None:
    for what, name in (("model", model), ("reranker", reranker)):
        if not name or name in (".", "..") or "/" in name or os.sep in name:
            raise SubmissionError(f"--airbench-{what} {name!r}: AIR-Bench names a folder after it (no '/', not empty)")


def check_dataset(folder: str | Path, label: str) -> dict:
    """The dataset's AIR-Bench facts, before any work: refused when it is not in AIR-Bench's layout."""
    layout = layout_of(folder)
    if layout is not AIRBENCH:
        raise SubmissionError(f"dataset {label!r} ({folder}) is in {layout.name}'s layout, not AIR-Bench's: AIR-Bench's "
                              "leaderboard scores its own datasets only (corpus.jsonl, <split>_queries.jsonl with `id`)")
    try:
        return airbench_facts(folder)
    except ValueError as error:
        raise SubmissionError(f"dataset {label!r}: {error}") from None


def write_submission(submission: Submission, bench_out: Path, datasets: list[dict]) -> list[Path]:
    """One file per dataset of suite.json's `datasets` (label, path, split), and the zip of the
    non-dev files when there are any; the paths written."""
    base = submission.folder / submission.model / submission.reranker
    written = []
    for entry in datasets:
        facts = check_dataset(entry["path"], entry["label"])
        given = read_run_file(bench_out / entry["label"] / "run.trec", "trec")
        record = {"model_name": submission.model, "reranker_name": submission.reranker,
                  **{key: facts[key] for key in ("benchmark_version", "task_type", "domain", "language", "dataset_name")},
                  "split": entry["split"], "search_results": given.run}
        name = f"{facts['language']}_{facts['dataset_name']}_{entry['split']}.json"
        written.append(write_json_atomic(base / facts["task_type"] / facts["domain"] / name, record))
    submitted = sorted(path for path in base.rglob("*.json") if not path.name.endswith("dev.json"))
    if submitted:
        zip_path = submission.folder / f"{submission.model}_{submission.reranker}.zip"
        with atomic_write(zip_path, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in submitted:
                archive.write(path, path.relative_to(base).as_posix())
        written.append(zip_path)
    return written
