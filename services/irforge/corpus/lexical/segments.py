"""A bm25s index built in bounded memory: postings streamed into segments on disk, merged on disk.

bm25s's own `index()` holds every (term, document) entry of the corpus three times over while it
builds (and irforge used to stage every token before calling it): ~6.9 KB per document at 1 M.
Here a `SegmentWriter` keeps at most `buffer_bytes` of postings: when full, it sorts them by term
and writes a segment (per term: local document numbers and term frequencies; per document: id,
length, number of distinct terms). `build_index` then merges the segments, term range by term
range, each range at most the same budget, into exactly the arrays bm25s's `index()` makes
(`data`, `indices`, `indptr` of its CSC matrix, every score computed with bm25s's own arithmetic:
Lucene idf, float32 idf times the float64 term-frequency part, rounded to float32), written
sequentially with the file names of `BM25.save`, so `BM25.load(mmap=True)` and bm25s's scoring
search it. Global figures (N, average length, document frequencies) are known only when every
document has been seen, hence raw term frequencies in segments and scores only at the merge.

A committed generation is itself a source for the next one: it keeps each entry's term frequency
(`tf.npy`) and each document's length and distinct terms, so an incremental ingest merges the
previous generation with its new segments instead of re-indexing the corpus from tokens in RAM.
A document id seen again replaces the earlier document (the last one wins).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import json
import math
import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

EMPTY_TOKEN = 0   # bm25s maps unknown and empty input to token 0; it must never match anything
BUFFER_BYTES = 256 * 2**20
# Peak bytes per buffered entry while a segment is sorted and written (term, document, frequency
# as int32, their concatenation, the argsort's int64 and its scratch, the sorted copies), and per
# entry of a merged term range (the same, the gathered positions, float64 arithmetic and the
# float32 scores), measured: a build's extra peak RSS is then about `buffer_bytes`.
BYTES_PER_BUFFERED_ENTRY, BYTES_PER_MERGED_ENTRY = 64, 160
INDEX_FILES = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy")


# -- .npy files read and written in pieces (never memory-mapped while building: mapped pages
#    count in the process's RSS, and a build's RSS is what must stay bounded) -----------------

class NpyReader:
    def __init__(self, path: Path):
        self.path = path
        with path.open("rb") as f:
            major, _ = np.lib.format.read_magic(f)
            read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, _, self.dtype = read_header(f)
            self.offset = f.tell()
        self.length = shape[0]

    def read(self, start: int, end: int) -> np.ndarray:
        with self.path.open("rb") as f:
            f.seek(self.offset + start * self.dtype.itemsize)
            return np.fromfile(f, dtype=self.dtype, count=end - start)

    def read_all(self) -> np.ndarray:
        return self.read(0, self.length)

    def release(self, start: int, end: int) -> None:
        """Give back the disk space of entries [start, end) that the merge has consumed: the
        segments and the index they become need not fit on the disk side by side."""
        _punch_hole(self.path, self.offset + start * self.dtype.itemsize, (end - start) * self.dtype.itemsize)


class NpyWriter:
    """An .npy file of known length and dtype, written front to back."""

    def __init__(self, path: Path, dtype, length: int):
        self.file = path.open("wb")
        self.dtype, self.length, self.written = np.dtype(dtype), length, 0
        np.lib.format.write_array_header_1_0(
            self.file, {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (length,)})

    def write(self, values: np.ndarray) -> None:
        self.file.write(np.ascontiguousarray(values, dtype=self.dtype).tobytes())
        self.written += len(values)

    def close(self) -> None:
        self.file.close()
        if self.written != self.length:
            raise AssertionError(f"{self.file.name}: wrote {self.written} of {self.length} values")


_FALLOC_PUNCH_HOLE = 0x01 | 0x02  # FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _punch_hole(path: Path, offset: int, length: int) -> None:
    if length <= 0 or not hasattr(_libc, "fallocate"):
        return
    fd = os.open(path, os.O_WRONLY)
    try:  # a file system without hole punching keeps the space until the segment is deleted
        _libc.fallocate(fd, _FALLOC_PUNCH_HOLE, ctypes.c_int64(offset), ctypes.c_int64(length))
    finally:
        os.close(fd)


# -- sources: segments and committed generations -----------------------------------------------

@dataclass
class Source:
    """Postings by term (`indptr`, local document numbers `docs`, term frequencies `tf`) and one
    row per document (`doc_ids`, `lengths`, `terms`: its number of distinct terms)."""

    folder: Path
    indptr: NpyReader | None
    docs: NpyReader | None
    tf: NpyReader | None
    disposable: bool   # a segment: its space is given back as the merge consumes it

    @classmethod
    def segment(cls, folder: Path) -> "Source":
        return cls(folder, NpyReader(folder / "indptr.npy"), NpyReader(folder / "docs.npy"),
                   NpyReader(folder / "tf.npy"), True)

    @classmethod
    def generation(cls, folder: Path) -> "Source":
        index = folder / "index"
        if not (index / INDEX_FILES[0]).is_file():  # no document had a term: no postings
            return cls(folder, None, None, None, False)
        return cls(folder, NpyReader(index / INDEX_FILES[2]), NpyReader(index / INDEX_FILES[1]),
                   NpyReader(folder / "tf.npy"), False)

    def per_document(self, name: str) -> np.ndarray:
        return NpyReader(self.folder / f"{name}.npy").read_all()

    @property
    def terms_known(self) -> int:
        return 0 if self.indptr is None else self.indptr.length - 1

    def term_range(self, first: int, last: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Terms, local documents and frequencies of the entries of terms [first, last)."""
        last = min(last, self.terms_known)
        if first >= last:
            return np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.uint8)
        bounds = self.indptr.read(first, last + 1).astype(np.int64)
        start, end = int(bounds[0]), int(bounds[-1])
        terms = np.repeat(np.arange(first, last, dtype=np.int32), np.diff(bounds))
        docs, tf = self.docs.read(start, end), self.tf.read(start, end)
        if self.disposable:
            self.docs.release(start, end)
            self.tf.release(start, end)
        return terms, docs.astype(np.int64), tf


class SegmentWriter:
    """Collects tokenized documents; writes a segment whenever `buffer_bytes` of postings are held."""

    def __init__(self, folder: Path, buffer_bytes: int = BUFFER_BYTES):
        self.folder = folder
        self.capacity = max(1, buffer_bytes // BYTES_PER_BUFFERED_ENTRY)
        self.sources: list[Source] = []
        self._clear()

    def _clear(self) -> None:
        self._terms: list[np.ndarray] = []
        self._docs: list[np.ndarray] = []
        self._tf: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []
        self._distinct: list[np.ndarray] = []
        self._ids: list[str] = []
        self._entries = 0

    def add(self, doc_ids: list[str], token_ids: list[list[int]]) -> None:
        counts = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
        flat = np.fromiter(itertools.chain.from_iterable(token_ids), dtype=np.int64, count=int(counts.sum()))
        owner = np.repeat(np.arange(len(doc_ids), dtype=np.int64), counts)
        kept = flat != EMPTY_TOKEN
        flat, owner = flat[kept], owner[kept]
        # one (document, term) key per token; the unique keys come sorted by document, then term
        width = int(flat.max(initial=0)) + 1
        keys, tf = np.unique(owner * width + flat, return_counts=True)
        docs, terms = np.divmod(keys, width)
        self._terms.append(terms.astype(np.int32))
        self._docs.append((docs + len(self._ids)).astype(np.uint32))
        self._tf.append(tf.astype(np.uint32))
        self._lengths.append(np.bincount(owner, minlength=len(doc_ids)))
        self._distinct.append(np.bincount(docs, minlength=len(doc_ids)))
        self._ids.extend(doc_ids)
        self._entries += len(keys)
        if self._entries >= self.capacity:
            self.flush()

    def flush(self) -> None:
        if not self._ids:
            return
        folder = self.folder / f"s{len(self.sources):06d}"
        folder.mkdir(parents=True)
        terms, docs, tf = (np.concatenate(parts) for parts in (self._terms, self._docs, self._tf))
        self._terms, self._docs, self._tf = [], [], []
        order = np.argsort(terms, kind="stable")  # stable: documents stay ascending within a term
        bounds = np.zeros(int(terms.max(initial=-1)) + 2, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=len(bounds) - 1), out=bounds[1:])
        np.save(folder / "indptr.npy", bounds)
        np.save(folder / "docs.npy", docs[order])
        np.save(folder / "tf.npy", tf[order].astype(np.min_scalar_type(int(tf.max(initial=0)))))
        del terms, docs, tf, order
        np.save(folder / "lengths.npy", np.concatenate(self._lengths).astype(np.int64))
        np.save(folder / "terms.npy", np.concatenate(self._distinct).astype(np.int64))
        np.save(folder / "doc_ids.npy", encode_ids(self._ids))
        self.sources.append(Source.segment(folder))
        self._clear()


def encode_ids(doc_ids: list[str]) -> np.ndarray:
    """Document ids as one fixed-width bytes array (UTF-8): byte order is code point order, so it
    sorts as Python sorts the strings; ids hold no NUL (numpy would strip a trailing one)."""
    return np.array([doc_id.encode() for doc_id in doc_ids], dtype=bytes) if doc_ids else np.zeros(0, "S1")


def decode_ids(encoded: np.ndarray) -> np.ndarray:
    return np.char.decode(encoded, "utf-8").astype(object)


# -- the merge -----------------------------------------------------------------------------------

@dataclass
class Built:
    documents: int
    entries: int


def build_index(sources: list[Source], folder: Path, vocabulary_size: int, k1: float, b: float,
                buffer_bytes: int = BUFFER_BYTES) -> Built:
    """Merge `sources` (in document order) into the generation folder `folder`: `index/` in
    bm25s's format when any document has a term, and the per-entry / per-document sidecars a
    later ingest merges from."""
    ids = _concatenate([source.per_document("doc_ids") for source in sources], "S1")
    alive, by_id = _last_of_each_id(ids)
    each = [source.per_document("lengths") for source in sources]
    offsets = np.cumsum([0] + [len(lengths) for lengths in each])  # a source's first row among all
    lengths = _concatenate(each, np.int64)[alive]
    del each
    distinct = _concatenate([source.per_document("terms") for source in sources], np.int64)[alive]
    np.save(folder / "doc_ids.npy", ids[alive])
    del ids
    documents = int(alive.sum())
    position = np.full(len(alive), -1, dtype=np.int64)  # document number in a source -> in the index
    position[alive] = np.arange(documents)
    rank = np.empty(documents, dtype=np.int64)   # index position -> rank of its id in ascending order
    rank[position[by_id]] = np.arange(documents)
    np.save(folder / "id_rank.npy", rank)
    del rank, by_id
    np.save(folder / "lengths.npy", lengths)
    np.save(folder / "terms.npy", distinct)
    entries = int(distinct.sum())
    tf_dtype = np.result_type(np.uint8, *(s.tf.dtype for s in sources if s.tf is not None))
    if entries == 0:  # no document has a term: no index (bm25s would divide by an average length of 0)
        return Built(documents, 0)
    average_length = lengths.mean()  # exactly bm25s's: the int64 sum is exact in float64
    # bm25s's tf part: tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf), in float64
    saturation = k1 * ((1 - b) + b * lengths.astype(np.float64) / average_length)
    del lengths, distinct
    index = folder / "index"
    index.mkdir()
    data = NpyWriter(index / INDEX_FILES[0], np.float32, entries)
    indices = NpyWriter(index / INDEX_FILES[1], np.int32, entries)
    tf_out = NpyWriter(folder / "tf.npy", tf_dtype, entries)
    frequency = np.zeros(vocabulary_size, dtype=np.int64)
    for first, last in _term_ranges(sources, vocabulary_size, max(1, buffer_bytes // BYTES_PER_MERGED_ENTRY)):
        parts = []
        for source, offset in zip(sources, offsets):
            terms, docs, tf = source.term_range(first, last)
            at = position[docs + offset]
            kept = at >= 0
            parts.append((terms[kept], at[kept], tf[kept]))
        terms, at, tf = (np.concatenate([part[i] for part in parts]) for i in range(3))
        del parts
        order = np.argsort(terms, kind="stable")  # sources in document order: ascending within a term
        terms, at, tf = terms[order], at[order], tf[order]
        del order
        counts = np.bincount(terms - first, minlength=last - first)
        frequency[first:last] = counts
        idf = np.zeros(last - first, dtype=np.float32)
        present = np.flatnonzero(counts)
        idf[present] = [_lucene_idf(int(df), documents) for df in counts[present]]
        tf64 = tf.astype(np.float64)
        scores = idf[terms - first].astype(np.float64) * (tf64 / (saturation[at] + tf64))
        data.write(scores.astype(np.float32))
        indices.write(at.astype(np.int32))
        tf_out.write(tf)
    for writer in (data, indices, tf_out):
        writer.close()
    indptr = np.zeros(vocabulary_size + 1, dtype=np.int64)
    np.cumsum(frequency, out=indptr[1:])
    np.save(index / INDEX_FILES[2], indptr)
    _write_bm25s_parameters(index, k1, b, documents)
    return Built(documents, entries)


def _lucene_idf(df: int, documents: int) -> float:
    """bm25s's _score_idf_lucene, with math.log as bm25s computes it (numpy's log may differ in
    the last bit, and that bit can move the float32 rounding)."""
    return math.log(1 + (documents - df + 0.5) / (df + 0.5))


def _concatenate(arrays: list[np.ndarray], empty_dtype) -> np.ndarray:
    arrays = [a for a in arrays if len(a)]
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=empty_dtype)


def _last_of_each_id(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which rows survive (the last of each id: a re-sent document replaces the earlier one) and
    the surviving rows in ascending id order."""
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    last = np.ones(len(ids), dtype=bool)
    last[:-1] = ordered[:-1] != ordered[1:]
    by_id = order[last]
    alive = np.zeros(len(ids), dtype=bool)
    alive[by_id] = True
    return alive, by_id


def _term_ranges(sources: list[Source], vocabulary_size: int, budget: int):
    """Consecutive term ranges of about `budget` entries each (one term may exceed it alone)."""
    counts = np.zeros(vocabulary_size, dtype=np.int64)
    for source in sources:
        if source.indptr is not None:
            known = min(source.terms_known, vocabulary_size)
            counts[:known] += np.diff(source.indptr.read(0, known + 1))
    total = np.cumsum(counts)
    first = 0
    while first < vocabulary_size:
        done = total[first - 1] if first else 0
        last = max(first + 1, int(np.searchsorted(total, done + budget, side="right")))
        yield first, min(last, vocabulary_size)
        first = last


def _write_bm25s_parameters(index: Path, k1: float, b: float, documents: int) -> None:
    """params and vocab as `BM25.save` writes them. The vocabulary is left empty: searches pass
    token ids, and a loaded vocabulary would hold a dict entry per term in RAM."""
    import bm25s

    model = bm25s.BM25(k1=k1, b=b, method="lucene")
    params = dict(k1=model.k1, b=model.b, delta=model.delta, method=model.method, idf_method=model.idf_method,
                  dtype=model.dtype, int_dtype=model.int_dtype, num_docs=documents,
                  version=metadata.version("bm25s"), backend=model.backend)
    (index / "params.index.json").write_text(json.dumps(params, indent=4))
    (index / "vocab.index.json").write_text("{}")
