"""Vector search engines for the embedded default: Qdrant Edge against qdrant-client's local mode.

(a) Synthetic: 50,000 × 384-d unit vectors sampled around 300 cluster centres (closer to real
    embeddings than isotropic noise, on which HNSW recall says little), 1,000 queries from the same
    clusters. Engines: irforge's EdgeVectorBackend (Qdrant Edge, in-process), qdrant-client local
    mode on disk (`QdrantClient(path=...)`) and in memory (`QdrantClient(":memory:")`). Measured:
    upsert time, commit/optimize time (HNSW build), 1,000 queries top-100 exact and HNSW (local mode
    has no HNSW: it always brute-forces in numpy), recall@100 against a numpy float64 brute force,
    peak RSS. Each engine runs in its own subprocess so peaks are its own (ru_maxrss); the data
    is generated inside it, so "data RSS" is what the process held before the engine started.
(b) Real embeddings, when --embeddings PATH.npz is given (doc_ids, doc_vectors, query_vectors, and
    optionally query_ids for nDCG@10 against --dataset's qrels): EdgeVectorBackend at exact and at
    HNSW with ef_search 64/128/256: queries/second and recall@100 against exact.

Make the SciFact file once (~5.5 minutes on 2 cores) with irforge's encoder:
    EncoderCore(EncoderSpec("all-MiniLM-L6-v2")).encode(texts, TextRole.PASSAGE / QUERY)
over Document.full_text of every SciFact document and the test queries.

Run: .venv/bin/python benchmarks/vector_search.py [--embeddings /tmp/scifact_minilm.npz] [--docs 50000]
Writes benchmarks/results/vector_search.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from importlib import metadata
from pathlib import Path

import numpy as np

from _common import rss_mib, table, write_results

DEFAULT_DATASET = Path(os.environ.get("IRFORGE_SHARED", "/work/shared")) / "data" / "beir" / "scifact"
ENGINES = ("edge", "local-path", "local-memory")
K = 100
BATCH = 1024


# -- data ---------------------------------------------------------------------------------------

def clustered(n_docs: int, n_queries: int, dim: int, centres: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centre = rng.normal(size=(centres, dim)).astype(np.float32)

    def sample(n: int) -> np.ndarray:
        x = centre[rng.integers(0, centres, n)]
        x += 0.6 * rng.standard_normal(size=(n, dim), dtype=np.float32)  # in place: no float64 copy
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        return x

    return sample(n_docs), sample(n_queries)


def truth_top_k(docs: np.ndarray, queries: np.ndarray, k: int) -> list[set[int]]:
    """Exact cosine top-k row indices (float64; vectors are unit length)."""
    out = []
    for start in range(0, len(queries), 100):
        scores = queries[start:start + 100].astype(np.float64) @ docs.T.astype(np.float64)
        out.extend(set(np.argpartition(-row, k)[:k].tolist()) for row in scores)
    return out


def recall(found: list[list[str]], truth: list[set[str]]) -> float:
    return float(np.mean([len(set(f) & t) / len(t) for f, t in zip(found, truth, strict=True)]))


def dir_mib(path: Path) -> float:
    """Space actually allocated (du), not apparent size: Edge preallocates sparse WAL and mmap files."""
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file()) / 2**20


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# -- one engine, in a worker process ------------------------------------------------------------

def run_edge(docs, queries, ids, workdir: Path) -> dict:
    from irforge.corpus.vectors.edge import EdgeVectorBackend

    backend = EdgeVectorBackend(workdir)
    backend.create("bench", docs.shape[1], "cosine", "synthetic")
    start = time.perf_counter()
    for s in range(0, len(ids), BATCH):
        backend.upsert("bench", ids[s:s + BATCH], docs[s:s + BATCH])
    upsert_s = time.perf_counter() - start
    start = time.perf_counter()
    backend.commit("bench")
    commit_s = time.perf_counter() - start
    timings, found = {}, {}
    for mode, exact in (("exact", True), ("hnsw", False)):
        start = time.perf_counter()
        hits = backend.search("bench", queries, K, exact=exact)
        timings[mode] = time.perf_counter() - start
        found[mode] = [list(row) for row in hits]
    backend.close()
    return {"upsert_s": upsert_s, "commit_s": commit_s, "search_s": timings, "found": found,
            "disk_mib": dir_mib(workdir)}


def run_local(docs, queries, ids, workdir: Path, on_disk: bool) -> dict:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(workdir)) if on_disk else QdrantClient(":memory:")
    client.create_collection("bench", vectors_config=models.VectorParams(size=docs.shape[1], distance=models.Distance.COSINE))
    start = time.perf_counter()
    for s in range(0, len(ids), BATCH):
        chunk = ids[s:s + BATCH]
        client.upsert("bench", models.Batch(
            ids=[str(uuid.uuid5(uuid.NAMESPACE_URL, d)) for d in chunk], vectors=docs[s:s + BATCH].tolist(),
            payloads=[{"doc_id": d} for d in chunk],
        ))
    upsert_s = time.perf_counter() - start
    start = time.perf_counter()
    found = []
    for s in range(0, len(queries), 100):  # local mode has no index: exact=True changes nothing
        requests = [models.QueryRequest(query=q, limit=K, with_payload=True) for q in queries[s:s + 100].tolist()]
        found.extend([p.payload["doc_id"] for p in r.points] for r in client.query_batch_points("bench", requests))
    exact_s = time.perf_counter() - start
    client.close()
    return {"upsert_s": upsert_s, "commit_s": None, "search_s": {"exact": exact_s, "hnsw": None},
            "found": {"exact": found, "hnsw": None}, "disk_mib": dir_mib(workdir) if on_disk else None}


def worker(args) -> None:
    docs, queries = clustered(args.docs, args.queries, args.dim, args.centres, args.seed)
    ids = [f"doc-{i:06d}" for i in range(len(docs))]
    data_rss = rss_mib()
    workdir = Path(tempfile.mkdtemp(prefix="irforge-vbench-"))
    try:
        if args.worker == "edge":
            result = run_edge(docs, queries, ids, workdir)
        else:
            result = run_local(docs, queries, ids, workdir, on_disk=args.worker == "local-path")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result.update(data_rss_mib=data_rss, peak_rss_mib=peak_rss_mib())
    json.dump(result, sys.stdout)


# -- (b) real embeddings ------------------------------------------------------------------------

def real_embeddings(path: Path, dataset: Path) -> dict:
    from irforge.corpus.vectors.base import HnswSettings
    from irforge.corpus.vectors.edge import EdgeVectorBackend

    data = np.load(path)
    ids, docs, queries = [str(d) for d in data["doc_ids"]], data["doc_vectors"], data["query_vectors"]
    query_ids = [str(q) for q in data["query_ids"]] if "query_ids" in data else None
    workdir = Path(tempfile.mkdtemp(prefix="irforge-vbench-"))
    rows = []
    try:
        backend = EdgeVectorBackend(workdir)
        backend.create("real", docs.shape[1], "cosine", path.name)
        start = time.perf_counter()
        for s in range(0, len(ids), BATCH):
            backend.upsert("real", ids[s:s + BATCH], docs[s:s + BATCH])
        upsert_s = time.perf_counter() - start
        start = time.perf_counter()
        backend.commit("real")
        commit_s = time.perf_counter() - start
        exact_hits = None
        for ef in (None, 64, 128, 256):
            if ef is not None:  # ef_search is a search-time setting: no rebuild
                backend.create("real", docs.shape[1], "cosine", path.name, HnswSettings(ef_search=ef))
            best, hits = float("inf"), None
            for _ in range(3):
                start = time.perf_counter()
                hits = backend.search("real", queries, K, exact=ef is None)
                best = min(best, time.perf_counter() - start)
            exact_hits = exact_hits or hits
            row = {"mode": "exact" if ef is None else f"hnsw ef={ef}", "seconds": best, "qps": len(queries) / best,
                   f"recall@{K}_vs_exact": recall([list(r) for r in hits],
                                                  [set(r) for r in exact_hits])}
            if query_ids and dataset.is_dir():
                row["nDCG@10"] = ndcg10(dataset, query_ids, hits)
            rows.append(row)
        backend.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {"file": str(path), "documents": len(ids), "queries": len(queries), "dimension": int(docs.shape[1]),
            "upsert_s": upsert_s, "commit_s": commit_s, "rows": rows}


def ndcg10(dataset: Path, query_ids: list[str], hits) -> float:
    import pytrec_eval

    from irforge.data import BeirDataset

    qrels = BeirDataset.open(dataset).qrels("test")
    run = {q: row.as_dict() for q, row in zip(query_ids, hits, strict=True)}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return float(np.mean([v["ndcg_cut_10"] for v in per_query.values()]))


# -- driver -------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--centres", type=int, default=300)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--embeddings", type=Path, help="an .npz of real embeddings for part (b)")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET, help="BEIR folder for nDCG@10 in part (b)")
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    print(f"(a) {args.docs:,} × {args.dim}-d unit vectors around {args.centres} centres, {args.queries:,} queries, "
          f"top-{K}; each engine in its own process\n")
    docs, queries = clustered(args.docs, args.queries, args.dim, args.centres, args.seed)
    truth = [{f"doc-{i:06d}" for i in row} for row in truth_top_k(docs, queries, K)]
    del docs, queries
    synthetic = {}
    for engine in args.engines:
        command = [sys.executable, __file__, "--worker", engine] + [
            f"--{name}={getattr(args, name)}" for name in ("docs", "queries", "dim", "centres", "seed")
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        result = json.loads(done.stdout)
        found = result.pop("found")
        result["recall_exact"] = recall(found["exact"], truth)
        result["recall_hnsw"] = recall(found["hnsw"], truth) if found["hnsw"] else None
        result["qps"] = {m: (args.queries / s if s else None) for m, s in result["search_s"].items()}
        synthetic[engine] = result
        print(f"  {engine}: done", flush=True)
    print()
    print(table(
        ["engine", "upsert s", "commit s", "exact s", "exact q/s", "HNSW s", "HNSW q/s",
         f"R@{K} exact", f"R@{K} HNSW", "data RSS MiB", "peak RSS MiB", "disk MiB"],
        [[e, r["upsert_s"], r["commit_s"], r["search_s"]["exact"], r["qps"]["exact"], r["search_s"]["hnsw"],
          r["qps"]["hnsw"], r["recall_exact"], r["recall_hnsw"], r["data_rss_mib"], r["peak_rss_mib"], r["disk_mib"]]
         for e, r in synthetic.items()],
    ))
    versions = {name: metadata.version(name) for name in ("qdrant-client", "qdrant-edge-py")}
    payload = {"versions": versions, "synthetic": {"docs": args.docs, "queries": args.queries, "dimension": args.dim,
                             "centres": args.centres, "seed": args.seed, "k": K, "engines": synthetic}}

    if args.embeddings:
        real = real_embeddings(args.embeddings, args.dataset)
        print(f"\n(b) {args.embeddings.name}: {real['documents']:,} documents, {real['queries']} queries, "
              f"{real['dimension']}-d; EdgeVectorBackend upsert {real['upsert_s']:.2f} s, commit {real['commit_s']:.2f} s; "
              f"best of 3\n")
        columns = ["mode", "seconds", "qps", f"recall@{K}_vs_exact"] + (["nDCG@10"] if "nDCG@10" in real["rows"][0] else [])
        print(table(columns, [[row[c] for c in columns] for row in real["rows"]]))
        payload["real"] = real
    path = write_results(__file__, payload)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
