"""Instruction-following collections read in their own layouts, told apart by their files.

    infosearch   corpus.jsonl, queries.jsonl (`instruction_og`, `instruction_changed`,
                 `instruction_reversed`), qrels_og/, qrels_changed/, qrels_reversed/<split>.tsv
    followir     the same with og and changed only; an optional top_ranked.jsonl (candidate lists)
    instructir   plain BEIR files (qrels/<split>.tsv) whose query ids are all `<base>_<n>`; a query's
                 optional `instruction` is composed with its text; one mode, "instructed"

A folder with no collection files at the top and one sub-folder per dimension (all of one layout)
holds several collections, one per dimension, sorted by name.

`open_instruction_collections` checks the layout (files present, the split present in every mode,
InstructIR's query ids) before any work; query and qrels contents are read when first asked for,
with the BEIR readers' checks and file:line errors.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from irforge.common.allowed_roots import checked
from irforge.data.beir import BeirDataset, _first_existing, _json_objects, _metadata, _text_field, read_beir_qrels
from irforge.data.errors import DataFormatError
from irforge.data.types import Qrels

MODES = ("og", "changed", "reversed")
INSTRUCTED = "instructed"  # InstructIR's one mode
LAYOUT_MODES: dict[str, tuple[str, ...]] = {
    "infosearch": MODES,
    "followir": ("og", "changed"),
    "instructir": (INSTRUCTED,),
}
# Query fields kept for results when present.
EXTRA_FIELDS = ("dimension", "keywords", "short_query", "metadata")
MODE_QRELS_DIRS = tuple(f"qrels_{mode}" for mode in MODES)
QRELS_DIRS = ("qrels", *MODE_QRELS_DIRS)
VARIANT_ID = re.compile(r"^(.+)_([0-9]+)$")  # greedy: base is the part before the last underscore
EXAMPLES = 3


@dataclass(frozen=True)
class InstructionQuery:
    query_id: str
    text: str  # the query without any instruction (InstructIR without `instruction`: the whole text)
    instructions: dict[str, str]  # mode -> instruction text for that mode ("" allowed)
    group: str  # base query id for Robustness@k (instructir), else query_id
    fields: dict  # optional extras kept for results: dimension, keywords, short_query, metadata

    def text_for(self, mode: str) -> str:
        """The text sent to a model in `mode`: query + " " + instruction (InfoSearch's rule), stripped."""
        return f"{self.text} {self.instructions[mode]}".strip()


@dataclass(frozen=True)
class InstructionCollection:
    root: Path
    dimension: str  # sub-folder name, or the folder's own name for a single collection
    layout: str  # "infosearch" | "followir" | "instructir"
    modes: tuple[str, ...]
    split: str
    dataset: BeirDataset  # over root: corpus streaming, fingerprint
    top_ranked_path: Path | None

    # --- paths --------------------------------------------------------------------------------

    def qrels_dir(self, mode: str) -> Path:
        return self.root / ("qrels" if self.layout == "instructir" else f"qrels_{mode}")

    def qrels_path(self, mode: str) -> Path:
        """The split's qrels file of `mode` (checked against the allowed roots)."""
        if mode not in self.modes:
            raise KeyError(f"mode {mode!r} is not one of {self.layout}'s modes {self.modes}")
        return _split_file(self.qrels_dir(mode), self.split)

    @property
    def queries_path(self) -> Path:
        return self.dataset.queries_path

    # --- contents, read when first asked for --------------------------------------------------

    def qrels(self) -> dict[str, Qrels]:
        """Per mode, the split's judgements as read (do not modify: they are kept)."""
        return self._qrels

    def queries(self) -> list[InstructionQuery]:
        """The split's queries (distinct query ids of the og qrels, or of qrels/ for InstructIR,
        found in queries.jsonl), in queries.jsonl order."""
        return self._loaded[0]

    def problems(self) -> dict:
        """Counts, not fatal: `unknown_queries` (in the og qrels, not in queries.jsonl) with
        `examples`; per other mode, the split's queries with no judgement there
        (`queries_without_qrels`) and that mode's judged queries outside the split (`ignored_queries`)."""
        return self._loaded[1]

    @cached_property
    def _qrels(self) -> dict[str, Qrels]:
        return {mode: read_beir_qrels(self.qrels_path(mode)) for mode in self.modes}

    @cached_property
    def _loaded(self) -> tuple[list[InstructionQuery], dict]:
        base_mode = self.modes[0]
        qrels = self.qrels()
        split_ids = qrels[base_mode]
        queries = [query for query in self._read_queries() if query.query_id in split_ids]
        known = {query.query_id for query in queries}
        unknown = [query_id for query_id in split_ids if query_id not in known]
        path = self.qrels_path(base_mode)
        if not queries:
            shown = ", ".join(repr(q) for q in sorted(split_ids)[:EXAMPLES]) + (", ..." if len(split_ids) > EXAMPLES else "")
            raise DataFormatError(path, f"none of the {len(split_ids)} queries of the qrels is in {self.queries_path.name} "
                                        f"(qrels: {shown}); check that both files use the same query ids")
        problems: dict[str, Any] = {
            "unknown_queries": len(unknown),
            "examples": [f"query {q!r} of {_shown(path, self.root)} is not in {self.queries_path.name}"
                         for q in unknown[:EXAMPLES]],
            "queries_without_qrels": {mode: sum(1 for q in known if q not in qrels[mode]) for mode in self.modes[1:]},
            "ignored_queries": {mode: sum(1 for q in qrels[mode] if q not in known) for mode in self.modes[1:]},
        }
        return queries, problems

    def _read_queries(self):
        path = self.queries_path
        for line_number, obj, query_id in _json_objects(path, "query"):
            text = _text_field(path, obj, "text", line_number)
            if not text.strip():
                raise DataFormatError(path, f"query {query_id!r} has no text", line_number)
            if self.layout == "instructir":
                instructions = {INSTRUCTED: _text_field(path, obj, "instruction", line_number)}
                match = VARIANT_ID.match(query_id)
                group = match.group(1) if match else query_id  # qrels ids were checked at open
            else:
                instructions = {mode: self._instruction(path, obj, query_id, mode, line_number) for mode in self.modes}
                group = query_id
            fields = {name: obj[name] for name in EXTRA_FIELDS if name in obj and name != "metadata"}
            if "metadata" in obj:
                fields["metadata"] = _metadata(path, obj, line_number)
            yield InstructionQuery(query_id=query_id, text=text, instructions=instructions, group=group, fields=fields)

    def _instruction(self, path: Path, obj: dict, query_id: str, mode: str, line_number: int) -> str:
        name = f"instruction_{mode}"
        if name not in obj:
            raise DataFormatError(path, f"query {query_id!r} has no `{name}` (the {self.layout} layout needs "
                                        f"{', '.join(f'`instruction_{m}`' for m in self.modes)}; \"\" for none)", line_number)
        if not isinstance(obj[name], str):
            raise DataFormatError(path, f"`{name}` of query {query_id!r} must be a string (\"\" for none), "
                                        f"got {json.dumps(obj[name])[:40]}", line_number)
        return obj[name]


# --- opening and layout detection --------------------------------------------------------------

def open_instruction_collections(path: str | Path, split: str = "test") -> list[InstructionCollection]:
    """The collections in `path`: one for a single collection folder, one per dimension (sorted)
    for a folder of dimension sub-folders. Every layout check is done here, before any work."""
    root = checked(path, "dataset folder")
    if not root.is_dir():
        raise DataFormatError(root, "dataset folder not found")
    top = _collection_files(root)
    dimensions = sorted((child for child in root.iterdir() if _is_dimension(child)), key=lambda child: child.name)
    if top and dimensions:
        raise DataFormatError(root, f"ambiguous folder: collection files at the top ({', '.join(top)}) and dimension "
                                    f"sub-folders ({', '.join(d.name for d in dimensions)}); keep one or the other")
    if not top and not dimensions:
        raise DataFormatError(root, "no instruction-following collection here: no corpus.jsonl, queries.jsonl or "
                                    "qrels folder, and no sub-folder holding them")
    folders = [(root, root.resolve().name)] if top else [(checked(d, "dataset folder"), d.name) for d in dimensions]
    layouts = [(folder, name, _layout(folder)) for folder, name in folders]
    if len({layout for _, _, layout in layouts}) > 1:
        named = ", ".join(f"{name} ({layout})" for _, name, layout in layouts)
        raise DataFormatError(root, f"mixed layouts across dimensions: {named}; every dimension must use the same layout")
    collections = []
    for folder, name, layout in layouts:
        modes = LAYOUT_MODES[layout]
        dirs = ["qrels"] if layout == "instructir" else [f"qrels_{mode}" for mode in modes]
        for qrels_dir in dirs:
            _split_file(folder / qrels_dir, split)  # refuses a missing split, naming the available ones
        collection = InstructionCollection(
            root=folder, dimension=name, layout=layout, modes=modes, split=split,
            dataset=BeirDataset.open(folder), top_ranked_path=_optional(folder, "top_ranked.jsonl"))
        if layout == "instructir":
            _check_variant_ids(collection)
        collections.append(collection)
    return collections


def _collection_files(folder: Path) -> list[str]:
    """The collection files and qrels folders in `folder`, as named in messages."""
    names = [stem for stem in ("corpus.jsonl", "queries.jsonl") if _first_existing(folder / stem, folder / f"{stem}.gz")]
    return names + [f"{name}/" for name in QRELS_DIRS if (folder / name).is_dir()]


def _is_dimension(child: Path) -> bool:
    # Hidden folders, __pycache__ and folders with no collection files (qrels folders among them) are ignored.
    if not child.is_dir() or child.name.startswith(".") or child.name == "__pycache__" or child.name in QRELS_DIRS:
        return False
    return bool(_collection_files(child))


def _layout(folder: Path) -> str:
    """The folder's layout from its files; refuses an ambiguous or incomplete one, naming what is
    missing or conflicting."""
    has = {name: (folder / name).is_dir() for name in QRELS_DIRS}
    mode_dirs = [name for name in MODE_QRELS_DIRS if has[name]]
    if has["qrels"] and mode_dirs:
        named = ", ".join(f"{d}/" for d in mode_dirs)
        raise DataFormatError(folder, f"ambiguous folder: both qrels/ (InstructIR layout) and {named} "
                                      "(InfoSearch/FollowIR layout); keep one")
    if mode_dirs:
        missing = [name for name in ("qrels_og", "qrels_changed") if not has[name]]
        if missing:
            raise DataFormatError(folder, f"incomplete folder: {', '.join(f'{d}/' for d in missing)} missing "
                                          f"({', '.join(f'{d}/' for d in mode_dirs)} present; FollowIR needs qrels_og/ and "
                                          "qrels_changed/, InfoSearch also qrels_reversed/)")
        layout = "infosearch" if has["qrels_reversed"] else "followir"
    elif has["qrels"]:
        layout = "instructir"
    else:
        raise DataFormatError(folder, "incomplete folder: no qrels folder (qrels_og/ and qrels_changed/ for FollowIR, "
                                      "plus qrels_reversed/ for InfoSearch, or qrels/ for InstructIR)")
    for stem in ("corpus.jsonl", "queries.jsonl"):
        if not _first_existing(folder / stem, folder / f"{stem}.gz"):
            raise DataFormatError(folder, f"incomplete folder: {stem} missing (nor {stem}.gz)")
    return layout


def _split_file(qrels_dir: Path, split: str) -> Path:
    found = _first_existing(qrels_dir / f"{split}.tsv", qrels_dir / f"{split}.tsv.gz")
    if found is None:
        splits = sorted({p.name.split(".")[0] for p in qrels_dir.glob("*.tsv*")})
        raise DataFormatError(qrels_dir / f"{split}.tsv", f"split {split!r} not found in {qrels_dir.name}/; "
                                                          f"available: {', '.join(splits) or 'none'}")
    return checked(found, "dataset file")


def _optional(folder: Path, stem: str) -> Path | None:
    found = _first_existing(folder / stem, folder / f"{stem}.gz")
    return checked(found, "dataset file") if found is not None else None


def _check_variant_ids(collection: InstructionCollection) -> None:
    """InstructIR's query ids are `<base>_<n>`; a folder whose ids are not is a plain BEIR collection."""
    query_ids = collection.qrels()[INSTRUCTED]
    bad = [query_id for query_id in query_ids if not VARIANT_ID.match(query_id)]
    if bad:
        shown = ", ".join(repr(q) for q in bad[:EXAMPLES]) + (", ..." if len(bad) > EXAMPLES else "")
        raise DataFormatError(collection.qrels_path(INSTRUCTED),
                              f"not an instruction-following folder: {len(bad)} of the {len(query_ids)} query ids of the "
                              f"split are not of the form <base>_<n> ({shown}) (a plain BEIR collection? use irforge eval)")


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
