"""MTEB's per-task results files, read and written as the plain JSON they are (no mteb package).

MTEB (github.com/embeddings-benchmark/mteb; published results: github.com/embeddings-benchmark/
results, CC0) writes one file per task, results/<org>__<model>/<revision>/<Task>.json, in its
TaskResult layout:

    {"dataset_revision", "task_name", "mteb_version", "evaluation_time", "kg_co2_emissions",
     "scores": {<split>: [{"hf_subset": "default", "languages": ["eng-Latn"], "main_score",
                           "ndcg_at_10", "recall_at_100", "map_at_100", "mrr_at_10", "precision_at_10", ...}]}}

Scores are fractions in [0, 1]. MTEB publishes each measure's mean over the split's queries only:
no per-query values, so a published figure can be set beside a team's mean but never tested
against it for significance (every table built here says so).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from irforge.common.files import not_a_regular_file
from irforge.results.reading import ResultsFileError

MEANS_ONLY = ("means only: MTEB publishes no per-query values, so a published figure is set beside a team's "
              "mean, never tested against it for significance")
# irforge's measure families and the key stems MTEB writes them under (mteb's RetrievalEvaluator).
FAMILIES = {"nDCG": "ndcg_at", "R": "recall_at", "AP": "map_at", "RR": "mrr_at", "P": "precision_at"}
MEASURE = re.compile(r"^(?P<family>nDCG|R|AP|RR|P)@(?P<k>\d+)$")
# The MTEB task of each BEIR dataset (mteb's task metadata names; BEIR's folder names as keys).
BEIR_TASKS = {
    "arguana": "ArguAna", "climate-fever": "ClimateFEVER", "dbpedia-entity": "DBPedia", "fever": "FEVER",
    "fiqa": "FiQA2018", "hotpotqa": "HotpotQA", "msmarco": "MSMARCO", "nfcorpus": "NFCorpus", "nq": "NQ",
    "quora": "QuoraRetrieval", "scidocs": "SCIDOCS", "scifact": "SciFact", "trec-covid": "TRECCOVID",
    "webis-touche2020": "Touche2020",
}
TASK_RESULT_KEYS = ("task_name", "scores")


def mteb_key(measure: str) -> str | None:
    """MTEB's key for an irforge measure name (nDCG@10 -> ndcg_at_10); None when MTEB has none (Judged@k)."""
    match = MEASURE.match(measure)
    return f"{FAMILIES[match['family']]}_{match['k']}" if match else None


def task_for(dataset: str | None) -> str | None:
    """The MTEB task name of a dataset irforge evaluated (its folder name, e.g. scifact -> SciFact;
    an ir_datasets name beir/scifact/test too), or None."""
    if not dataset:
        return None
    parts = [part.lower() for part in str(dataset).replace("\\", "/").split("/") if part]
    for part in parts:
        if part in BEIR_TASKS:
            return BEIR_TASKS[part]
    lowered = {task.lower(): task for task in BEIR_TASKS.values()}
    return next((lowered[part] for part in parts if part in lowered), None)


@dataclass(frozen=True)
class TaskResult:
    """One MTEB results file: the task, who it is of (from its folders), and its scores per split
    and subset."""
    file: str
    task_name: str
    model: str | None              # org/model, from results/<org>__<model>/<revision>/ when the path says
    revision: str | None
    mteb_version: str | None
    dataset_revision: str | None
    scores: dict = field(default_factory=dict)   # split -> hf_subset -> {key: value}

    def figure(self, split: str, measure: str, subset: str = "default") -> float | None:
        key = mteb_key(measure)
        value = self.scores.get(split, {}).get(subset, {}).get(key) if key else None
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def read_task_result(path: str | Path) -> TaskResult:
    """An MTEB results file in the TaskResult layout; ResultsFileError naming the file and what is wrong."""
    path = Path(path)
    kind = not_a_regular_file(path)
    if kind or not path.is_file():
        raise ResultsFileError(f"{path}: MTEB results file {'is ' + kind if kind else 'not found'}")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ResultsFileError(f"{path}: cannot be read as JSON ({error})") from None
    if not isinstance(record, dict) or any(key not in record for key in TASK_RESULT_KEYS) or not isinstance(record["scores"], dict):
        raise ResultsFileError(f"{path}: not an MTEB results file in its TaskResult layout (task_name, scores: "
                               "{split: [{hf_subset, main_score, ndcg_at_10, ...}]}; mteb >= 1.11 writes it)")
    scores: dict = {}
    for split, entries in record["scores"].items():
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ResultsFileError(f"{path}: scores.{split} must be a list of objects (one per hf_subset)")
        scores[split] = {str(e.get("hf_subset", "default")): e for e in entries}
    model, revision = _owner(path)
    return TaskResult(str(path), str(record["task_name"]), model, revision, record.get("mteb_version"),
                      record.get("dataset_revision"), scores)


def read_mteb_results(path: str | Path) -> list[TaskResult]:
    """A results file, or a folder of them (a model's revision folder: every *.json but model_meta.json)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.json") if p.name != "model_meta.json")
        if not files:
            raise ResultsFileError(f"{path}: no MTEB results files (*.json) in this folder")
        return [read_task_result(p) for p in files]
    return [read_task_result(path)]


def _owner(path: Path) -> tuple[str | None, str | None]:
    """(org/model, revision) from MTEB's results/<org>__<model>/<revision>/<Task>.json."""
    revision_folder, model_folder = path.resolve().parent, path.resolve().parent.parent
    if "__" in model_folder.name:
        return model_folder.name.replace("__", "/", 1), revision_folder.name
    return None, None


def task_result_record(results: dict, task_name: str, split: str | None = None, language: str = "eng-Latn") -> dict:
    """One irforge results.json as an MTEB TaskResult file's content: every measure MTEB has a key
    for, main_score = nDCG@10 (MTEB's main score for retrieval) when evaluated. irforge records no
    dataset revision or mteb version: null, said so in `irforge`."""
    metrics = results.get("metrics") or {}
    entry = {"hf_subset": "default", "languages": [language]}
    if "nDCG@10" in metrics:
        entry["main_score"] = metrics["nDCG@10"]
    entry.update({key: value for name, value in metrics.items() if (key := mteb_key(name))})
    return {"dataset_revision": None, "evaluation_time": (results.get("timings") or {}).get("total_s"),
            "kg_co2_emissions": None, "mteb_version": None,
            "scores": {split or results.get("split") or "test": [entry]}, "task_name": task_name,
            "irforge": {"written_by": "irforge (not mteb): dataset_revision and mteb_version are unknown to it",
                        "dataset": results.get("dataset"), "corpus_fingerprint_sha256": (results.get("data") or {}).get("corpus_fingerprint_sha256"),
                        "retriever": (results.get("retriever") or {}).get("name")}}


def beside_published(rows: list[dict], published: list[TaskResult]) -> dict:
    """A team's figures beside MTEB's published ones: `rows` are {system, dataset, split, metrics}
    (a system's own means on a dataset); each row whose dataset maps to a task in `published` gets,
    per measure MTEB has, the team's value, MTEB's and the difference. Means only (MEANS_ONLY)."""
    by_task: dict[str, TaskResult] = {}
    for result in published:
        by_task.setdefault(result.task_name, result)
    lines, unmatched = [], []
    for row in rows:
        task = task_for(row.get("dataset"))
        result = by_task.get(task) if task else None
        if result is None:
            unmatched.append(f"{row['system']} on {row.get('dataset')}: no MTEB task {'named ' + task if task else 'known for it'} "
                             "in the MTEB files given")
            continue
        split = row.get("split") or "test"
        for measure, value in row["metrics"].items():
            figure = result.figure(split, measure)
            if figure is not None and isinstance(value, (int, float)):
                lines.append({"system": row["system"], "dataset": row.get("dataset"), "task": task, "split": split,
                              "measure": measure, "team": float(value), "mteb": figure, "difference": float(value) - figure,
                              "mteb_model": result.model, "mteb_revision": result.revision, "mteb_file": result.file})
    return {"source": "MTEB", "note": MEANS_ONLY, "rows": lines, "unmatched": unmatched,
            "files": sorted({r.file for r in published})}


def beside_text(beside: dict) -> str:
    """The side-by-side table as printed text."""
    out = [f"published MTEB figures ({beside['note']})"]
    if beside["rows"]:
        out.append(f"  {'system':<16} {'task':<12} {'split':<6} {'measure':<8} {'team':>7} {'MTEB':>7} {'diff':>8}  MTEB model")
        for r in beside["rows"]:
            model = f"{r['mteb_model'] or '?'}@{(r['mteb_revision'] or '?')[:8]}"
            out.append(f"  {r['system'][:16]:<16} {r['task']:<12} {r['split']:<6} {r['measure']:<8} {r['team']:>7.4f} "
                       f"{r['mteb']:>7.4f} {r['difference']:>+8.4f}  {model}")
    out.extend(f"  not shown: {line}" for line in beside["unmatched"])
    return "\n".join(out) + "\n"
