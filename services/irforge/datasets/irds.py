"""`--dataset irds:NAME`: a dataset of the ir_datasets package, read from its local cache.

ir_datasets (pip install 'irforge[irds]') knows hundreds of collections by name and keeps what it
downloads under IR_DATASETS_HOME (default ~/.ir_datasets). irforge never downloads at run time:
while the dataset is read, ir_datasets' downloader is replaced by a refusal, so a dataset whose
files are not in the cache is a DatasetError naming the file it lacks, where it would go and the
command that fetches it on a connected machine (then copy that folder here).

The dataset is written once as a BEIR folder below the datasets folder (`irds/NAME/`: corpus.jsonl,
queries.jsonl, qrels/<split>.tsv), so every command reads it as any BEIR folder; `source.json` in
it records the name, the ir_datasets version and the counts (results.json's `data.source`). The
split is the last segment of the name that names one (train, dev, test, validation...; `test`
for a name with none: the dataset's qrels as a whole): `irds:beir/scifact/test` -> qrels/test.tsv.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

from irforge.datasets.errors import DatasetError

PREFIX = "irds:"
SOURCE_FILE = "source.json"
SPLIT_WORDS = ("train", "dev", "test", "validation", "valid", "eval")
INSTALL = "pip install 'irforge[irds]' (the ir_datasets package)"


class NotCached(DatasetError):
    """A file ir_datasets would download is not in its cache."""


def is_irds(value) -> bool:
    return str(value).startswith(PREFIX)


def split_of(name: str) -> tuple[str, str]:
    """(split, how it was found) for an ir_datasets name."""
    parts = name.split("/")
    found = next((part for part in reversed(parts[1:]) if part in SPLIT_WORDS), None)
    if found is not None:
        return found, f"the name's segment {found!r}"
    return "test", "the name has no split segment: its qrels as a whole, under 'test'"


def source_facts(root: str | Path) -> dict | None:
    """source.json of a folder made from ir_datasets, else None."""
    path = Path(root) / SOURCE_FILE
    if not path.is_file():
        return None
    try:
        facts = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return facts if isinstance(facts, dict) and facts.get("format") == "ir_datasets" else None


def resolve_irds(value: str, datasets_dir: Path) -> Path:
    """The BEIR folder of `irds:NAME`, written from ir_datasets' cache the first time."""
    name = value[len(PREFIX):].strip().strip("/")
    if not name or any(part in ("", ".", "..") for part in name.split("/")):
        raise DatasetError(f"{value}: expected irds:NAME with an ir_datasets name, e.g. irds:beir/scifact/test")
    folder = datasets_dir / "irds" / name
    irds = _import(value)
    version = metadata.version("ir_datasets")
    facts = source_facts(folder)
    if facts is not None and facts.get("name") == name and facts.get("ir_datasets_version") == version:
        return folder
    dataset = _load(irds, value, name)
    split, how = split_of(name)
    top = datasets_dir / "irds"
    top.mkdir(parents=True, exist_ok=True)   # the copy's own folders only once it is complete
    staging = Path(tempfile.mkdtemp(prefix=f".{name.replace('/', '-')}.irforge-", suffix=".staging", dir=top))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)   # mkdtemp's 0700 would make the copy unreadable to others
    try:
        with _no_downloads(value, name):
            counts = _write_beir(dataset, staging, split)
        facts = {"format": "ir_datasets", "name": name, "ir_datasets_version": version, "split": split,
                 "split_from": how, "ir_datasets_home": str(irds.util.home_path()), **counts}
        (staging / SOURCE_FILE).write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)   # an older copy (another ir_datasets version): replaced whole
        folder.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _import(value: str):
    try:
        import ir_datasets
    except ImportError:
        raise DatasetError(f"{value}: reading ir_datasets needs the ir_datasets package: {INSTALL}") from None
    return ir_datasets


def _load(irds, value: str, name: str):
    try:
        dataset = irds.load(name)
    except KeyError:
        names = list(irds.registry._registered)
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise DatasetError(f"{value}: {name!r} is not an ir_datasets dataset{hint} (ir_datasets.readthedocs.io lists them)") from None
    missing = [part for part in ("docs", "queries", "qrels") if not getattr(dataset, f"has_{part}")()]
    if missing:
        raise DatasetError(f"{value}: ir_datasets' {name} has no {', '.join(missing)}; irforge evaluates a dataset with "
                           "documents, queries and qrels (pick the sub-dataset that has them, e.g. NAME/test)")
    return dataset


@contextlib.contextmanager
def _no_downloads(value: str, name: str):
    """ir_datasets with its downloader replaced by a refusal naming the missing file: irforge
    never downloads at run time (a file already in the cache is read as ir_datasets reads it)."""
    from ir_datasets.util import download, home_path

    original = download.Download.path

    def cached_only(self, force=True):
        cache = getattr(self, "_cache_path", None)
        local = [m for m in self.mirrors if isinstance(m, download.LocalDownload) and m.path(force=False).exists()]
        if not force or getattr(self, "_path", None) is not None or (cache and os.path.exists(cache)) or local:
            return original(self, force)
        urls = [m.url for m in self.mirrors if hasattr(m, "url")]
        raise NotCached(f"{value}: not in the ir_datasets cache ({home_path()}): "
                        f"it needs {cache or 'a file'}{' from ' + urls[0] if urls else ''}. irforge does not download at "
                        f"run time; on a machine with internet run: python -c \"import ir_datasets; "
                        f"d = ir_datasets.load('{name}'); [None for _ in d.docs_iter()]; [None for _ in d.queries_iter()]; "
                        f"[None for _ in d.qrels_iter()]\" (or: ir_datasets export {name} docs > /dev/null, likewise "
                        "queries and qrels), then copy its IR_DATASETS_HOME folder to this machine's IR_DATASETS_HOME")

    download.Download.path = cached_only
    try:
        yield
    finally:
        download.Download.path = original


def _text(item, field: str) -> str:
    value = getattr(item, field, None)
    return value if isinstance(value, str) else ""


def _write_beir(dataset, folder: Path, split: str) -> dict:
    """corpus.jsonl, queries.jsonl and qrels/<split>.tsv of `dataset` in `folder`; the counts."""
    (folder / "qrels").mkdir()
    documents = queries = judgements = 0
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for doc in dataset.docs_iter():
            # title and text apart when the dataset has both (irforge indexes title + " " + text);
            # else the dataset's own default text
            text = _text(doc, "text") if "text" in doc._fields else doc.default_text()
            out.write(json.dumps({"_id": doc.doc_id, "title": _text(doc, "title"), "text": text}, ensure_ascii=False) + "\n")
            documents += 1
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as out:
        for query in dataset.queries_iter():
            text = _text(query, "text") if "text" in query._fields else query.default_text()
            out.write(json.dumps({"_id": query.query_id, "text": text}, ensure_ascii=False) + "\n")
            queries += 1
    with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for qrel in dataset.qrels_iter():
            out.write(f"{qrel.query_id}\t{qrel.doc_id}\t{qrel.relevance}\n")
            judgements += 1
    return {"documents": documents, "queries": queries, "qrels_judgements": judgements}
