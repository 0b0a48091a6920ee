"""Three real systems to compare: BM25 with three settings on a SciFact subset (40 queries)."""

from __future__ import annotations

from pathlib import Path

import pytest

BM25_SETTINGS = {"bm25-default": {}, "bm25-lucene": {"k1": 1.2, "b": 0.75}, "bm25-flat": {"k1": 0.3, "b": 0.1}}


@pytest.fixture(scope="session")
def bm25_systems(scifact_subset, tmp_path_factory) -> dict[str, Path]:
    """label -> results folder of `irforge eval` (results.json + run.trec)."""
    import irforge

    root = tmp_path_factory.mktemp("compare-systems")
    folders = {}
    for label, options in BM25_SETTINGS.items():
        folders[label] = root / label
        irforge.evaluate(scifact_subset, out=folders[label], index_dir=root / "indexes", measures=["nDCG@10", "R@100", "RR@10"],
                         **options)
    return folders
