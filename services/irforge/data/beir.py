"""Streaming readers for BEIR collections: corpus.jsonl, queries.jsonl, qrels/<split>.tsv (+ .gz)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irforge.common.allowed_roots import checked
from irforge.common.files import file_sha256
from irforge.data.airbench import (AIRBENCH, BEIR, Layout, airbench_qrels_path, airbench_query_files, airbench_splits,
                                   layout_of, read_airbench_qrels)
from irforge.data.entries import EntryError, add_judgement
from irforge.data.errors import DataFormatError
from irforge.data.qrels import parse_relevance
from irforge.data.textfile import numbered_lines, regular_input
from irforge.data.types import Document, Qrels, Query

QRELS_HEADER = ("query-id", "corpus-id", "score")
# A \uD800-\uDFFF escape: half of a UTF-16 pair, which json.loads turns into a lone surrogate
# unless its other half follows. Only lines holding one are searched (a pre-filter, cheap).
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _parse_line(path: Path, line_number: int, line: str, kind: str, id_key: str = "_id") -> tuple[dict[str, Any], str]:
    """One JSON line's object and its id (`_id`, or `id` in AIR-Bench's layout); rejects malformed
    JSON and missing or unusable ids."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as error:
        raise DataFormatError(path, f"malformed JSON ({error.msg} at column {error.colno})", line_number) from None
    if not isinstance(obj, dict):
        raise DataFormatError(path, f"expected a JSON object per line, got {type(obj).__name__}", line_number)
    if SURROGATE_ESCAPE.search(line):
        _refuse_lone_surrogates(path, line_number, obj)
    raw_id = obj.get(id_key)
    if raw_id is None or (isinstance(raw_id, str) and not raw_id.strip()):
        other = "id" if id_key == "_id" else "_id"
        hint = (f" (it has `{other}`: {'AIR-Bench' if other == 'id' else 'BEIR'}'s field; this folder is read as "
                f"{'BEIR' if id_key == '_id' else 'AIR-Bench'} by its file names)") if other in obj else ""
        raise DataFormatError(path, f"{kind} has no `{id_key}`{hint}", line_number)
    if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool):
        raise DataFormatError(path, f"`{id_key}` must be a string, got {json.dumps(raw_id)}", line_number)
    item_id = str(raw_id)
    if any(c.isspace() for c in item_id):
        # TREC run and qrels files are whitespace-separated: such an id could never be scored.
        raise DataFormatError(path, f"`{id_key}` {item_id!r} contains whitespace", line_number)
    return obj, item_id


def _lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate in a JSON value's strings (keys included), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            return value[error.start]
        return None
    if isinstance(value, dict):
        items = [*value.keys(), *value.values()]
    elif isinstance(value, list):
        items = value
    else:
        return None
    return next((found for item in items if (found := _lone_surrogate(item)) is not None), None)


def _refuse_lone_surrogates(path: Path, line_number: int, obj: dict[str, Any]) -> None:
    """Refuse, here where it is read, a string no UTF-8 writer accepts: kept, it failed much later
    (writing run.trec, sending to a service) with a UnicodeEncodeError and no line to look at."""
    for name, value in obj.items():
        found = _lone_surrogate(value) or _lone_surrogate(name)
        if found is not None:
            shown = name.encode("utf-8", "backslashreplace").decode()  # the message itself must encode
            raise DataFormatError(
                path, f"`{shown}` contains a lone surrogate {found!r} (half of a UTF-16 \\u escape pair), "
                      "which is not valid Unicode", line_number)


def _id_key(path: Path) -> str:
    """The id field of a corpus or queries file: the layout of the folder it is in says it."""
    return layout_of(path.parent).id_key


def _json_objects(path: Path, kind: str) -> Iterator[tuple[int, dict[str, Any], str]]:
    """(line number, object, its id) per line; rejects malformed JSON, missing and duplicate ids."""
    seen: dict[str, int] = {}
    id_key = _id_key(path)
    for line_number, line in numbered_lines(path, "corpus file" if kind == "document" else "queries file"):
        obj, item_id = _parse_line(path, line_number, line, kind, id_key)
        if item_id in seen:
            raise DataFormatError(path, f"duplicate {kind} id {item_id!r} (first seen on line {seen[item_id]})", line_number)
        seen[item_id] = line_number
        yield line_number, obj, item_id


def _text_field(path: Path, obj: dict[str, Any], name: str, line_number: int) -> str:
    value = obj.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DataFormatError(path, f"`{name}` must be a string, got {type(value).__name__}", line_number)
    return value


def _metadata(path: Path, obj: dict[str, Any], line_number: int) -> dict[str, Any]:
    value = obj.get("metadata") or {}
    if not isinstance(value, dict):
        raise DataFormatError(path, f"`metadata` must be an object, got {type(value).__name__}", line_number)
    return value


def _document(path: Path, line_number: int, obj: dict[str, Any], doc_id: str) -> Document:
    return Document(
        doc_id=doc_id,
        title=_text_field(path, obj, "title", line_number),
        text=_text_field(path, obj, "text", line_number),
        metadata=_metadata(path, obj, line_number),
    )


def iter_corpus(path: str | Path) -> Iterator[Document]:
    """Stream documents from a BEIR corpus.jsonl(.gz), one at a time."""
    path = Path(path)
    for line_number, obj, doc_id in _json_objects(path, "document"):
        yield _document(path, line_number, obj, doc_id)


def parse_document_line(path: str | Path, line_number: int, line: str) -> Document:
    """One corpus line as iter_corpus reads it, for readers that skip to a range of lines (shard
    workers): the same checks, except for duplicate ids, which need the whole stream."""
    path = Path(path)
    return _document(path, line_number, *_parse_line(path, line_number, line, "document", _id_key(path)))


def iter_queries(path: str | Path) -> Iterator[Query]:
    """Stream queries from a BEIR queries.jsonl(.gz)."""
    path = Path(path)
    for line_number, obj, query_id in _json_objects(path, "query"):
        text = _text_field(path, obj, "text", line_number)
        if not text.strip():
            raise DataFormatError(path, f"query {query_id!r} has no text", line_number)
        yield Query(query_id=query_id, text=text, metadata=_metadata(path, obj, line_number))


def qrels_fields(line: str) -> list[str]:
    """A qrels line's fields: split on tabs when it has any (ids may hold spaces), else on whitespace."""
    return line.split("\t") if "\t" in line else line.split()


def is_qrels_header(fields: list[str]) -> bool:
    """Whether a line's fields are BEIR's qrels header "query-id corpus-id score"."""
    return tuple(f.strip().lower() for f in fields) == QRELS_HEADER


def read_beir_qrels(path: str | Path) -> Qrels:
    """Read a BEIR qrels TSV: an optional "query-id corpus-id score" header, then one judgement per line."""
    path = Path(path)
    qrels: Qrels = {}
    first_lines: dict[tuple[str, str], int] = {}
    for line_number, line in numbered_lines(path, "qrels file"):
        fields = qrels_fields(line)
        if not first_lines and is_qrels_header(fields):
            continue
        if len(fields) != 3:
            raise DataFormatError(path, f"expected 3 tab-separated fields (query-id, corpus-id, score), got {len(fields)}", line_number)
        query_id, doc_id = fields[0].strip(), fields[1].strip()
        if not query_id or not doc_id:
            raise DataFormatError(path, "empty query-id or corpus-id", line_number)
        relevance = parse_relevance(path, fields[2], line_number)
        try:
            add_judgement(qrels, query_id, doc_id, relevance, first_lines, line_number)
        except EntryError as error:
            raise DataFormatError(path, str(error), line_number) from None
    if not qrels:
        raise DataFormatError(path, "no judgements (only a header)")
    return qrels


def _first_existing(*candidates: Path) -> Path | None:
    """The first candidate that is there; a FIFO or a folder counts (its reader says what it is,
    rather than "not found")."""
    return next((c for c in candidates if c.exists()), None)


@dataclass(frozen=True)
class BeirDataset:
    """A BEIR-layout folder, or one in AIR-Bench's layout (irforge.data.airbench: told apart by
    its file names, `layout` says which). Files may be plain or gzip-compressed."""

    root: Path
    layout: Layout = BEIR

    @classmethod
    def open(cls, root: str | Path) -> "BeirDataset":
        root = checked(root, "dataset folder")
        if not root.is_dir():
            raise DataFormatError(root, "dataset folder not found")
        dataset = cls(root, layout_of(root))
        _ = dataset.corpus_path  # fail early with a clear message
        return dataset

    @property
    def name(self) -> str:
        return self.root.resolve().name

    # Each path is checked against the allowed roots when asked for, i.e. right before it is opened.
    def _required(self, stem: str) -> Path:
        found = _first_existing(self.root / stem, self.root / f"{stem}.gz")
        if found is None:
            raise DataFormatError(self.root / stem, "file not found (nor a .gz)")
        return regular_input(checked(found, "dataset file"), f"dataset's {stem}")

    @property
    def corpus_path(self) -> Path:
        return self._required("corpus.jsonl")

    @property
    def queries_path(self) -> Path:
        """queries.jsonl; in AIR-Bench's layout the first <split>_queries.jsonl (queries() reads them all)."""
        if self.layout is AIRBENCH:
            return self.queries_paths[0]
        return self._required("queries.jsonl")

    @property
    def queries_paths(self) -> tuple[Path, ...]:
        """Every queries file: queries.jsonl, or each <split>_queries.jsonl of AIR-Bench's layout."""
        if self.layout is AIRBENCH:
            files = airbench_query_files(self.root)
            return tuple(regular_input(checked(path, "dataset file"), f"dataset's {split} queries") for split, path in files.items())
        return (self.queries_path,)

    def qrels_path(self, split: str) -> Path:
        if self.layout is AIRBENCH:
            found = airbench_qrels_path(self.root, split)
            if found is None:
                raise DataFormatError(self.root / f"{split}_qrels.jsonl",
                                      f"split {split!r} not found (AIR-Bench layout: <split>_qrels.jsonl); available: "
                                      f"{', '.join(airbench_splits(self.root)) or 'none'} (AIR-Bench keeps its test qrels "
                                      "private: test results are scored by its leaderboard, see --airbench-submission)")
            return regular_input(checked(found, "dataset file"), f"dataset's {split} qrels")
        found = _first_existing(self.root / "qrels" / f"{split}.tsv", self.root / "qrels" / f"{split}.tsv.gz")
        if found is None:
            splits = sorted(p.name.split(".")[0] for p in (self.root / "qrels").glob("*.tsv*"))
            raise DataFormatError(self.root / "qrels" / f"{split}.tsv", f"split {split!r} not found; available: {', '.join(splits) or 'none'}")
        return regular_input(checked(found, "dataset file"), f"dataset's {split} qrels")

    def corpus(self) -> Iterator[Document]:
        return iter_corpus(self.corpus_path)

    def queries(self) -> Iterator[Query]:
        if self.layout is AIRBENCH:
            return _queries_of_files(self.queries_paths)
        return iter_queries(self.queries_path)

    def split_queries(self, split: str) -> Iterator[Query]:
        """AIR-Bench's layout: the queries of one split (<split>_queries.jsonl), judged or not
        (its test qrels are private); DataFormatError when the split has none."""
        found = airbench_query_files(self.root).get(split) if self.layout is AIRBENCH else None
        if found is None:
            raise DataFormatError(self.root / f"{split}_queries.jsonl", f"no queries file for split {split!r} "
                                  f"({self.layout.name} layout)")
        return iter_queries(regular_input(checked(found, "dataset file"), f"dataset's {split} queries"))

    def qrels(self, split: str) -> Qrels:
        """The split's judgements; refused when none of its queries is in queries.jsonl, as no
        query of the split could then be evaluated (found here, before any indexing work)."""
        path = self.qrels_path(split)
        qrels = read_airbench_qrels(path) if self.layout is AIRBENCH else read_beir_qrels(path)
        if not qrels:
            raise DataFormatError(path, "no judgements")
        self._check_some_query_known(path, qrels)
        return qrels

    def _check_some_query_known(self, path: Path, qrels: Qrels, examples: int = 3) -> None:
        # Stops at the first known query: in a usable split that is within the first few lines.
        seen: list[str] = []
        for query in self.queries():
            if query.query_id in qrels:
                return
            if len(seen) < examples:
                seen.append(query.query_id)
        shown = ", ".join(repr(q) for q in sorted(qrels)[:examples]) + (", ..." if len(qrels) > examples else "")
        name = self.queries_path.name
        raise DataFormatError(
            path, f"none of the {len(qrels)} queries of the qrels is in {name} (qrels: {shown}; "
                  f"{name}: {', '.join(repr(q) for q in seen)}{', ...' if len(seen) == examples else ''}); "
                  "check that both files use the same query ids")

    def corpus_fingerprint(self) -> str:
        """SHA-256 of the corpus file's bytes (streamed): a changed corpus gets a new index."""
        return file_sha256(self.corpus_path)


def _queries_of_files(paths: tuple[Path, ...]) -> Iterator[Query]:
    """The queries of several files (AIR-Bench's one per split) as one stream: an id in two files
    is refused unless its text is the same (one query listed twice, not two queries under one id)."""
    seen: dict[str, tuple[Path, str]] = {}
    for path in paths:
        for query in iter_queries(path):
            first = seen.setdefault(query.query_id, (path, query.text))
            if first[0] == path:
                yield query
            elif first[1] != query.text:
                raise DataFormatError(path, f"query id {query.query_id!r} is also in {first[0].name} with another text")
