"""Exact dense search in one run: irforge's flat file (corpus/vectors/flat.py, float32 and float16)
against FAISS IndexFlatIP and Qdrant Edge's exact path, on the same vectors and queries.

Data: `--docs` unit vectors (384-d) sampled around 300 cluster centres and `--queries` queries from
the same clusters (vector_search.clustered, seeded). Distance: dot product of unit vectors (= cosine),
so every engine scores the very same stored float32 values (Edge's cosine would renormalise them).

Measured, each engine timed in turn per round (best of `--repeat` rounds, _common.measure_interleaved),
k = 100, all queries in one call:
  queries/s            irforge flat float32 / float16, FAISS IndexFlatIP (vectors in RAM), Qdrant Edge
                       exact (a shard with no HNSW graph: exact search never reads one; batches of 256)
  identical top-100    share of queries whose top 100 doc ids, in order, equal another engine's; and
                       against a float64 numpy brute force on the first 200 queries
  extra peak RSS       of one full search over what the process held before it, each in a fresh process:
                       irforge maps its file a block at a time, FAISS holds an index copy of every vector
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


def truth(docs: np.ndarray, queries: np.ndarray, ids: list[str]) -> list[list[str]]:
    """Float64 scores, score descending then doc id descending (the ids sort as the rows do here)."""
    out = []
    for start in range(0, len(queries), 50):
        scores = queries[start:start + 50].astype(np.float64) @ docs.T.astype(np.float64)
        out.extend([ids[i] for i in np.lexsort((-np.arange(len(docs)), -row))[:K]] for row in scores)
    return out


def same(a: list[list[str]], b: list[list[str]]) -> float:
    return float(np.mean([x == y for x, y in zip(a, b, strict=True)]))


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
        reference = truth(docs, queries[:200], ids)
        shard.close()
        np.save(work / "docs.npy", docs)
        np.save(work / "queries.npy", queries)
        # Each in a fresh process (a fork would inherit OpenMP's threads and hang in FAISS or BLAS).
        peaks = {name: _peak_in_subprocess(name, work) for name in ("irforge flat float32", "FAISS IndexFlatIP",
                                                                    "Qdrant Edge exact")}
        figures = {}
        for name, (_, seconds) in timed.items():
            figures[name] = {
                "queries_per_second": round(args.queries / min(seconds), 1), "seconds": [round(s, 3) for s in seconds],
                "identical_top100_vs_irforge_float32": same(found[name], found["irforge flat float32"]),
                "identical_top100_vs_edge_exact": same(found[name], found["Qdrant Edge exact"]),
                "identical_top100_vs_float64_first_200": same(found[name][:200], reference),
                "extra_peak_rss_mib": None if peaks.get(name) is None else round(peaks[name], 1),
            }
    finally:
        shutil.rmtree(work, ignore_errors=True)

    faiss_qps = figures["FAISS IndexFlatIP"]["queries_per_second"]
    for values in figures.values():
        values["vs_faiss"] = round(values["queries_per_second"] / faiss_qps, 2)
    rows = [[name, v["queries_per_second"], v["vs_faiss"], v["identical_top100_vs_edge_exact"],
             v["identical_top100_vs_float64_first_200"], v["extra_peak_rss_mib"]] for name, v in figures.items()]
    print(f"{args.docs:,} x {args.dim}-d vectors ({docs.nbytes / 2**20:.0f} MiB float32), {args.queries:,} queries, k={K}")
    print(table(["engine", "q/s", "x FAISS", "same top-100 as Edge", "same as float64 (200 q)", "extra peak MiB"], rows))
    path = write_results(__file__, {
        "parameters": {key: value for key, value in vars(args).items() if key not in ("peak_of", "work")} | {"k": K, "distance": "dot of unit vectors", "centres": 300},
        "threads": {"faiss_omp": faiss.omp_get_max_threads(), "blas": _blas_threads()},
        "versions": {name: metadata.version(name) for name in ("faiss-cpu", "qdrant-edge-py", "numpy")},
        "build": {"irforge_flat_write_s": round(write_s, 2), "edge_upsert_and_optimize_s": round(edge_build_s, 2)},
        "engines": figures,
    })
    print(f"wrote {path}")


def _peak_in_subprocess(engine: str, work: Path) -> float | None:
    done = subprocess.run([sys.executable, __file__, "--peak-of", engine, "--work", str(work)], capture_output=True,
                          text=True, timeout=3600)
    return float(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None


def peak_of(engine: str, work: Path) -> None:
    """Print the peak RSS (MiB) one search of every query adds over what the process held before it:
    irforge opens its flat folder; FAISS has the vectors in RAM already and builds its index (its own
    copy of them) inside the measured span; Edge loads its shard before it."""
    from _common import _reset_peak, _status_kib

    queries = np.load(work / "queries.npy")
    if engine == "irforge flat float32":
        from irforge.corpus.vectors.flat import FlatVectors

        flat = FlatVectors(work / "flat")
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
    print((_status_kib("VmHWM") - before) / 1024)


def _blas_threads():
    try:
        from threadpoolctl import threadpool_info

        return [{key: pool.get(key) for key in ("internal_api", "num_threads")} for pool in threadpool_info()]
    except ImportError:
        return None


if __name__ == "__main__":
    main()
