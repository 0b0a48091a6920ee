"""The language a recipe writes in: --language when given, else the one a BEIR corpus's
dataset.json names, else detected from its documents: BM25's own resolution
(irforge.pipeline.retrievers.bm25.corpus_language, irforge.analysis's detector), so a corpus is
the same language to `irforge generate` as to `irforge eval`; a mixed corpus is refused, asking for
--language. The generated collection records it in its own dataset.json, so `irforge eval` and
QC analyse it as that language."""

from __future__ import annotations

import json
from pathlib import Path

from irforge.analysis.detect import Detection, MixedLanguages, detect
from irforge.analysis.languages import UnknownLanguage, language
from irforge.corpus.errors import CorpusError
from irforge.data import BeirDataset
from irforge.generation.documents import Doc, is_beir

DATASET_JSON = "dataset.json"


def generation_language(folder: Path, documents: list[Doc], given: str | None) -> Detection:
    """The language of the collection generated from `documents` (read from `folder`). ValueError
    for an unknown code or a corpus in several languages."""
    from irforge.pipeline.retrievers.bm25 import corpus_language

    try:
        if is_beir(folder):
            return corpus_language(BeirDataset.open(folder), given)
        if given:
            return Detection(language(given).code, "given")
        return detect((d.full_text for d in documents), f"corpus {folder}")
    except (CorpusError, UnknownLanguage, MixedLanguages) as error:
        raise ValueError(str(error)) from None


def language_name(found: Detection) -> str:
    return language(found.language).name


def write_dataset_json(folder: Path, found: Detection) -> None:
    """folder/dataset.json naming the collection's language (what BM25 reads before detecting)."""
    (folder / DATASET_JSON).write_text(json.dumps({"language": found.language}) + "\n", encoding="utf-8")
