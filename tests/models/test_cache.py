"""EmbeddingCache: SQLite storage of vectors by (encoder key, role, text hash)."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import textwrap
import threading
from contextlib import closing
from pathlib import Path

import numpy as np
import platformdirs
import pytest

from irforge.models.cache import EmbeddingCache, EmbeddingCacheError, default_cache_path, text_hash
from irforge.models.encoder import TextRole

KEY = "d7736d119b2dab989e7dae18"


def vectors(count: int, dimension: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)


def hashes(count: int, prefix: str = "text") -> list[bytes]:
    return [text_hash(f"{prefix} {i}") for i in range(count)]


@pytest.fixture()
def cache(tmp_path: Path):
    with EmbeddingCache(tmp_path / "embeddings.sqlite3") as opened:
        yield opened


def test_text_hash_is_sha256_of_the_exact_utf8_text():
    assert text_hash("Überraschung") == hashlib.sha256("Überraschung".encode()).digest()
    assert len(text_hash("")) == 32
    assert text_hash("a b") != text_hash("a  b") != text_hash(" a b")
    assert len(text_hash("lone \ud800 surrogate")) == 32  # legal in JSON, must not crash
    with pytest.raises(TypeError):
        text_hash(b"bytes")  # type: ignore[arg-type]


def test_round_trip_is_bit_identical_and_survives_reopening(tmp_path: Path):
    path = tmp_path / "sub" / "dir" / "embeddings.sqlite3"   # parent folders are created
    keys, stored = hashes(20), vectors(20)
    with EmbeddingCache(path) as cache:
        cache.put_many(KEY, TextRole.PASSAGE, keys, stored)
        assert cache.count(KEY, TextRole.PASSAGE) == 20
    with EmbeddingCache(path) as cache:
        found = cache.get_many(KEY, TextRole.PASSAGE, keys + [text_hash("never stored")], dimension=8)
        assert set(found) == set(keys)
        for key, expected in zip(keys, stored):
            assert found[key].dtype == np.float32 and found[key].shape == (8,)
            assert found[key].tobytes() == expected.tobytes()
        found[keys[0]][0] = 1.0  # answers are writable copies


def test_float64_input_is_stored_as_float32_little_endian(cache: EmbeddingCache):
    value = np.array([[0.1, -2.5, 3.0]], dtype=np.float64)
    cache.put_many(KEY, "query", [text_hash("q")], value)
    with closing(sqlite3.connect(cache.path)) as raw:
        blob = raw.execute("SELECT vector FROM embeddings").fetchone()[0]
    assert blob == value.astype("<f4").tobytes()
    np.testing.assert_array_equal(cache.get_many(KEY, "query", [text_hash("q")])[text_hash("q")],
                                  value[0].astype(np.float32))


def test_lookups_beyond_one_in_query_chunk(cache: EmbeddingCache):
    keys, stored = hashes(1234), vectors(1234, dimension=4)
    cache.put_many(KEY, TextRole.PASSAGE, keys, stored)
    found = cache.get_many(KEY, TextRole.PASSAGE, keys + keys[:10], dimension=4)  # duplicates asked too
    assert len(found) == 1234
    np.testing.assert_array_equal(np.stack([found[key] for key in keys]), stored)


def test_role_and_encoder_key_are_separate_entries(cache: EmbeddingCache):
    key = [text_hash("the same text")]
    cache.put_many(KEY, TextRole.PASSAGE, key, vectors(1, seed=1))
    cache.put_many(KEY, TextRole.QUERY, key, vectors(1, seed=2))
    cache.put_many("another-encoder", TextRole.PASSAGE, key, vectors(1, seed=3))
    assert cache.count() == 3
    assert cache.count(KEY) == 2 and cache.count(KEY, TextRole.QUERY) == 1 and cache.count(role="passage") == 2
    np.testing.assert_array_equal(cache.get_many(KEY, TextRole.PASSAGE, key)[key[0]], vectors(1, seed=1)[0])
    np.testing.assert_array_equal(cache.get_many(KEY, TextRole.QUERY, key)[key[0]], vectors(1, seed=2)[0])
    np.testing.assert_array_equal(cache.get_many("another-encoder", "passage", key)[key[0]], vectors(1, seed=3)[0])
    assert cache.get_many("a-third-encoder", TextRole.PASSAGE, key) == {}


def test_put_replaces_without_duplicating(cache: EmbeddingCache):
    key = [text_hash("x")]
    cache.put_many(KEY, TextRole.PASSAGE, key, vectors(1, seed=1))
    cache.put_many(KEY, TextRole.PASSAGE, key, vectors(1, seed=2))
    assert cache.count() == 1
    np.testing.assert_array_equal(cache.get_many(KEY, TextRole.PASSAGE, key)[key[0]], vectors(1, seed=2)[0])


def test_dimension_mismatch_is_an_error_naming_the_encoder(cache: EmbeddingCache):
    cache.put_many(KEY, TextRole.PASSAGE, hashes(3), vectors(3, dimension=8))
    with pytest.raises(EmbeddingCacheError, match=rf"encoder {KEY} \(passage\).*dimension 8, asked for 384"):
        cache.get_many(KEY, TextRole.PASSAGE, hashes(3), dimension=384)
    assert len(cache.get_many(KEY, TextRole.PASSAGE, hashes(3), dimension=8)) == 3


def test_bad_puts_are_refused_and_store_nothing(cache: EmbeddingCache):
    with pytest.raises(ValueError, match="one vector per hash"):
        cache.put_many(KEY, TextRole.PASSAGE, hashes(2), vectors(3))
    with pytest.raises(ValueError, match="32 bytes"):
        cache.put_many(KEY, TextRole.PASSAGE, [b"short"], vectors(1))
    bad = vectors(3)
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cache.put_many(KEY, TextRole.PASSAGE, hashes(3), bad)
    assert cache.count() == 0
    cache.put_many(KEY, TextRole.PASSAGE, [], np.zeros((0, 8), dtype=np.float32))
    assert cache.get_many(KEY, TextRole.PASSAGE, []) == {}


def test_wal_mode_and_closing(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "c.sqlite3")
    with closing(sqlite3.connect(cache.path)) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache.close()
    cache.close()  # idempotent
    with pytest.raises(EmbeddingCacheError, match="closed"):
        cache.count()


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path):
    path = tmp_path / "embeddings.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(EmbeddingCacheError, match="unusable"):
        EmbeddingCache(path)


def test_default_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("IRFORGE_CACHE_DIR", str(tmp_path / "cache"))
    assert default_cache_path() == tmp_path / "cache" / "embeddings.sqlite3"
    monkeypatch.delenv("IRFORGE_CACHE_DIR")
    assert default_cache_path() == Path(platformdirs.user_cache_dir("irforge")) / "embeddings.sqlite3"


def test_threads_share_one_cache(cache: EmbeddingCache):
    errors: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            for round_ in range(10):
                keys = hashes(20, prefix=f"t{thread} r{round_}")
                stored = vectors(20, seed=thread * 100 + round_)
                cache.put_many(KEY, TextRole.PASSAGE, keys, stored)
                found = cache.get_many(KEY, TextRole.PASSAGE, keys, dimension=8)
                assert all(found[k].tobytes() == v.tobytes() for k, v in zip(keys, stored))
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert cache.count() == 6 * 10 * 20


WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    from irforge.models.cache import EmbeddingCache, text_hash
    path, name = sys.argv[1], sys.argv[2]
    with EmbeddingCache(path) as cache:
        for round_ in range(40):
            keys = [text_hash(f"{name} {round_} {i}") for i in range(25)]
            cache.put_many("k", "passage", keys, np.full((25, 4), round_, dtype=np.float32))
            cache.get_many("k", "passage", keys, dimension=4)
""")


def test_two_processes_write_the_same_file_at_once(tmp_path: Path):
    path = tmp_path / "shared.sqlite3"  # both create it: WAL switch and schema race too
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name], stderr=subprocess.PIPE, text=True)
               for name in ("a", "b")]
    for writer in writers:
        _, stderr = writer.communicate(timeout=120)
        assert writer.returncode == 0, stderr
    with EmbeddingCache(path) as cache:
        assert cache.count("k", "passage") == 2 * 40 * 25
