"""Encode a stream of texts through the embedding cache: only what the cache lacks is encoded.

    encoding = encode_with_cache(encoder, cache, TextRole.PASSAGE,
                                 ((doc.doc_id, doc.full_text) for doc in iter_corpus(path)))
    for ids, vectors in encoding:        # input order, chunk by chunk
        collection.add(ids, vectors)
    counts = {"documents_encoded": encoding.stats.encoded}

Per chunk of `batch_size` items: look the text hashes up in the cache, encode the missing texts
(each distinct text once), validate the encoder's answer (check_vectors), store the new vectors
(committed before the chunk is yielded), then yield the chunk. A process killed at any point keeps
every chunk committed so far; running again encodes exactly the rest — no gaps, no duplicates.
Memory is bounded by one chunk: the input is consumed lazily and nothing is accumulated.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sized
from dataclasses import dataclass
from itertools import islice
from typing import Protocol, runtime_checkable

import numpy as np

from irforge.common.iterables import chunked
from irforge.common.metrics import DOCUMENTS_ENCODED
from irforge.common.progress import ProgressFactory, no_progress
from irforge.models.cache import EmbeddingCache, text_hash
from irforge.models.encoder import TextRole, check_vectors

DEFAULT_BATCH_SIZE = 256
FIRST_CHUNK = 32     # texts in the first chunk when progress is shown: an early measured rate
WATCHED_GROUP = 64   # texts per encode call when progress is shown: a bar that moves every few seconds


@runtime_checkable
class Encoder(Protocol):
    """What encode_with_cache needs: EncoderCore, or a client of the Encoder service."""

    @property
    def identity_key(self) -> str: ...        # everything that changes a vector, hashed

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: list[str], role: TextRole) -> np.ndarray: ...  # (len(texts), dimension)


@dataclass
class EncodingStats:
    """Counters of one encode_with_cache pass, current after every yielded chunk.

    items = encoded + reused + deduplicated.
    """

    items: int = 0          # (id, text) items yielded
    encoded: int = 0        # texts sent to the encoder (distinct within their chunk, absent from the cache)
    reused: int = 0         # items answered from the cache
    deduplicated: int = 0   # items sharing the text of another item of their chunk that was encoded
    chunks: int = 0
    encode_s: float = 0.0   # time in the encoder's encode calls (encoding throughput = encoded / encode_s)


class CachedEncoding(Iterator[tuple[list[str], np.ndarray]]):
    """Iterator of (ids, float32 vectors of shape (len(ids), dimension)), in input order.

    `stats` counts what was encoded and what was reused; read it during or after iteration.
    `close()` stops early (also closes the progress bar).
    """

    def __init__(self, encoder: Encoder, cache: EmbeddingCache, role: TextRole,
                 items: Iterable[tuple[str, str]], batch_size: int = DEFAULT_BATCH_SIZE,
                 progress: ProgressFactory | None = None, total: int | None = None):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.encoder = encoder
        self.cache = cache
        self.role = TextRole(role)
        self.batch_size = batch_size
        self.encoder_key = str(encoder.identity_key)   # read once: EncoderCore computes it per access
        self.dimension = int(encoder.dimension)
        self.stats = EncodingStats()
        # Documents (not queries) the encoder really encodes, for irforge_documents_encoded_total.
        self._encoded_counter = (DOCUMENTS_ENCODED.labels(model=_model_name(encoder))
                                 if self.role == TextRole.PASSAGE else None)
        if total is None and isinstance(items, Sized):
            total = len(items)
        self._generator = self._run(items, progress, total)

    def __next__(self) -> tuple[list[str], np.ndarray]:
        return next(self._generator)

    def __iter__(self) -> CachedEncoding:
        return self

    def close(self) -> None:
        self._generator.close()

    def _run(self, items: Iterable[tuple[str, str]], progress: ProgressFactory | None,
             total: int | None) -> Iterator[tuple[list[str], np.ndarray]]:
        what = "queries" if self.role == TextRole.QUERY else "documents"
        bar = progress(f"encode {what}", total, "text") if progress is not None else None
        try:
            # An encoder that reports progress itself (an endpoint: its concurrent requests need
            # whole chunks) moves the bar per request; a silent bar needs no short chunks.
            watched = progress not in (None, no_progress) and not getattr(self.encoder, "reports_progress", False)
            for chunk in self._chunks(items, watched=watched):
                ids, vectors = self._encode_chunk(chunk, bar, grouped=watched)
                yield ids, vectors
        finally:
            if bar is not None:
                bar.close()

    def _chunks(self, items: Iterable[tuple[str, str]], watched: bool) -> Iterator[list[tuple[str, str]]]:
        """Chunks of batch_size; when progress is watched, a short first chunk, so the first
        estimate of the time left comes after seconds (the rest move the bar per group: _encode_missing)."""
        if not watched:
            yield from chunked(items, self.batch_size)
            return
        items = iter(items)
        yield from chunked(islice(items, min(FIRST_CHUNK, self.batch_size)), self.batch_size)
        yield from chunked(items, self.batch_size)

    def _encode_missing(self, texts: list[str], bar=None):
        """The encoder's answer for `texts`, in their order. With a bar to move (`bar`), encoded in
        groups of WATCHED_GROUP, longest texts first, the bar moved after each, so a log line can
        come every ~10 s (a chunk of 256 is ~30 s of a small model on 2 cores, minutes on a busy
        machine). Longest first is what sentence-transformers does inside one call: the groups pad
        as one call of the whole chunk would. Chunks of 64 in input order, each padded to its own
        longest text, encoded texts of 5-150 words at 0.53x the speed of no progress; these groups
        at 0.88x (benchmarks/watched_encoding.py --short-texts; whole SciFact abstracts, cut at 256
        tokens, pad alike in any order: 1.04x and 1.01x)."""
        if bar is None or len(texts) <= WATCHED_GROUP:
            answer = self.encoder.encode(texts, self.role)
            if bar is not None:
                bar.update(len(texts))
            return answer
        order = sorted(range(len(texts)), key=lambda index: -len(texts[index]))
        rows: list = [None] * len(texts)
        for start in range(0, len(order), WATCHED_GROUP):
            group = order[start:start + WATCHED_GROUP]
            answer = self._checked(self.encoder.encode([texts[index] for index in group], self.role), len(group))
            for index, row in zip(group, answer):
                rows[index] = row
            bar.update(len(group))
        return self._joined(rows)

    def _encode_chunk(self, chunk: list[tuple[str, str]], bar=None, grouped: bool = False) -> tuple[list[str], np.ndarray]:
        ids = [item_id for item_id, _ in chunk]
        texts = [text for _, text in chunk]
        hashes = [text_hash(text) for text in texts]
        found = self._lookup(hashes)

        # Distinct missing texts, in first-seen order.
        missing: dict[bytes, str] = {}
        for key, text in zip(hashes, texts):
            if key not in found and key not in missing:
                missing[key] = text
        # An encoder that reports progress (a team endpoint: one request can take a minute) moves
        # the bar per answered request; the rest of the chunk moves it when the chunk is done.
        reports = getattr(self.encoder, "reports_progress", False)
        live = bar is not None and bool(missing) and (reports or grouped)
        if missing:
            new_keys = list(missing)
            started = time.perf_counter()
            if reports:
                answer = self.encoder.encode(list(missing.values()), self.role, **({"progress": bar.update} if live else {}))
            else:
                answer = self._encode_missing(list(missing.values()), bar if live else None)
            self.stats.encode_s += time.perf_counter() - started
            answer = self._checked(answer, len(new_keys))
            self._store(new_keys, answer)  # committed before yield
            found.update(zip(new_keys, answer))

        vectors = self._assemble([found[key] for key in hashes])
        rest = len(chunk) - len(missing) if live else len(chunk)
        if bar is not None and rest:
            bar.update(rest)

        self.stats.chunks += 1
        self.stats.items += len(chunk)
        self.stats.encoded += len(missing)
        if self._encoded_counter is not None and missing:
            self._encoded_counter.inc(len(missing))  # cache hits and in-chunk duplicates excluded
        reused = sum(1 for key in hashes if key not in missing)
        self.stats.reused += reused
        self.stats.deduplicated += len(chunk) - reused - len(missing)
        return ids, vectors

    # -- the representation: dense float32 rows here; sparse_encoding.CachedSparseEncoding overrides --

    def _lookup(self, hashes: list[bytes]) -> dict:
        return self.cache.get_many(self.encoder_key, self.role, hashes, dimension=self.dimension)

    def _checked(self, answer, count: int):
        answer = np.asarray(answer)
        check_vectors(answer, count, self.dimension, f"encoder {self.encoder_key}")
        return answer.astype(np.float32, copy=False)

    def _store(self, keys: list[bytes], answer) -> None:
        self.cache.put_many(self.encoder_key, self.role, keys, answer)

    def _joined(self, rows: list) -> np.ndarray:
        """Rows of checked answers as one answer."""
        return np.stack(rows)

    def _assemble(self, rows: list) -> np.ndarray:
        vectors = np.empty((len(rows), self.dimension), dtype=np.float32)
        for index, row in enumerate(rows):
            vectors[index] = row
        return vectors


def _model_name(encoder: Encoder) -> str:
    """The model's name for a metric label (`identity` is optional in the Encoder protocol)."""
    identity = getattr(encoder, "identity", None)
    return str(identity.get("model", "unknown")) if isinstance(identity, dict) else "unknown"


def encode_with_cache(encoder: Encoder, cache: EmbeddingCache, role: TextRole,
                      items: Iterable[tuple[str, str]], batch_size: int = DEFAULT_BATCH_SIZE,
                      progress: ProgressFactory | None = None, total: int | None = None) -> CachedEncoding:
    """Stream (ids, vectors) for (id, text) `items`, encoding only texts the cache lacks.

    Returns a CachedEncoding: iterate it for the chunks; its `.stats.encoded` / `.stats.reused`
    give results.json's counts. `total` (or len(items) when it has one) sizes the progress bar.
    Raises EncodingError when the encoder answers with the wrong count, dimension or non-finite
    values (nothing of that chunk is cached), EmbeddingCacheError on an inconsistent cache.
    """
    return CachedEncoding(encoder, cache, role, items, batch_size=batch_size, progress=progress, total=total)
