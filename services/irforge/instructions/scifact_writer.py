"""The SciFact instruction-following collection's writer: the output-folder rules, the plans
(`Item`) and the files of each dimension (corpus.jsonl, queries.jsonl, qrels_<mode>/<split>.tsv).

The algorithm that decides what to write is `irforge.instructions.scifact_build`; the command
line is `irforge build-instructions` (`irforge.cli.build_instructions_cmd`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irforge.common.output_set import OutputFolderError
from irforge.data.beir import BeirDataset
from irforge.data.types import Document

QRELS_HEADER = "query-id\tcorpus-id\tscore\n"


class ScifactBuildError(ValueError):
    """The source cannot give a collection (no query qualifies, an id clash)."""


@dataclass
class Item:
    """One kept query of one dimension: its instructions, added documents and labels."""

    query_id: str
    text: str
    changed: str
    reversed: str
    extra: dict[str, Any] = field(default_factory=dict)
    added: list[tuple[str, Document]] = field(default_factory=list)   # (after original id, document)
    labels: list[tuple[str, int, int, int]] = field(default_factory=list)  # (doc id, og, changed, reversed)



def is_earlier_build(folder: Path, builder: str) -> bool:
    try:
        return json.loads((folder / "BUILD.json").read_text(encoding="utf-8")).get("builder") == builder
    except (OSError, ValueError, AttributeError):
        return False


def check_out(source: Path, out: Path, force: bool, builder: str) -> None:
    """Refuse, before any work, an OUT that overlaps the source or the current folder, is a file,
    or is a non-empty folder (with --force: one that is not an earlier build of `builder`)."""
    src, target, cwd = source.resolve(), out.resolve(), Path.cwd().resolve()
    if target == src or src in target.parents or target in src.parents:
        raise OutputFolderError(f"--out {out} overlaps the source {source}: write the collection elsewhere")
    if target == cwd or target in cwd.parents:
        raise OutputFolderError(f"--out {out} is the current folder or holds it; the build replaces the whole folder")
    if not out.exists():
        return
    if not out.is_dir():
        raise OutputFolderError(f"--out {out} exists and is not a folder")
    if any(out.iterdir()):
        if not force:
            raise OutputFolderError(f"--out {out} exists and is not empty: give --force to replace it, "
                                    "or choose another folder")
        if not is_earlier_build(out, builder):
            raise OutputFolderError(f"--out {out} is not empty and holds no BUILD.json of an earlier build: "
                                    "--force only replaces an earlier build; choose another folder")


def json_line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=True) + "\n"


def doc_line(doc: Document) -> str:
    return json_line({"_id": doc.doc_id, "title": doc.title, "text": doc.text})


def write_corpora(dataset: BeirDataset, staging: Path, plans: dict[str, list[Item]],
                   distractors: int | None) -> dict[str, dict[str, int]]:
    """Pass 3: one stream over the SciFact corpus writes every dimension's corpus.jsonl, each added
    version right after its original; returns the counts per dimension."""
    after: dict[str, dict[str, list[Document]]] = {}
    added_ids: dict[str, set[str]] = {}
    judged: dict[str, set[str]] = {}
    for dimension, items in plans.items():
        seen: dict[str, Document] = {}
        after[dimension] = {}
        for item in items:
            for original, doc in item.added:
                if doc.doc_id in seen:  # two queries share an abstract and its version
                    if seen[doc.doc_id] != doc:  # cannot happen: an added id names its content's rule
                        raise ScifactBuildError(f"{dimension}: two different documents named {doc.doc_id!r}")
                    continue
                seen[doc.doc_id] = doc
                after[dimension].setdefault(original, []).append(doc)
        added_ids[dimension] = set(seen)
        judged[dimension] = {doc_id for item in items for doc_id, *_ in item.labels} - added_ids[dimension]
    counts = {d: {"corpus_documents": 0, "scifact_documents": 0, "distractors": 0, "added_documents": 0} for d in plans}
    handles = {}
    try:
        for dimension in plans:
            (staging / dimension).mkdir()
            handles[dimension] = open(staging / dimension / "corpus.jsonl", "w", encoding="utf-8", newline="\n")
        for doc in dataset.corpus():
            for dimension, handle in handles.items():
                if doc.doc_id in added_ids[dimension]:
                    raise ScifactBuildError(f"SciFact document id {doc.doc_id!r} is also the id of an added "
                                            f"{dimension} version")
                count = counts[dimension]
                if doc.doc_id not in judged[dimension]:
                    if distractors is not None and count["distractors"] >= distractors:
                        continue
                    count["distractors"] += 1
                handle.write(doc_line(doc))
                count["scifact_documents"] += 1
                for version in after[dimension].get(doc.doc_id, ()):
                    handle.write(doc_line(version))
                    count["added_documents"] += 1
    finally:
        for handle in handles.values():
            handle.close()
    for count in counts.values():
        count["corpus_documents"] = count["scifact_documents"] + count["added_documents"]
    return counts


def write_dimension(folder: Path, items: list[Item], modes: tuple[str, ...], split: str) -> dict[str, dict[str, int]]:
    """queries.jsonl and the qrels (`split`.tsv) of every mode of one dimension; the judgements per mode."""
    with open(folder / "queries.jsonl", "w", encoding="utf-8", newline="\n") as handle:
        for item in items:
            record: dict[str, Any] = {"_id": item.query_id, "text": item.text, "instruction_og": "",
                                      "instruction_changed": item.changed}
            if "reversed" in modes:
                record["instruction_reversed"] = item.reversed
            handle.write(json_line({**record, **item.extra}))
    judgements = {}
    for column, mode in enumerate(modes, start=1):
        (folder / f"qrels_{mode}").mkdir()
        lines = relevant = 0
        with open(folder / f"qrels_{mode}" / f"{split}.tsv", "w", encoding="utf-8", newline="\n") as handle:
            handle.write(QRELS_HEADER)
            for item in items:
                for label in item.labels:
                    handle.write(f"{item.query_id}\t{label[0]}\t{label[column]}\n")
                    lines += 1
                    relevant += label[column] >= 1
        judgements[mode] = {"judgements": lines, "relevant": relevant}
    return judgements
