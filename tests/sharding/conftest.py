"""Fixtures of the sharding tests: the real SciFact corpus facts and a small real corpus."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from irforge.data import BeirDataset
from irforge.sharding.corpus_facts import CorpusFacts, corpus_facts

SMALL_CORPUS_DOCUMENTS = 60


@pytest.fixture(scope="session")
def scifact_facts(beir_dir: Path) -> CorpusFacts:
    return corpus_facts(beir_dir / "scifact")


@pytest.fixture(scope="session")
def small_corpus(beir_dir: Path, tmp_path_factory) -> Path:
    """The first 60 SciFact documents, then one with neither title nor text (never encoded,
    like DenseRetriever skips it): 61 documents, 60 vectors."""
    root = tmp_path_factory.mktemp("scifact-first-60")
    documents = itertools.islice(BeirDataset.open(beir_dir / "scifact").corpus(), SMALL_CORPUS_DOCUMENTS)
    lines = [json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) for d in documents]
    lines.append(json.dumps({"_id": "empty-document", "title": "", "text": "   "}))
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    return root
