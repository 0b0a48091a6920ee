"""AIR-Bench's dataset layout, told apart from BEIR's by its file names, never guessed line by line.

AIR-Bench (github.com/AIR-Bench/AIR-Bench, MIT) publishes each dataset on the Hugging Face Hub as
`AIR-Bench/<task>_<domain>_<language>` with, per benchmark version and dataset name, a folder
`AIR-Bench_24.05/<dataset_name>/` of JSON lines files; the qrels come from a second repository
(`AIR-Bench/qrels-<task>_<domain>_<language>-dev`; test qrels are private, scored by the
leaderboard). Put together in one folder:

    corpus.jsonl             {"id", "text"}           (a `title` is used when there is one)
    <split>_queries.jsonl    {"id", "text"}           (dev_queries.jsonl, test_queries.jsonl)
    <split>_qrels.jsonl      {"qid", "docid", "relevance"}

(air_benchmark/evaluation_utils/data_loader.py reads exactly these fields.) A folder is read as
AIR-Bench when it has a corpus.jsonl and `<split>_queries.jsonl` files and neither BEIR's
queries.jsonl nor its qrels/ folder; the layout is recorded in results.json (`data.layout`). Ids
are `id`, and an AIR-Bench line without `id` is refused as BEIR's reader refuses one without `_id`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from irforge.data.entries import EntryError, add_judgement
from irforge.data.errors import DataFormatError
from irforge.data.qrels import parse_relevance
from irforge.data.textfile import numbered_lines
from irforge.data.types import Qrels

QUERIES_FILE = re.compile(r"^(?P<split>[A-Za-z0-9][A-Za-z0-9._-]*)_queries\.jsonl(\.gz)?$")
QRELS_FIELDS = ("qid", "docid", "relevance")


@dataclass(frozen=True)
class Layout:
    name: str          # recorded in results.json
    id_key: str        # the field naming a document or query
    description: str   # in words, for results.json and messages


BEIR = Layout("BEIR", "_id", "BEIR: corpus.jsonl and queries.jsonl with `_id`, qrels/<split>.tsv")
AIRBENCH = Layout("AIR-Bench", "id", "AIR-Bench: corpus.jsonl, <split>_queries.jsonl with `id`, "
                                     "<split>_qrels.jsonl with qid, docid, relevance")


def _exists(folder: Path, stem: str) -> bool:
    return (folder / stem).exists() or (folder / f"{stem}.gz").exists()


def airbench_query_files(folder: Path) -> dict[str, Path]:
    """{split: its queries file} of an AIR-Bench folder, by split name."""
    found = {}
    for path in sorted(folder.iterdir()) if folder.is_dir() else ():
        match = QUERIES_FILE.match(path.name)
        if match:
            found.setdefault(match["split"], path)
    return found


def layout_of(folder: str | Path) -> Layout:
    """AIRBENCH for a folder in AIR-Bench's layout (see the module's docstring), else BEIR (whose
    reader then says what is missing)."""
    folder = Path(folder)
    if _exists(folder, "queries.jsonl") or (folder / "qrels").is_dir():
        return BEIR
    return AIRBENCH if airbench_query_files(folder) else BEIR


def airbench_qrels_path(folder: Path, split: str) -> Path | None:
    return next((p for p in (folder / f"{split}_qrels.jsonl", folder / f"{split}_qrels.jsonl.gz") if p.exists()), None)


def airbench_splits(folder: Path) -> list[str]:
    return sorted(p.name.split("_qrels.jsonl")[0] for p in folder.glob("*_qrels.jsonl*"))


def _id(value) -> str | None:
    """A qrels id as text (AIR-Bench's are strings; a number is taken as its digits), else None."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return str(value).strip() or None


def read_airbench_qrels(path: str | Path) -> Qrels:
    """AIR-Bench's qrels: one {"qid", "docid", "relevance"} object per line (relevance 0 marks
    the hard negatives AIR-Bench labels)."""
    path = Path(path)
    qrels: Qrels = {}
    first_lines: dict[tuple[str, str], int] = {}
    for line_number, line in numbered_lines(path, "qrels file"):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataFormatError(path, f"malformed JSON ({error.msg} at column {error.colno})", line_number) from None
        if not isinstance(row, dict) or any(key not in row for key in QRELS_FIELDS):
            raise DataFormatError(path, "expected a JSON object with qid, docid and relevance (AIR-Bench qrels)", line_number)
        query_id, doc_id = _id(row["qid"]), _id(row["docid"])
        if not query_id or not doc_id:
            raise DataFormatError(path, "qid and docid must be non-empty strings", line_number)
        relevance = parse_relevance(path, str(row["relevance"]), line_number)
        try:
            add_judgement(qrels, query_id, doc_id, relevance, first_lines, line_number)
        except EntryError as error:
            raise DataFormatError(path, str(error), line_number) from None
    return qrels


# What AIR-Bench's submission files name (air_benchmark/evaluation_utils/evaluator.py, save_search_results).
FACT_KEYS = ("task_type", "domain", "language", "dataset_name", "benchmark_version")
VERSION_FOLDER = re.compile(r"^AIR-Bench_\d\d\.\d\d$")
# The Hub repository AIR-Bench/<task>_<domain>_<language>, as a folder name or in the Hub cache's
# datasets--AIR-Bench--<task>_<domain>_<language>.
REPOSITORY_FOLDER = re.compile(r"^(?:datasets--AIR-Bench--)?(?P<task_type>qa|long-doc)_(?P<domain>[a-z0-9-]+)_(?P<language>[a-z]{2})$")


def airbench_facts(folder: str | Path) -> dict:
    """The dataset's task type, domain, language, dataset name and benchmark version: from
    dataset.json's `airbench` mapping, else from the folders of the Hub's layout
    (.../<task>_<domain>_<language>/.../AIR-Bench_24.05/<dataset_name>). DataFormatError naming
    what is missing: a submission file without them would be filed under the wrong task."""
    folder = Path(folder).resolve()
    facts: dict = {}
    if VERSION_FOLDER.match(folder.parent.name):
        facts.update(dataset_name=folder.name, benchmark_version=folder.parent.name)
    for ancestor in folder.parents:
        match = REPOSITORY_FOLDER.match(ancestor.name)
        if match:
            facts.update(match.groupdict())
            break
    facts["found_in"] = "folder names" if facts else None
    declared = _declared(folder)
    if declared:
        facts.update(declared, found_in="dataset.json" if len(declared) == len(FACT_KEYS) else "dataset.json and folder names")
    missing = [key for key in FACT_KEYS if not facts.get(key)]
    if missing:
        raise DataFormatError(folder / "dataset.json", f"AIR-Bench's submission needs {', '.join(missing)} of this dataset: "
                              "name them in dataset.json as {\"airbench\": {\"task_type\": \"qa\", \"domain\": \"arxiv\", "
                              "\"language\": \"en\", \"dataset_name\": \"default\", \"benchmark_version\": \"AIR-Bench_24.05\"}} "
                              "(or keep the Hub's folders: <task>_<domain>_<language>/AIR-Bench_24.05/<dataset_name>)")
    return facts


def _declared(folder: Path) -> dict:
    path = folder / "dataset.json"
    if not path.is_file():
        return {}
    try:
        declared = json.loads(path.read_text(encoding="utf-8")).get("airbench") or {}
    except (OSError, ValueError, AttributeError) as error:
        raise DataFormatError(path, f"cannot be read as a JSON object ({error})") from None
    if not isinstance(declared, dict) or any(key not in FACT_KEYS or not isinstance(value, str) for key, value in declared.items()):
        raise DataFormatError(path, f"`airbench` must map some of {', '.join(FACT_KEYS)} to strings")
    return declared
