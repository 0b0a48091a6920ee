"""What only the embedded backend has: its on-disk layout, reopening, and crash safety."""

from __future__ import annotations

import json

import numpy as np
import pytest

from irforge.corpus.lexical.base import CorpusState
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.data.types import Document, Query

DOCS = [
    Document("a", "Vitamin D", "Vitamin D deficiency and bone loss."),
    Document("b", "Aspirin", "Aspirin lowers the risk of heart attack."),
]


def ready(root, docs=DOCS) -> EmbeddedBackend:
    backend = EmbeddedBackend(root)
    backend.create("c", "fp", Bm25Settings())
    list(backend.ingest("c", iter([docs])))
    return backend


def test_index_persists_and_reopens_without_reindexing(tmp_path):
    first = ready(tmp_path)
    hits = first.search("c", [Query("q", "aspirin")], 10)[0]
    reopened = EmbeddedBackend(tmp_path)
    assert reopened.info("c").state == CorpusState.READY
    assert reopened.search("c", [Query("q", "aspirin")], 10)[0].pairs() == hits.pairs() != []


def test_a_commit_replaces_the_generation_keeping_one_previous_for_readers(tmp_path):
    backend = ready(tmp_path)
    assert json.loads((tmp_path / "c" / "meta.json").read_text())["generation"] == "g000001"
    list(backend.ingest("c", iter([[Document("z", "", "zebrafish")]])))
    folders = sorted(p.name for p in (tmp_path / "c").iterdir() if p.is_dir())
    assert folders == ["g000001", "g000002"]  # g000001 stays: another reader may be loading it
    assert backend.search("c", [Query("q", "zebrafish")], 10)[0].doc_ids[0] == "z"
    list(backend.ingest("c", iter([[Document("y", "", "yak")]])))
    folders = sorted(p.name for p in (tmp_path / "c").iterdir() if p.is_dir())
    assert folders == ["g000002", "g000003"]


def test_a_crash_mid_commit_leaves_the_previous_index_in_service(tmp_path):
    ready(tmp_path)
    # A crash after writing part of generation 2, before meta.json pointed at it.
    (tmp_path / "c" / "g000002").mkdir()
    (tmp_path / "c" / "g000002" / "doc_ids.json").write_text("[\"half")
    reopened = EmbeddedBackend(tmp_path)
    assert reopened.search("c", [Query("q", "aspirin")], 10)[0].doc_ids[0] == "b"
    list(reopened.ingest("c", iter([[Document("z", "", "zebrafish")]])))
    assert reopened.info("c").document_count == 3


def test_failed_reingest_keeps_the_committed_index_searchable(tmp_path):
    backend = ready(tmp_path)

    def broken():
        yield [Document("z", "", "zebrafish")]
        raise OSError("disk full")

    with pytest.raises(OSError):
        list(backend.ingest("c", broken()))
    assert backend.info("c").document_count == 2
    assert [len(ranking) for ranking in backend.search("c", [Query("q", "zebrafish")], 10)] == [0]


def test_corpus_ids_are_validated(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    with pytest.raises(ValueError, match="corpus id"):
        backend.create("../escape", "fp", Bm25Settings())


def test_k_larger_than_the_corpus_returns_every_match(tmp_path):
    backend = ready(tmp_path)
    hits = backend.search("c", [Query("q", "vitamin aspirin")], 1000)[0]
    assert sorted(hits) == ["a", "b"]


@pytest.mark.parametrize("k", [1, 7, 50, 400])
def test_the_one_key_top_k_equals_the_two_key_sort(k):
    """float32 scores with many ties (coarse values, ties across the cut at k): the packed-key path
    picks and orders exactly what a lexsort by (score desc, doc id desc) does."""
    from irforge.corpus.lexical.embedded import _best_by_one_key

    rng = np.random.default_rng(k)
    scores = (rng.integers(0, 12, 300) / 4).astype(np.float32)  # 0 included: not matching
    id_rank = rng.permutation(300).astype(np.int64)
    matching = np.flatnonzero(scores > 0)
    expected = matching[np.lexsort((-id_rank[matching], -scores[matching]))[:k]]
    assert np.array_equal(_best_by_one_key(scores, matching, id_rank, k), expected)
