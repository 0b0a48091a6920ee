"""Embedded-only behaviour of the Qdrant Edge vector backend: what is on disk, reopening it, crashes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from irforge.corpus.errors import BackendUnavailable, CorpusNotReady
from irforge.corpus.lexical.base import CorpusState
from irforge.corpus.vectors import make_vector_backend
from irforge.corpus.vectors.base import HnswSettings
from irforge.corpus.vectors.edge import EdgeVectorBackend

DIM = 12


def vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)


def ready(root, collection_id="col", n=50, **create):
    backend = EdgeVectorBackend(root)
    backend.create(collection_id, DIM, "cosine", "fp-1", **create)
    backend.upsert(collection_id, [f"d{i:03d}" for i in range(n)], vectors(n))
    backend.commit(collection_id)
    return backend


def test_layout_on_disk(tmp_path):
    backend = ready(tmp_path, hnsw=HnswSettings(m=8, ef_construct=64, ef_search=32))
    folder = tmp_path / "col"
    assert sorted(p.name for p in folder.iterdir()) == ["flat", "meta.json", "shard"]
    assert sorted(p.name for p in (folder / "flat").iterdir()) == [   # exact search's (corpus/vectors/flat.py)
        "id_offsets.int64", "id_rank.int32", "ids.utf8", "manifest.json", "vectors.float32"]
    assert (folder / "flat" / "vectors.float32").stat().st_size == 50 * DIM * 4
    assert (folder / "shard" / "edge_config.json").is_file() and (folder / "shard" / "segments").is_dir()
    meta = json.loads((folder / "meta.json").read_text())
    assert meta == {
        "format": 1, "collection_id": "col", "dimension": DIM, "distance": "cosine", "fingerprint": "fp-1",
        "hnsw": {"m": 8, "ef_construct": 64, "ef_search": 32}, "state": "ready", "point_count": 50,
        "graph": False,   # built by the first HNSW search, not by commit()
    }
    assert not list(folder.glob(".meta.json.*"))  # no temporary files left by the atomic writes
    backend.close()


def test_reopening_the_root_finds_ready_collections(tmp_path):
    first = ready(tmp_path)
    expected = [ranking.pairs() for ranking in first.search("col", vectors(3, seed=1), 5)]
    info = first.info("col")
    first.close()

    second = EdgeVectorBackend(tmp_path)
    assert second.info("col") == info
    assert [ranking.pairs() for ranking in second.search("col", vectors(3, seed=1), 5)] == expected
    # HNSW is Edge's own scoring (float32), exact search irforge's flat file (float64): the same documents.
    hnsw = second.search("col", vectors(3, seed=1), 5, exact=False)
    assert [list(ranking) for ranking in hnsw] == [[doc_id for doc_id, _ in pairs] for pairs in expected]
    assert [ranking.scores.tolist() for ranking in hnsw] == [pytest.approx([s for _, s in pairs], abs=1e-6) for pairs in expected]
    second.close()


def test_a_collection_is_locked_to_one_backend_at_a_time(tmp_path):
    first = ready(tmp_path)
    other = EdgeVectorBackend(tmp_path)
    with pytest.raises(BackendUnavailable, match="open in another"):
        other.search("col", vectors(1), 5, exact=False)
    # Exact search reads the flat file, not the locked shard: a second backend searches it at once.
    assert other.search("col", vectors(1), 5)[0].pairs() == first.search("col", vectors(1), 5)[0].pairs()
    first.close()
    assert len(other.search("col", vectors(1), 5, exact=False)[0]) == 5
    other.close()


def test_a_crash_between_upsert_and_commit_leaves_the_collection_not_ready(tmp_path):
    ready(tmp_path, n=10).close()
    # A real crash: another process upserts and dies without committing, flushing or closing.
    script = textwrap.dedent(f"""
        import os, numpy as np
        from irforge.corpus.vectors.edge import EdgeVectorBackend
        backend = EdgeVectorBackend({str(tmp_path)!r})
        backend.upsert("col", [f"new{{i}}" for i in range(5)], np.ones((5, {DIM}), dtype=np.float32))
        os._exit(3)
    """)
    assert subprocess.run([sys.executable, "-c", script], timeout=120).returncode == 3

    backend = EdgeVectorBackend(tmp_path)
    assert backend.info("col").state == CorpusState.EMPTY
    with pytest.raises(CorpusNotReady):
        backend.search("col", vectors(1), 5)
    # The write-ahead log kept the upsert; committing makes it searchable.
    info = backend.commit("col")
    assert (info.state, info.point_count) == (CorpusState.READY, 15)
    assert set(backend.search("col", np.ones((1, DIM), dtype=np.float32), 5)[0]) == {
        f"new{i}" for i in range(5)
    }
    backend.close()


def test_create_cleans_up_a_create_that_crashed_before_its_meta(tmp_path):
    (tmp_path / "col" / "shard" / "segments").mkdir(parents=True)  # a shard without meta.json
    backend = EdgeVectorBackend(tmp_path)
    assert backend.info("col") is None
    assert backend.create("col", DIM, "dot", "fp-1").state == CorpusState.EMPTY
    backend.close()


def test_ef_search_is_a_search_setting_the_latest_create_sets(tmp_path):
    backend = ready(tmp_path)
    info = backend.create("col", DIM, "cosine", "fp-1", HnswSettings(ef_search=256))
    assert info.config["hnsw"]["ef_search"] == 256 and info.state == CorpusState.READY
    backend.close()


def test_factory_builds_the_embedded_backend(tmp_path, monkeypatch):
    backend = make_vector_backend("embedded", vector_dir=tmp_path / "a")
    assert isinstance(backend, EdgeVectorBackend) and backend.root == tmp_path / "a"
    monkeypatch.setenv("IRFORGE_VECTOR_DIR", str(tmp_path / "b"))
    assert make_vector_backend("embedded").root == tmp_path / "b"
    with pytest.raises(ValueError, match="embedded, qdrant"):
        make_vector_backend("faiss")
    monkeypatch.delenv("IRFORGE_QDRANT_URL", raising=False)
    with pytest.raises(ValueError, match="IRFORGE_QDRANT_URL"):
        make_vector_backend("qdrant")
