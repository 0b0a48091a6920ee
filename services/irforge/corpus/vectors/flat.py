"""Exact dense search at BLAS speed: a flat file of vectors on disk, memory-mapped and scored in
blocks by one matrix product each, with a running top k per query.

Why not FAISS (IndexFlatIP does the same product): it holds every vector in RAM (an 8.8 M x 384
corpus is 13 GiB), breaks ties by its internal row number rather than trec_eval's rule, and its
OpenMP runtime is a second one beside torch's in the same process; numpy's BLAS is already here
and reaches FAISS's queries/s on the same vectors (benchmarks/exact_search.py measures both).

A collection's flat folder holds
    vectors.float32   the vectors, row-major (cosine collections: as the backend stored them, unit length)
    vectors.float16   the same rounded to float16, written on first use of that precision
    ids.utf8          every doc id's UTF-8 bytes, concatenated
    id_offsets.int64  where each row's doc id starts in ids.utf8 (count + 1 entries)
    id_rank.int32     each row's position in doc id order, so ties are broken without touching a string
    manifest.json     count, dimension; written last: the folder is complete once it exists

Memory: one block of rows is mapped, scored and given back (madvise DONTNEED) at a time, so the
process holds a block of vectors, a block of scores and k candidates per query, whatever the corpus
size; the page cache, not this process, keeps the file warm.

Scores and ties: the blocks' float32 products choose each query's k + 16 candidates (ordered by one
int64 key per candidate, the float32 score's order-preserving bits above the doc id's rank, so no
Python comparison is made); those are scored again in float64 and cut to k by score descending, then
doc id descending (irforge.ranking's rule). The float64 score is one row's own dot product, so it
does not change with the queries batched together, and identical vectors tie exactly.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from irforge.common.files import atomic_write, write_json_atomic
from irforge.ranking import Ranking

PRECISIONS = ("float32", "float16")
MANIFEST = "manifest.json"
BLOCK_BYTES = 32 * 2**20      # float32 bytes of vectors scored per matrix product (RSS is bounded by it)
SCORE_BYTES = 32 * 2**20      # float32 scores of one block (queries x rows): RSS is bounded by it too
FIRST_BLOCK_ROWS = 2048       # rows of the first block, whose selection sets each query's threshold
CROWDED = 4                   # a block passing more than this many k per query is cut by its own k-th score
RESCORE_MARGIN = 16           # candidates kept beyond k for the float64 rescoring (see _rescored)
PAGE = mmap.PAGESIZE


def write_flat(folder: str | Path, chunks: Iterable[tuple[list[str], np.ndarray]], dimension: int) -> int:
    """Write the flat folder from (doc ids, float32 vectors) chunks; the number of rows. Any earlier
    folder is replaced only once the new one is complete (its manifest is written last)."""
    folder = Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    offsets = [0]
    count = 0
    ids: list[str] = []   # kept for the rank below; one Python string per document (see the report's note)
    with atomic_write(folder / "vectors.float32", "wb") as vectors, atomic_write(folder / "ids.utf8", "wb") as names:
        for doc_ids, block in chunks:
            block = np.ascontiguousarray(block, dtype=np.float32)
            if block.shape != (len(doc_ids), dimension):
                raise ValueError(f"{len(doc_ids)} doc ids for vectors of shape {block.shape}, dimension {dimension}")
            vectors.write(block.tobytes())
            for doc_id in doc_ids:
                encoded = doc_id.encode("utf-8")
                names.write(encoded)
                offsets.append(offsets[-1] + len(encoded))
            ids.extend(doc_ids)
            count += len(doc_ids)
    order = sorted(range(count), key=ids.__getitem__)   # code-point order = UTF-8 byte order (trec_eval's strcmp)
    rank = np.empty(count, dtype=np.int32)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(count, dtype=np.int32)
    _write_array(folder / "id_offsets.int64", np.asarray(offsets, dtype=np.int64))
    _write_array(folder / "id_rank.int32", rank)
    write_json_atomic(folder / MANIFEST, {"format": 1, "count": count, "dimension": dimension})
    return count


def _write_array(path: Path, array: np.ndarray) -> None:
    with atomic_write(path, "wb") as handle:
        handle.write(array.tobytes())


def is_complete(folder: str | Path) -> bool:
    return (Path(folder) / MANIFEST).is_file()


def stamp(folder: str | Path) -> tuple[int, int] | None:
    """Which writing of the folder this is (its manifest's inode and time); None when incomplete.
    An open FlatVectors whose stamp differs reads a folder another backend has since rewritten."""
    try:
        status = os.stat(Path(folder) / MANIFEST)
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_mtime_ns


class FlatVectors:
    """An open flat folder: `search` scores query vectors against every row exactly."""

    def __init__(self, folder: str | Path, precision: str = "float32", block_bytes: int = BLOCK_BYTES):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        self.folder = Path(folder)
        self.stamp = stamp(self.folder)
        manifest = json.loads((self.folder / MANIFEST).read_text())
        self.count, self.dimension, self.precision = manifest["count"], manifest["dimension"], precision
        self.block_rows = max(1, block_bytes // (4 * self.dimension))
        self._maps: dict[str, mmap.mmap] = {}
        if precision == "float16" and not (self.folder / "vectors.float16").is_file():
            self._write_float16()
        self._offsets = np.memmap(self.folder / "id_offsets.int64", dtype=np.int64, mode="r")
        self._rank = np.memmap(self.folder / "id_rank.int32", dtype=np.int32, mode="r") if self.count else np.empty(0, np.int32)

    def _write_float16(self) -> None:
        """vectors.float16 from vectors.float32, a block at a time."""
        with atomic_write(self.folder / "vectors.float16", "wb") as out:
            for start, block in self._blocks("float32"):
                out.write(block.astype(np.float16).tobytes())

    def _mapped(self, name: str) -> mmap.mmap:
        """The file mapped once for the object's life (a mapping closes only when no view of it is left)."""
        if name not in self._maps:
            with open(self.folder / name, "rb") as handle:
                self._maps[name] = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        return self._maps[name]

    def _blocks(self, precision: str, block_rows: int | None = None, first_rows: int | None = None):
        """(first row, rows) per block, each a view of the mapped file given back to the kernel after use;
        the first block `first_rows` long when given, the others `block_rows` (default self.block_rows)."""
        if not self.count:
            return
        dtype = np.dtype(precision)
        row_bytes = dtype.itemsize * self.dimension
        mapped = self._mapped(f"vectors.{precision}")
        block_rows = block_rows or self.block_rows
        starts = [0, *range(first_rows, self.count, block_rows)] if first_rows else range(0, self.count, block_rows)
        for start in starts:
            rows = min(first_rows if first_rows and start == 0 else block_rows, self.count - start)
            yield start, np.frombuffer(mapped, dtype=dtype, count=rows * self.dimension,
                                       offset=start * row_bytes).reshape(rows, self.dimension)
            # Let go of the block's pages (they stay in the page cache, out of this process's RSS).
            low = (start * row_bytes) // PAGE * PAGE
            mapped.madvise(mmap.MADV_DONTNEED, low, (start + rows) * row_bytes - low)

    def doc_ids(self, rows: np.ndarray) -> list[str]:
        if not len(rows):
            return []
        names = self._mapped("ids.utf8")
        starts, ends = np.asarray(self._offsets[rows]).tolist(), np.asarray(self._offsets[rows + 1]).tolist()
        return [names[start:end].decode("utf-8") for start, end in zip(starts, ends)]

    def top_rows(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query row, vector row, score) of each query's top k, every query's hits together in
        rank order (score descending, doc id descending)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        top = RunningTopK(len(queries), k + RESCORE_MARGIN)
        # The block's scores (queries x rows) are bounded too; the first block is short, so that the
        # one full selection (np.partition, which sets every query's threshold) is cheap.
        block_rows = max(1, min(self.block_rows, SCORE_BYTES // (4 * max(len(queries), 1))))
        first_rows = min(block_rows, max(FIRST_BLOCK_ROWS, 4 * top.k))
        scores = np.empty(len(queries) * min(block_rows, max(self.count, 1)), dtype=np.float32)
        converted = np.empty((block_rows, self.dimension), dtype=np.float32) if self.precision == "float16" else None
        for start, block in self._blocks(self.precision, block_rows, first_rows):
            if converted is not None:
                np.copyto(converted[:len(block)], block)
                block = converted[:len(block)]
            out = scores[:len(queries) * len(block)].reshape(len(queries), len(block))   # contiguous: ravel is a view
            np.matmul(queries, block.T, out=out)
            top.add(out, start, self._rank)
        query_rows, rows, _ = top.result()
        return self._rescored(queries, query_rows, rows, k)

    def _rescored(self, queries: np.ndarray, query_rows: np.ndarray, rows: np.ndarray, k: int):
        """The candidates scored again in float64, one row at a time, and cut to k: a query's scores
        then do not depend on the queries batched with it (a matrix product's rounding does), and
        identical vectors score identically, so the tie rule alone orders them."""
        if not len(rows):
            return query_rows, rows, np.empty(0, dtype=np.float64)
        scores = np.empty(len(rows), dtype=np.float64)
        dtype = np.dtype(self.precision)
        row_bytes = dtype.itemsize * self.dimension
        wide = queries.astype(np.float64)
        bounds = np.searchsorted(query_rows, np.arange(len(queries) + 1)).tolist()
        # Candidates are read, not mapped: they are spread over the file, and the kernel maps the
        # cached pages around each touched one too (fault-around), so mapped reads would hold most of
        # the file by the end of a search.
        with open(self.folder / f"vectors.{self.precision}", "rb", buffering=0) as handle:
            fd = handle.fileno()
            for query, (start, end) in enumerate(zip(bounds[:-1], bounds[1:])):
                data = b"".join(os.pread(fd, row_bytes, row * row_bytes) for row in rows[start:end].tolist())
                vectors = np.frombuffer(data, dtype=dtype).reshape(end - start, self.dimension).astype(np.float64)
                # einsum's per-row sum of products: a row's score does not depend on the rows beside it
                scores[start:end] = np.einsum("ij,j->i", vectors, wide[query])
        order = np.lexsort((-np.asarray(self._rank[rows], dtype=np.int64), -scores, query_rows))
        query_rows, rows, scores = query_rows[order], rows[order], scores[order]
        place = np.arange(len(order)) - np.searchsorted(query_rows, query_rows)
        keep = place < k
        return query_rows[keep], rows[keep], scores[keep]

    def search(self, queries: np.ndarray, k: int) -> list[Ranking]:
        query_rows, rows, scores = self.top_rows(queries, k)
        doc_ids = np.asarray(self.doc_ids(rows), dtype=object)
        bounds = np.searchsorted(query_rows, np.arange(len(queries) + 1))
        return [Ranking(doc_ids[a:b], scores[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]

    def close(self) -> None:
        """Drop the mappings (each is unmapped once no array still views it)."""
        self._maps.clear()
        self._rank = np.empty(0, np.int32)


def order_keys(scores: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """One int64 per (float32 score, doc id rank) that orders as (score, rank) do together."""
    bits = (np.asarray(scores, dtype=np.float32) + np.float32(0)).view(np.int32)   # + 0 makes -0.0 equal +0.0
    ordered = bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))   # negative floats: flip so larger is larger
    return (ordered.astype(np.int64) << 32) | ranks.astype(np.int64)


EMPTY = np.iinfo(np.int64).min   # the key of a slot no candidate holds yet


class RunningTopK:
    """The best k (score, rank) pairs per query over blocks of scores, kept as (queries x k) arrays.

    A block costs one comparison per score against each query's current k-th score; only the few
    scores at or above it are merged: laid out as (queries x most new per query) beside the k kept,
    and cut back to k per row by np.argpartition on the keys. The first block, when wider than k,
    is cut by its own k-th score (np.partition) so the first merge stays small.
    """

    def __init__(self, queries: int, k: int):
        self.queries, self.k = queries, k
        self.keys = np.full((queries, k), EMPTY, dtype=np.int64)
        self.rows = np.full((queries, k), -1, dtype=np.int64)
        self.scores = np.full((queries, k), -np.inf, dtype=np.float32)
        self.threshold = np.full(queries, -np.inf, dtype=np.float32)
        self.full = False

    def add(self, scores: np.ndarray, first_row: int, rank: np.ndarray) -> None:
        width = scores.shape[1]
        above = scores >= self.threshold[:, None]
        if width > self.k and (not self.full or np.count_nonzero(above) > CROWDED * self.k * self.queries):
            # Not every query holds k yet, or the block is crowded above the thresholds (a cluster of
            # near vectors): cut it by its own k-th score too, so a merge stays about k per query.
            kth = np.partition(scores, width - self.k, axis=1)[:, width - self.k]
            np.greater_equal(scores, np.maximum(self.threshold, kth)[:, None], out=above)
        passing = np.flatnonzero(above)   # 1-d: several times faster than a 2-d nonzero
        del above
        if not len(passing):
            return
        query_rows, columns = np.divmod(passing, width)    # grouped by query (row-major order)
        found = scores.ravel()[passing]
        rows = columns + first_row
        self._merge(query_rows, rows, found, order_keys(found, np.asarray(rank[rows])))

    def _merge(self, query_rows, rows, scores, keys) -> None:
        counts = np.bincount(query_rows, minlength=self.queries)
        width = self.k + int(counts.max())
        place = np.arange(len(query_rows)) - np.searchsorted(query_rows, query_rows) + self.k
        merged_keys = np.full((self.queries, width), EMPTY, dtype=np.int64)
        merged_rows = np.full((self.queries, width), -1, dtype=np.int64)
        merged_scores = np.full((self.queries, width), -np.inf, dtype=np.float32)
        merged_keys[:, :self.k], merged_rows[:, :self.k], merged_scores[:, :self.k] = self.keys, self.rows, self.scores
        merged_keys[query_rows, place], merged_rows[query_rows, place], merged_scores[query_rows, place] = keys, rows, scores
        best = np.argpartition(~merged_keys, self.k - 1, axis=1)[:, :self.k]   # ~key: ascending is key descending
        self.keys = np.take_along_axis(merged_keys, best, axis=1)
        self.rows = np.take_along_axis(merged_rows, best, axis=1)
        self.scores = np.take_along_axis(merged_scores, best, axis=1)
        filled = (self.keys != EMPTY).all(axis=1)
        self.full = bool(filled.all())
        self.threshold = np.where(filled, self.scores.min(axis=1), -np.inf).astype(np.float32)

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query row, vector row, float32 score) of every kept candidate, grouped by query."""
        held = self.keys != EMPTY
        query_rows = np.nonzero(held)[0]
        return query_rows, self.rows[held], self.scores[held]
