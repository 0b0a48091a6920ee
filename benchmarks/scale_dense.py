"""Cost curves of dense search: irforge's flat file (exact) and the embedded Qdrant Edge backend
(HNSW) from 10 k to 5 M vectors on disk. The BM25 curves are benchmarks/scale.py's.

Vectors: 384-d unit vectors around 300 seeded cluster centres (exact_search's model, noise 0.6),
generated a chunk of 8,192 rows (12 MiB) at a time from a seed per chunk and streamed to disk: no step holds
them whole (5 M x 384 float32 is 7.3 GiB). Not _synthetic's text-derived vectors: those need the
corpus's text generated first (330 s per million documents here), and the cost of exact search does
not depend on what the vectors are; HNSW's recall does, so its recall here is on these vectors
(benchmarks/hnsw_recall.py measures it on real SciFact embeddings). Queries: `--queries` from the
same centres. k = 100, doc ids _synthetic.document_id(row).

Each part runs in its own subprocess, so its peak RSS (ru_maxrss) is its own:
  flat-write    write_flat from the streamed chunks: docs/s (generation time excluded), peak RSS, disk;
  flat-search   FlatVectors.search, float32, all queries at once: q/s (best of --rounds), peak RSS
                beside the vector file's size, and the share of queries whose top 100 equals a float64
                numpy brute force (exact_search.reference_top: score descending, then doc id descending);
  edge          sizes up to --hnsw-max: EdgeVectorBackend (irforge's embedded backend) upsert + commit,
                which builds Edge's HNSW graph and writes the flat file: docs/s, peak RSS, disk; HNSW
                search at ef 128: q/s, recall@100 against the float64 brute force; and the recall irforge
                records (search_recall.measured_width, 100 sampled queries) beside the recall of the same
                sampled queries counted here from the brute force.
Above --hnsw-max the Edge part is skipped: its commit builds the graph in memory, 5.5 GiB peak at
1 M (benchmarks/results/scale.json), growing about linearly: ~27 GiB at 5 M, over this 24 GiB machine.

Then, as scale.py prints them, every figure's growth per 10x of corpus and its cost exponent b.

Run: nice -n 10 .venv/bin/python benchmarks/scale_dense.py [--sizes 10000 100000 1000000 5000000]
     [--work-dir DIR] [--hnsw-max 1000000]      writes benchmarks/results/scale_dense.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import _synthetic
import scale
from _common import RESULTS_DIR, rss_mib, write_results

DIMENSION, CENTRES, NOISE, CHUNK, K = 384, 300, 0.6, 8_192, 100
COLLECTION = "scale-dense"
RECALL_SAMPLE = 100


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# -- vectors, streamed ----------------------------------------------------------------------

def centres(seed: int) -> np.ndarray:
    return np.random.default_rng([seed, 0]).normal(size=(CENTRES, DIMENSION)).astype(np.float32)


def around(centre: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    x = centre[rng.integers(0, CENTRES, n)]
    x += NOISE * rng.standard_normal(size=(n, DIMENSION), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def chunks(size: int, seed: int, spent: list[float]):
    """(doc ids, vectors) per CHUNK rows; chunk i from its own seed, so any chunk can be made alone.
    `spent` collects the seconds spent generating (to leave them out of the write rate)."""
    centre = centres(seed)
    for index, start in enumerate(range(0, size, CHUNK)):
        began = time.perf_counter()
        rows = min(CHUNK, size - start)
        block = around(centre, np.random.default_rng([seed, 1, index]), rows)
        ids = [_synthetic.document_id(start + i) for i in range(rows)]
        spent.append(time.perf_counter() - began)
        yield ids, block


def queries(count: int, seed: int) -> np.ndarray:
    return around(centres(seed), np.random.default_rng([seed, 2]), count)


def reference(folder: Path, query_vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float64 brute force over the flat file's vectors, read through numpy's own memmap."""
    from exact_search import reference_top

    manifest = json.loads((folder / "flat" / "manifest.json").read_text())
    docs = np.memmap(folder / "flat" / "vectors.float32", dtype=np.float32, mode="r",
                     shape=(manifest["count"], manifest["dimension"]))
    return reference_top(docs, query_vectors)


def rows_of(rankings) -> list[list[int]]:
    return [[int(doc_id[1:]) for doc_id in ranking] for ranking in rankings]   # "d0000042" -> 42


# -- workers: one subprocess each -------------------------------------------------------------

def worker_flat_write(args, folder: Path) -> dict:
    from irforge.corpus.vectors.flat import write_flat

    spent: list[float] = []
    before = rss_mib()
    started = time.perf_counter()
    count = write_flat(folder / "flat", chunks(args.size, args.seed, spent), DIMENSION)
    seconds = time.perf_counter() - started - sum(spent)
    return {"documents": count, "write_s": seconds, "generate_s": sum(spent), "docs_per_s": count / seconds,
            "rss_before_mib": before, "peak_rss_mib": peak_rss_mib(), "disk_mib": scale.dir_mib(folder / "flat"),
            "vector_file_mib": (folder / "flat" / "vectors.float32").stat().st_size / 2**20}


def worker_flat_search(args, folder: Path) -> dict:
    from exact_search import agreement

    from irforge.corpus.vectors.flat import FlatVectors

    query_vectors = np.load(folder / "queries.npy")
    before = rss_mib()
    flat = FlatVectors(folder / "flat")
    best, found = math.inf, None
    for _ in range(args.rounds):
        found = None
        started = time.perf_counter()
        found = flat.search(query_vectors, K)
        best = min(best, time.perf_counter() - started)
    search_peak = peak_rss_mib()   # before the reference below, which reads the file through numpy
    rows = rows_of(found)
    (folder / "exact.json").write_text(json.dumps(rows))
    started = time.perf_counter()
    truth_rows, truth_scores = reference(folder, query_vectors)
    np.save(folder / "reference.npy", truth_rows)
    docs = np.memmap(folder / "flat" / "vectors.float32", dtype=np.float32, mode="r", shape=(flat.count, DIMENSION))
    agree = agreement(rows, docs, query_vectors, (truth_rows, truth_scores))
    return {"seconds": best, "qps": len(query_vectors) / best, "rss_before_mib": before, "peak_rss_mib": search_peak,
            "vector_file_mib": (folder / "flat" / "vectors.float32").stat().st_size / 2**20,
            "vs_float64": agree, "reference_s": time.perf_counter() - started}


def worker_edge(args, folder: Path) -> dict:
    from irforge.corpus.core import CorpusService
    from irforge.corpus.vectors.base import HnswSettings
    from irforge.corpus.vectors.edge import EdgeVectorBackend
    from irforge.pipeline.retrievers.search_recall import measured_width

    hnsw = HnswSettings()
    backend = EdgeVectorBackend(folder / "edge")
    backend.create(COLLECTION, DIMENSION, "cosine", "synthetic", hnsw)
    spent: list[float] = []
    before = rss_mib()
    started = time.perf_counter()
    for ids, block in chunks(args.size, args.seed, spent):
        backend.upsert(COLLECTION, ids, block)
    upsert_s = time.perf_counter() - started - sum(spent)
    upsert_peak = peak_rss_mib()
    started = time.perf_counter()
    backend.commit(COLLECTION)
    commit_s = time.perf_counter() - started
    build_peak = peak_rss_mib()
    query_vectors = np.load(folder / "queries.npy")
    truth = np.load(folder / "reference.npy")
    best, found = math.inf, None
    for _ in range(args.rounds):
        started = time.perf_counter()
        found = backend.search(COLLECTION, query_vectors, K, exact=False)
        best = min(best, time.perf_counter() - started)
    rows = rows_of(found)

    def recall(query_rows) -> float:
        return float(np.mean([len(set(rows[q]) & set(truth[q].tolist())) / K for q in query_rows]))

    query_ids = [f"q{i}" for i in range(len(query_vectors))]
    use_ef = lambda ef: backend.create(COLLECTION, DIMENSION, "cosine", "synthetic", HnswSettings(ef_search=ef))  # noqa: E731
    record = measured_width(CorpusService(None, backend), COLLECTION, query_ids, query_vectors, K, use_ef=use_ef,
                            ef=hnsw.ef_search, sample=RECALL_SAMPLE, target=None)
    sampled = [query_ids.index(q) for q in record["query_ids"]]
    backend.close()
    points = args.size
    return {"points": points, "upsert_s": upsert_s, "commit_s": commit_s, "docs_per_s": points / (upsert_s + commit_s),
            "rss_before_mib": before, "upsert_peak_rss_mib": upsert_peak, "peak_rss_mib": build_peak,
            "disk_mib": scale.dir_mib(folder / "edge"),
            "hnsw": {"ef": hnsw.ef_search, "seconds": best, "qps": len(query_vectors) / best,
                     f"recall@{K}": recall(range(len(query_vectors))),
                     "irforge_recorded_recall": record[f"recall@{K}"], "queries_sampled": record["queries_sampled"],
                     "independent_recall_same_sample": recall(sampled)}}


WORKERS = {"flat-write": worker_flat_write, "flat-search": worker_flat_search, "edge": worker_edge}


def run_worker(name: str, folder: Path, size: int, args) -> dict:
    command = [sys.executable, __file__, "--worker", name, "--folder", str(folder), "--size", str(size),
               "--seed", str(args.seed), "--rounds", str(args.rounds)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"worker {name} failed on {folder}:\n{done.stderr[-4000:]}")
    log(f"  {name}: {done.stdout}")
    return json.loads(done.stdout)


def measure_size(size: int, args) -> dict:
    folder = args.work_dir / f"n{size}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    np.save(folder / "queries.npy", queries(args.queries, args.seed))
    try:
        figures = {"flat_write": run_worker("flat-write", folder, size, args)}
        figures["flat_search"] = run_worker("flat-search", folder, size, args)
        if size <= args.hnsw_max:
            figures["edge"] = run_worker("edge", folder, size, args)
        else:
            figures["edge"] = {"skipped": f"above --hnsw-max {args.hnsw_max:,}: Edge's HNSW graph is built in "
                                          "memory (5.5 GiB peak at 1 M, ~27 GiB extrapolated to 5 M)"}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return figures


# (label, path, kind) as scale.FIGURES
FIGURES = [
    ("flat write docs/s", ("flat_write", "docs_per_s"), "rate"),
    ("flat write peak RSS MiB", ("flat_write", "peak_rss_mib"), "memory"),
    ("flat on disk MiB", ("flat_write", "disk_mib"), "memory"),
    (f"exact q/s k={K} (flat float32)", ("flat_search", "qps"), "query"),
    ("exact search peak RSS MiB", ("flat_search", "peak_rss_mib"), "memory"),
    ("  vector file MiB", ("flat_search", "vector_file_mib"), "memory"),
    ("exact: same top-100 as float64", ("flat_search", "vs_float64", "same_order"), "size"),
    ("Edge ingest docs/s (upsert+commit)", ("edge", "docs_per_s"), "rate"),
    ("  of it commit (HNSW + flat) s", ("edge", "commit_s"), "time"),
    ("Edge ingest peak RSS MiB", ("edge", "peak_rss_mib"), "memory"),
    ("Edge on disk MiB", ("edge", "disk_mib"), "memory"),
    (f"HNSW q/s k={K} ef 128", ("edge", "hnsw", "qps"), "query"),
    (f"HNSW recall@{K} (float64 truth)", ("edge", "hnsw", f"recall@{K}"), "size"),
    ("  irforge's recorded recall (100 q)", ("edge", "hnsw", "irforge_recorded_recall"), "size"),
    ("  same 100 q, counted here", ("edge", "hnsw", "independent_recall_same_sample"), "size"),
]


def growth(sizes: list[int], by_size: dict[int, dict]) -> list[dict]:
    """scale.growth over this script's figures."""
    return scale.growth(sizes, by_size, FIGURES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 5_000_000])
    parser.add_argument("--queries", type=int, default=200, help="query vectors (default: 200)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=2, help="timed runs of each search, the best reported (default: 2)")
    parser.add_argument("--hnsw-max", type=int, default=1_000_000,
                        help="largest size whose Edge HNSW collection is built (default: 1000000)")
    parser.add_argument("--work-dir", type=Path, help="where the vectors are written (default: a temporary folder); "
                                                      "each size's files are removed once it is measured")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        json.dump(WORKERS[args.worker](args, args.folder), sys.stdout)
        return
    sizes = sorted(set(args.sizes))
    temporary = args.work_dir is None
    args.work_dir = Path(tempfile.mkdtemp(prefix="irforge-scale-dense-")) if temporary else args.work_dir
    args.work_dir.mkdir(parents=True, exist_ok=True)
    by_size: dict[int, dict] = {}
    try:
        for size in sizes:
            free = shutil.disk_usage(args.work_dir).free / 2**30
            need = size * DIMENSION * 4 / 2**30 * (1 if size > args.hnsw_max else 2.2) + 1
            if free < need:
                raise SystemExit(f"{size:,} vectors need about {need:.1f} GiB in {args.work_dir}, {free:.1f} GiB free")
            log(f"{size:,} vectors ({free:.1f} GiB free)")
            started = time.perf_counter()
            by_size[size] = measure_size(size, args)
            by_size[size]["seconds"] = time.perf_counter() - started
            by_size[size]["load_average_after"] = os.getloadavg()
            write_results(__file__, payload(args, list(by_size), by_size, complete=len(by_size) == len(sizes)))
    finally:
        if temporary:
            shutil.rmtree(args.work_dir, ignore_errors=True)
    rows = growth(sizes, by_size)
    print(f"\n{DIMENSION}-d clustered vectors (seed {args.seed}, {args.queries} queries, k = {K}); growth factors per 10× "
          f"of corpus, cost ∝ N^b (b > {scale.SUPERLINEAR} flagged)\n")
    scale.print_growth(sizes, rows)
    print(f"wrote {RESULTS_DIR / 'scale_dense.json'}")


def payload(args, sizes: list[int], by_size: dict[int, dict], complete: bool) -> dict:
    return {"complete": complete, "sizes": sizes, "queries": args.queries, "seed": args.seed, "k": K,
            "vectors": {"dimension": DIMENSION, "centres": CENTRES, "noise": NOISE, "chunk": CHUNK},
            "hnsw_max": args.hnsw_max, "by_size": {str(n): by_size[n] for n in sizes}, "growth": growth(sizes, by_size)}


if __name__ == "__main__":
    main()
