"""Exact dense search in one run: irforge's flat file (corpus/vectors/flat.py, float32 and float16)
against FAISS IndexFlatIP and Qdrant Edge's exact path, on the same vectors and queries.

Data: `--docs` unit vectors (384-d) sampled around 300 cluster centres and `--queries` queries from
the same clusters (vector_search.clustered, seeded). Distance: dot product of unit vectors (= cosine),
so every engine scores the very same stored float32 values (Edge's cosine would renormalise them).

Measured, each engine timed in turn per round (best of `--repeat` rounds, _common.measure_interleaved),
k = 100, all queries in one call:
  queries/s            irforge flat float32 / float16, FAISS IndexFlatIP (vectors in RAM), Qdrant Edge
                       exact (a shard with no HNSW graph: exact search never reads one; batches of 256)
  agreement            each engine's top 100 against a float64 brute force of every query (reference_top,
                       the house rule: score descending, then doc id descending; the ids are zero-padded, so
                       id order is row order), three ways: the same ids in the same order; the same set of
                       ids; and "equal within float32 rounding": at every rank the engine's document and
                       the reference's have float64 scores within ROUNDING (384 x 2^-24: the bound on a
                       float32 dot product's error for unit vectors), i.e. any difference is a swap of
                       documents whose scores float32 arithmetic cannot tell apart
  peak RSS             of one full search, each in a fresh process: its whole peak (VmHWM) and the part the
                       search adds, beside the size of the vector file it searches: irforge maps its file a
                       block at a time, FAISS holds an index copy of every vector
Threads: numpy's BLAS and FAISS's OpenMP each use every usable core (recorded).

Run: .venv/bin/python benchmarks/exact_search.py [--docs 100000] [--queries 1000]
Writes benchmarks/results/exact_search.json. Needs faiss-cpu (pyproject's `bench` extra).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from _common import measure_interleaved, table, write_results
from vector_search import clustered

K = 100
EDGE_BATCH = 256   # queries per query_batch call, as the embedded backend sends them


def build_edge(docs: np.ndarray, folder: Path):
    import qdrant_edge as qe

    config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=docs.shape[1], distance=qe.Distance.Dot),
                           optimizers=qe.EdgeOptimizersConfig(indexing_threshold=2**31 - 1))  # never an HNSW graph
    shard = qe.EdgeShard.create(str(folder), config)
    for start in range(0, len(docs), 1024):
        rows = docs[start:start + 1024].tolist()
        shard.update(qe.UpdateOperation.upsert_points([qe.Point(start + i, row, {}) for i, row in enumerate(rows)]))
    shard.optimize()
    return shard


def edge_search(shard, queries: np.ndarray) -> list[list[int]]:
    import qdrant_edge as qe

    found = []
    for start in range(0, len(queries), EDGE_BATCH):
        requests = [qe.QueryRequest(limit=K, query=qe.Query.Nearest(row), with_payload=False,
                                    params=qe.SearchParams(exact=True)) for row in queries[start:start + EDGE_BATCH].tolist()]
        found.extend([int(p.id) for p in points] for points in shard.query_batch(qe.QueryBatchRequest(requests)))
    return found


ROUNDING = 384 * 2.0 ** -24   # |float32 dot - exact| <= n * u * |x| |y| for unit x, y in 384-d


def reference_top(docs: np.ndarray, queries: np.ndarray, block_rows: int = 65_536) -> tuple[np.ndarray, np.ndarray]:
    """(rows, float64 scores) of each query's top K by score descending, then row (= doc id) descending;
    scored in float64 over blocks of rows, each block's best 2 K kept (no block holds more of a top K),
    then the best K + 16 of those scored again one row at a time (einsum's per-row sum): a matrix
    product's rounding depends on the block's shape, so identical vectors in two blocks could
    otherwise differ in the last bit and not tie."""
    queries64 = queries.astype(np.float64)
    kept_rows, kept_scores = [], []
    for start in range(0, len(docs), block_rows):
        scores = queries64 @ docs[start:start + block_rows].astype(np.float64).T
        width = min(2 * K, scores.shape[1])
        best = np.argpartition(-scores, width - 1, axis=1)[:, :width]
        kept_rows.append(best + start)
        kept_scores.append(np.take_along_axis(scores, best, axis=1))
    rows, scores = np.concatenate(kept_rows, axis=1), np.concatenate(kept_scores, axis=1)
    width = min(K + 16, rows.shape[1])
    best = np.argpartition(-scores, width - 1, axis=1)[:, :width]
    rows = np.take_along_axis(rows, best, axis=1)
    scores = np.stack([np.einsum("ij,j->i", docs[row].astype(np.float64), query) for row, query in zip(rows, queries64)])
    order = np.lexsort((-rows, -scores), axis=1)[:, :K]
    return np.take_along_axis(rows, order, axis=1), np.take_along_axis(scores, order, axis=1)


def agreement(found: list[list[int]], docs: np.ndarray, queries: np.ndarray, reference) -> dict:
    """Shares of queries whose top K equals the reference's: in order, as a set, within float32 rounding."""
    rows, scores = reference
    same_order = same_set = within = 0
    for query, (got, want, want_scores) in enumerate(zip(found, rows, scores, strict=True)):
        got = np.asarray(got, dtype=np.int64)
        same_order += len(got) == K and bool((got == want).all())
        same_set += set(got.tolist()) == set(want.tolist())
        if len(got) == K:
            got_scores = docs[got].astype(np.float64) @ queries[query].astype(np.float64)
            within += bool(np.abs(got_scores - want_scores).max() <= ROUNDING)
    n = len(found)
    return {"same_order": same_order / n, "same_set": same_set / n, "within_float32_rounding": within / n}


def same(a: list, b: list) -> float:
    return float(np.mean([list(x) == list(y) for x, y in zip(a, b, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peak-of", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peak_of:
        return peak_of(args.peak_of, args.work)

    import faiss

    from irforge.corpus.vectors.flat import FlatVectors, write_flat

    docs, queries = clustered(args.docs, args.queries, args.dim, 300, args.seed)
    ids = [f"doc-{i:08d}" for i in range(len(docs))]   # zero-padded: id order is row order
    work = Path(tempfile.mkdtemp(prefix="irforge-exact-"))
    try:
        started = time.perf_counter()
        write_flat(work / "flat", ((ids[s:s + 65536], docs[s:s + 65536]) for s in range(0, len(ids), 65536)), args.dim)
        write_s = time.perf_counter() - started
        flat32, flat16 = FlatVectors(work / "flat"), FlatVectors(work / "flat", "float16")
        started = time.perf_counter()
        shard = build_edge(docs, work / "edge")
        edge_build_s = time.perf_counter() - started
        index = faiss.IndexFlatIP(args.dim)
        index.add(docs)

        engines = {
            "irforge flat float32": lambda: [list(r) for r in flat32.search(queries, K)],
            "irforge flat float16": lambda: [list(r) for r in flat16.search(queries, K)],
            "FAISS IndexFlatIP": lambda: [[ids[i] for i in row] for row in index.search(queries, K)[1]],
            "Qdrant Edge exact": lambda: [[ids[i] for i in row] for row in edge_search(shard, queries)],
        }
        timed = measure_interleaved(engines, args.repeat)
        found = {name: result for name, (result, _) in timed.items()}
        started = time.perf_counter()
        reference = reference_top(docs, queries)
        reference_s = time.perf_counter() - started
        shard.close()
        np.save(work / "docs.npy", docs)
        np.save(work / "queries.npy", queries)
        vector_file_mib = (work / "flat" / "vectors.float32").stat().st_size / 2**20
        # Each in a fresh process (a fork would inherit OpenMP's threads and hang in FAISS or BLAS).
        peaks = {name: _peak_in_subprocess(name, work) for name in PEAK_OF}
        figures = {}
        for name, (_, seconds) in timed.items():
            rows = [[int(doc_id[4:]) for doc_id in ranking] for ranking in found[name]]   # "doc-00000042" -> 42
            figures[name] = {
                "queries_per_second": round(args.queries / min(seconds), 1), "seconds": [round(s, 3) for s in seconds],
                "vs_float64_reference": agreement(rows, docs, queries, reference),
                "identical_top100_vs_irforge_float32": same(found[name], found["irforge flat float32"]),
                "identical_top100_vs_edge_exact": same(found[name], found["Qdrant Edge exact"]),
                **({"search_process_rss_mib": peaks[name]} if peaks.get(name) else {}),
            }
        block_peaks = {name: peaks[name] for name in PEAK_OF if name not in figures and peaks.get(name)}
    finally:
        shutil.rmtree(work, ignore_errors=True)

    faiss_qps = figures["FAISS IndexFlatIP"]["queries_per_second"]
    for values in figures.values():
        values["vs_faiss"] = round(values["queries_per_second"] / faiss_qps, 2)
    rows = []
    for name, v in figures.items():
        agree, rss = v["vs_float64_reference"], v.get("search_process_rss_mib") or {}
        rows.append([name, v["queries_per_second"], v["vs_faiss"], agree["same_order"], agree["same_set"],
                     agree["within_float32_rounding"], v["identical_top100_vs_edge_exact"], rss.get("peak"), rss.get("search_extra")])
    print(f"{args.docs:,} x {args.dim}-d vectors ({vector_file_mib:,.0f} MiB float32 on disk), {args.queries:,} queries, k={K}")
    print(table(["engine", "q/s", "x FAISS", "same order as float64", "same set", "within f32 rounding",
                 "same order as Edge", "search process peak MiB", "of it the search"], rows))
    for name, rss in block_peaks.items():
        print(f"{name}: search process peak {rss['peak']:,.0f} MiB, of it the search {rss['search_extra']:,.0f} MiB")
    path = write_results(__file__, {
        "parameters": {key: value for key, value in vars(args).items() if key not in ("peak_of", "work")} | {"k": K, "distance": "dot of unit vectors", "centres": 300},
        "threads": {"faiss_omp": faiss.omp_get_max_threads(), "blas": _blas_threads()},
        "versions": {name: metadata.version(name) for name in ("faiss-cpu", "qdrant-edge-py", "numpy")},
        "build": {"irforge_flat_write_s": round(write_s, 2), "edge_upsert_and_optimize_s": round(edge_build_s, 2),
                  "float64_reference_s": round(reference_s, 2)},
        "vector_file_mib": round(vector_file_mib, 1),
        "rounding_tolerance": ROUNDING,
        "engines": figures,
        "irforge_peak_by_block": block_peaks,
    })
    print(f"wrote {path}")


PEAK_OF = ("irforge flat float32", "irforge flat float32, 8 MiB blocks", "FAISS IndexFlatIP", "Qdrant Edge exact")


def _peak_in_subprocess(engine: str, work: Path) -> dict | None:
    done = subprocess.run([sys.executable, __file__, "--peak-of", engine, "--work", str(work)], capture_output=True,
                          text=True, timeout=3600)
    if done.returncode != 0:
        print(f"peak of {engine} not measured: {done.stderr[-500:]}", file=sys.stderr)
        return None
    before, peak = (float(x) for x in done.stdout.strip().splitlines()[-1].split())
    return {"before_search": round(before, 1), "peak": round(peak, 1), "search_extra": round(peak - before, 1)}


def peak_of(engine: str, work: Path) -> None:
    """Print the process's RSS before one search of every query and its peak RSS during it (MiB):
    irforge opens its flat folder (the file is mapped a block at a time during the search); FAISS
    has the vectors in RAM already and builds its index (its own copy of them) inside the measured
    span; Edge loads its shard before it."""
    from _common import _reset_peak, _status_kib

    queries = np.load(work / "queries.npy")
    if engine.startswith("irforge flat float32"):
        from irforge.corpus.vectors.flat import BLOCK_BYTES, FlatVectors

        flat = FlatVectors(work / "flat", block_bytes=8 * 2**20 if "8 MiB" in engine else BLOCK_BYTES)
        search = lambda: flat.search(queries, K)  # noqa: E731
    elif engine == "FAISS IndexFlatIP":
        import faiss

        docs = np.load(work / "docs.npy")

        def search():
            index = faiss.IndexFlatIP(docs.shape[1])
            index.add(docs)
            return index.search(queries, K)
    else:
        import qdrant_edge as qe

        shard = qe.EdgeShard.load(str(work / "edge"))
        search = lambda: edge_search(shard, queries)  # noqa: E731
    before = _status_kib("VmRSS")
    if not _reset_peak():
        sys.exit(1)
    search()
    print(before / 1024, _status_kib("VmHWM") / 1024)


def _blas_threads():
    try:
        from threadpoolctl import threadpool_info

        return [{key: pool.get(key) for key in ("internal_api", "num_threads")} for pool in threadpool_info()]
    except ImportError:
        return None


if __name__ == "__main__":
    main()
