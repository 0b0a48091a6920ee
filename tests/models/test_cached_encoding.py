"""encode_with_cache with the real all-MiniLM-L6-v2: reuse, order, dedup, streaming, and resume after a kill.

The model is capped at 32 tokens (a real identity like any other) so a pass over a hundred SciFact
documents takes a second or two on a laptop CPU; the caching logic does not depend on length.
"""

from __future__ import annotations

import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from irforge.data import iter_corpus
from irforge.models.cache import EmbeddingCache, EmbeddingCacheError, text_hash
from irforge.models.cached_encoding import Encoder, encode_with_cache
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole
from irforge.models.errors import EncodingError

MAX_TOKENS = 32


@pytest.fixture(scope="module")
def scifact_corpus(beir_dir: Path) -> Path:
    return beir_dir / "scifact" / "corpus.jsonl"


@pytest.fixture(scope="module")
def model() -> Iterator[EncoderCore]:
    # One torch thread: these batches are tiny, and with two threads per process the parent, the
    # resume test's child and any parallel work spin against each other (seconds per call).
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield EncoderCore(EncoderSpec("all-MiniLM-L6-v2", max_seq_length=MAX_TOKENS))
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def documents(scifact_corpus: Path) -> list[tuple[str, str]]:
    return [(doc.doc_id, doc.full_text) for doc in itertools.islice(iter_corpus(scifact_corpus), 120)]


@pytest.fixture()
def cache(tmp_path: Path):
    with EmbeddingCache(tmp_path / "embeddings.sqlite3") as opened:
        yield opened


class Spy:
    """The real model, recording what it is asked to encode (and optionally under another identity)."""

    def __init__(self, model: EncoderCore, identity_key: str | None = None):
        self.model = model
        self.identity_key = identity_key or model.identity_key
        self.dimension = model.dimension
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], role: TextRole) -> np.ndarray:
        self.calls.append(list(texts))
        return self.model.encode(texts, role)


class Broken:
    """Fault injection only: an encoder answering with garbage."""

    identity_key = "broken-encoder"
    dimension = 384

    def __init__(self, answer):
        self.answer = answer

    def encode(self, texts: list[str], role: TextRole) -> np.ndarray:
        return self.answer(len(texts))


def collect(encoding) -> tuple[list[str], np.ndarray]:
    ids: list[str] = []
    parts: list[np.ndarray] = []
    for chunk_ids, chunk_vectors in encoding:
        assert chunk_vectors.shape == (len(chunk_ids), 384) and chunk_vectors.dtype == np.float32
        ids += chunk_ids
        parts.append(chunk_vectors)
    return ids, np.concatenate(parts) if parts else np.zeros((0, 384), np.float32)


def test_the_model_satisfies_the_protocol(model: EncoderCore):
    assert isinstance(model, Encoder)


def test_second_pass_encodes_nothing_and_returns_identical_vectors(model, cache, documents):
    items = documents[:40]
    first = encode_with_cache(model, cache, TextRole.PASSAGE, items, batch_size=16)
    ids, vectors = collect(first)
    assert ids == [doc_id for doc_id, _ in items]
    assert (first.stats.encoded, first.stats.reused, first.stats.items, first.stats.chunks) == (40, 0, 40, 3)
    assert cache.count(model.identity_key, TextRole.PASSAGE) == 40
    np.testing.assert_allclose(vectors, model.encode([text for _, text in items], TextRole.PASSAGE), atol=1e-6)

    spy = Spy(model)
    second = encode_with_cache(spy, cache, TextRole.PASSAGE, iter(items), batch_size=7)
    again_ids, again = collect(second)
    assert (second.stats.encoded, second.stats.reused) == (0, 40)
    assert spy.calls == []
    assert again_ids == ids
    assert again.tobytes() == vectors.tobytes()  # bit-identical


def test_order_is_kept_when_cached_and_new_items_interleave(model, cache, documents):
    items = documents[:24]
    collect(encode_with_cache(model, cache, TextRole.PASSAGE, items[::3], batch_size=5))  # every third cached
    spy = Spy(model)
    encoding = encode_with_cache(spy, cache, TextRole.PASSAGE, reversed(items), batch_size=9)
    ids, vectors = collect(encoding)
    assert ids == [doc_id for doc_id, _ in reversed(items)]
    assert (encoding.stats.encoded, encoding.stats.reused) == (24 - 8, 8)
    assert sorted(itertools.chain.from_iterable(spy.calls)) == sorted(text for _, text in items[1::3] + items[2::3])
    expected = model.encode([text for _, text in reversed(items)], TextRole.PASSAGE)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)


def test_identical_texts_in_a_chunk_are_encoded_once(model, cache, documents):
    (a_id, a), (b_id, b) = documents[:2]
    items = [("q1", a), ("q2", b), ("q3", a), ("q4", a), ("q5", b), ("q6", "a third text")]
    spy = Spy(model)
    encoding = encode_with_cache(spy, cache, TextRole.PASSAGE, items, batch_size=10)
    ids, vectors = collect(encoding)
    assert spy.calls == [[a, b, "a third text"]]
    assert (encoding.stats.encoded, encoding.stats.deduplicated, encoding.stats.reused) == (3, 3, 0)
    assert ids == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert vectors[0].tobytes() == vectors[2].tobytes() == vectors[3].tobytes()
    assert vectors[1].tobytes() == vectors[4].tobytes()
    assert cache.count() == 3


def test_roles_and_encoders_get_separate_entries(model, cache):
    items = [("1", "glucose metabolism in mice"), ("2", "vitamin D and fractures")]
    collect(encode_with_cache(model, cache, TextRole.PASSAGE, items))
    as_query = encode_with_cache(model, cache, TextRole.QUERY, items)
    collect(as_query)
    other = Spy(model, identity_key="a-different-identity")
    as_other = encode_with_cache(other, cache, TextRole.PASSAGE, items)
    collect(as_other)
    assert as_query.stats.encoded == 2 and as_other.stats.encoded == 2
    assert cache.count() == 6
    assert cache.count(model.identity_key, TextRole.QUERY) == 2
    assert cache.count("a-different-identity", TextRole.PASSAGE) == 2


def test_input_is_consumed_lazily_one_chunk_at_a_time(model, cache, documents):
    consumed = 0

    def stream() -> Iterator[tuple[str, str]]:
        nonlocal consumed
        for item in documents[:30]:
            consumed += 1
            yield item

    encoding = encode_with_cache(model, cache, TextRole.PASSAGE, stream(), batch_size=8)
    ids, _ = next(encoding)
    assert len(ids) == 8 and consumed == 8
    assert encoding.stats.items == 8 and cache.count() == 8  # committed before it was yielded
    encoding.close()
    assert consumed == 8


def test_progress_is_reported_and_closed(model, cache):
    events: list = []

    class Bar:
        def update(self, n: int = 1) -> None:
            events.append(("update", n))

        def close(self) -> None:
            events.append(("close",))

    def factory(description: str, total: int | None, unit: str) -> Bar:
        events.append(("open", description, total))
        return Bar()

    items = [(str(i), f"text {i}") for i in range(10)]
    collect(encode_with_cache(model, cache, TextRole.PASSAGE, items, batch_size=4, progress=factory))
    assert events == [("open", "encode documents", 10), ("update", 4), ("update", 4), ("update", 2), ("close",)]


def test_watched_progress_moves_per_group_of_longest_texts_and_keeps_the_order(model, cache, documents):
    """Issue 29: off a terminal the bar moved per chunk of 64 texts taken in input order, each padded
    to its own longest: ~20 % slower than one call of 256 (sentence-transformers sorts a call's
    texts by length). Now a chunk is encoded in groups of 64, longest texts first, as one call would
    batch them, and the bar moves after each group; the vectors come back in input order."""
    spy = Spy(model)
    updates: list[int] = []

    class Bar:
        def update(self, n: int = 1) -> None:
            updates.append(n)

        def close(self) -> None:
            pass

    ids, vectors = collect(encode_with_cache(spy, cache, TextRole.PASSAGE, documents,
                                             progress=lambda *_: Bar()))
    texts = [text for _, text in documents]
    assert ids == [doc_id for doc_id, _ in documents]
    # The first chunk (32, for an early estimate) as it came; the other 88: 64 longest, then 24.
    assert [len(call) for call in spy.calls] == [32, 64, 24] and updates == [32, 64, 24]
    assert spy.calls[0] == texts[:32]
    rest = spy.calls[1] + spy.calls[2]
    assert sorted(rest) == sorted(texts[32:])
    assert [len(t) for t in rest] == sorted((len(t) for t in texts[32:]), reverse=True)
    independent = model.encode(texts, TextRole.PASSAGE)   # one call, no cache, no grouping
    np.testing.assert_allclose(vectors, independent, rtol=0, atol=1e-5)


def test_nothing_to_encode(model, cache):
    encoding = encode_with_cache(model, cache, TextRole.QUERY, [])
    assert list(encoding) == []
    assert (encoding.stats.encoded, encoding.stats.reused, encoding.stats.chunks) == (0, 0, 0)


@pytest.mark.parametrize(("answer", "message"), [
    (lambda n: np.full((n, 384), np.nan, dtype=np.float32), "NaN or infinite"),
    (lambda n: np.zeros((max(n - 1, 0), 384), dtype=np.float32), "returned 1 vectors for 2 texts"),
    (lambda n: np.zeros((n, 12), dtype=np.float32), "dimension 12, expected 384"),
])
def test_a_bad_encoder_answer_is_rejected_and_not_cached(cache, answer, message):
    encoding = encode_with_cache(Broken(answer), cache, TextRole.PASSAGE, [("a", "x"), ("b", "y")])
    with pytest.raises(EncodingError, match=message):
        next(encoding)
    assert cache.count() == 0


def test_earlier_chunks_stay_cached_when_a_later_one_fails(model, cache):
    calls = 0

    class FailsSecondTime(Spy):
        def encode(self, texts, role):
            nonlocal calls
            calls += 1
            vectors = super().encode(texts, role)
            return vectors * np.nan if calls == 2 else vectors

    items = [(str(i), f"short text number {i}") for i in range(6)]
    encoding = encode_with_cache(FailsSecondTime(model), cache, TextRole.PASSAGE, items, batch_size=3)
    with pytest.raises(EncodingError):
        list(encoding)
    assert encoding.stats.encoded == 3 and cache.count() == 3
    rerun = encode_with_cache(model, cache, TextRole.PASSAGE, items, batch_size=3)
    collect(rerun)
    assert (rerun.stats.encoded, rerun.stats.reused) == (3, 3)


def test_a_cached_vector_of_the_wrong_dimension_is_an_error(model, cache):
    cache.put_many(model.identity_key, TextRole.PASSAGE, [text_hash("x")], np.ones((1, 16), dtype=np.float32))
    with pytest.raises(EmbeddingCacheError, match=model.identity_key):
        list(encode_with_cache(model, cache, TextRole.PASSAGE, [("a", "x")]))


# --- resume after a kill ----------------------------------------------------------------------

CHILD = textwrap.dedent("""
    import itertools, sys, time
    import torch
    from irforge.data import iter_corpus
    from irforge.models.cache import EmbeddingCache
    from irforge.models.cached_encoding import encode_with_cache
    from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole

    corpus, cache_path, max_tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.set_num_threads(1)
    model = EncoderCore(EncoderSpec("all-MiniLM-L6-v2", max_seq_length=max_tokens))
    items = ((doc.doc_id, doc.full_text) for doc in itertools.islice(iter_corpus(corpus), 120))
    with EmbeddingCache(cache_path) as cache:
        for ids, vectors in encode_with_cache(model, cache, TextRole.PASSAGE, items, batch_size=10):
            time.sleep(0.15)  # pace it so the parent's SIGKILL lands mid-run
    print("finished without being killed", flush=True)
""")


def test_an_encode_killed_half_way_resumes_without_gaps_or_duplicates(model, tmp_path, scifact_corpus, documents):
    assert len({text for _, text in documents}) == 120  # distinct texts: encoded + cached must add up
    path = tmp_path / "embeddings.sqlite3"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(scifact_corpus), str(path), str(MAX_TOKENS)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Watch the file from this process while the child writes it; kill it once 50 are committed.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if path.exists():
                with EmbeddingCache(path) as watcher:
                    if watcher.count() >= 50:
                        os.kill(child.pid, signal.SIGKILL)
                        break
            time.sleep(0.02)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL, f"child was not killed mid-run: rc {child.returncode}\n{stdout}\n{stderr[-3000:]}"

    with EmbeddingCache(path) as cache:
        already = cache.count(model.identity_key, TextRole.PASSAGE)
        assert 50 <= already < 120 and already % 10 == 0  # whole chunks only
        spy = Spy(model)
        resumed = encode_with_cache(spy, cache, TextRole.PASSAGE, documents, batch_size=10)
        ids, vectors = collect(resumed)
        assert resumed.stats.encoded == 120 - already  # no gaps ...
        assert resumed.stats.reused == already
        assert sorted(itertools.chain.from_iterable(spy.calls)) == sorted(text for _, text in documents[already:])
        assert cache.count() == 120  # ... and no duplicates
    with closing(sqlite3.connect(path)) as raw:
        assert raw.execute("SELECT COUNT(*), COUNT(DISTINCT text_hash) FROM embeddings").fetchone() == (120, 120)
    assert ids == [doc_id for doc_id, _ in documents]
    fresh = model.encode([text for _, text in documents], TextRole.PASSAGE)
    np.testing.assert_allclose(vectors, fresh, atol=1e-6)
