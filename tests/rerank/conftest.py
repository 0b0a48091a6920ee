"""Fixtures for the rerank tests: the cross-encoder core over the suite's cross-encoder folder
(tests/conftest.py: cross_encoder_dir), and real SciFact texts."""

from __future__ import annotations

import itertools

import pytest
from irforge.data import BeirDataset


@pytest.fixture(scope="session")
def core(cross_encoder_dir):
    from irforge.models.reranker import CrossEncoderReranker, RerankerSpec

    return CrossEncoderReranker(RerankerSpec(str(cross_encoder_dir)))


@pytest.fixture(scope="session")
def scifact_texts(beir_dir) -> list[str]:
    """60 real SciFact documents (title + text) cut to 40 words: quick to score on 2 cores."""
    documents = itertools.islice(BeirDataset.open(beir_dir / "scifact").corpus(), 60)
    return [" ".join(document.full_text.split()[:40]) for document in documents]
