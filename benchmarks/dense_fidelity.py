"""What exact search's float16 and HNSW's stated recall cost in fidelity, on real embeddings:
SciFact (test split, 300 queries) with all-MiniLM-L6-v2, through `irforge eval` itself.

  precision    `--exact-precision float32` and `float16`: nDCG@10, R@100 as results.json records
               them, the nDCG@10 recomputed here from each run.trec by pytrec_eval, and how many
               queries' top 10 / top 100 hold the same documents in both runs;
  HNSW recall  `--search hnsw --top-k 100` at the default ef 128, with `--target-recall 0.99`, and on
               a sparse graph (--hnsw-m 2 --hnsw-ef-construct 4) with `--target-recall 0.99`: the
               recall@100 irforge records (results.json's search_recall, 100 sampled queries) against
               the recall counted here on the same queries from the run file and a FAISS IndexFlatIP
               search of the same vectors, and over all 300 queries; a refused run's exit code and message.

The vectors FAISS searches are read here from the embedding cache's SQLite file (sha256 of the text
as the key, as models/cache.py documents it), not through irforge. Nothing is encoded when the cache
holds SciFact already (--embedding-cache: a full SciFact encode takes ~6 minutes on two cores).

Run: .venv/bin/python benchmarks/dense_fidelity.py --embedding-cache PATH [--work-dir DIR]
Writes benchmarks/results/dense_fidelity.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import table, write_results

SCIFACT = Path(os.environ.get("IRFORGE_SHARED_DATA", "/work/shared/data")) / "beir" / "scifact"
MODEL = "all-MiniLM-L6-v2"
K = 100


def irforge_eval(out: Path, stores: dict, *extra: str) -> tuple[int, dict | None, str, float]:
    """(exit code, results.json or None, its printed table or its error's tail, seconds) of one `irforge eval` run."""
    argv = [sys.executable, "-m", "irforge.cli.main", "eval", "--dataset", str(SCIFACT), "--retriever", "dense",
            "--model", MODEL, "--out", str(out), *extra]
    for flag, path in stores.items():
        argv += [flag, str(path)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    results = json.loads((out / "results.json").read_text()) if done.returncode == 0 else None
    return done.returncode, results, done.stdout if done.returncode == 0 else done.stderr[-1500:], seconds


def read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        query_id, _, doc_id, _, score, _ = line.split()
        run.setdefault(query_id, {})[doc_id] = float(score)
    return run


def ranked(run: dict[str, dict[str, float]], depth: int) -> dict[str, list[str]]:
    """Each query's doc ids in the file's order (run.trec is written in rank order), cut to `depth`."""
    return {query_id: list(docs)[:depth] for query_id, docs in run.items()}


def pytrec_ndcg10(qrels: dict, run: dict) -> float:
    import pytrec_eval

    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"}).evaluate(run)
    return float(np.mean([scores[q]["ndcg_cut_10"] for q in qrels if q in scores] +
                         [0.0 for q in qrels if q not in scores]))


def read_qrels() -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    lines = (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()
    for line in lines[1:]:
        query_id, doc_id, grade = line.split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(grade)
    return qrels


def cached_vectors(cache: Path, texts: dict[str, str], role: str) -> dict[str, np.ndarray]:
    """id -> the vector the cache holds for that text (the cache's key: sha256 of the UTF-8 text)."""
    connection = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)
    found = {}
    by_hash = {hashlib.sha256(text.encode("utf-8")).digest(): key for key, text in texts.items()}
    for text_hash, blob in connection.execute("SELECT text_hash, vector FROM embeddings WHERE role = ?", (role,)):
        if text_hash in by_hash:
            found[by_hash[text_hash]] = np.frombuffer(blob, dtype="<f4")
    connection.close()
    missing = len(texts) - len(found)
    if missing:
        raise SystemExit(f"{missing} of {len(texts)} {role} texts are not in {cache}: encode SciFact into it first")
    return found


def faiss_truth(cache: Path, query_ids: list[str]) -> dict[str, list[str]]:
    """Each query's top K doc ids by FAISS IndexFlatIP over the cached (unit) vectors."""
    import faiss

    documents = {}
    with (SCIFACT / "corpus.jsonl").open() as lines:
        for line in lines:
            doc = json.loads(line)
            documents[doc["_id"]] = f"{doc.get('title', '')} {doc.get('text', '')}".strip()
    queries = {}
    with (SCIFACT / "queries.jsonl").open() as lines:
        for line in lines:
            query = json.loads(line)
            if query["_id"] in query_ids:
                queries[query["_id"]] = query["text"]
    doc_vectors, query_vectors = cached_vectors(cache, documents, "passage"), cached_vectors(cache, queries, "query")
    doc_ids = list(doc_vectors)
    index = faiss.IndexFlatIP(len(doc_vectors[doc_ids[0]]))
    index.add(np.stack([doc_vectors[d] for d in doc_ids]))
    _, rows = index.search(np.stack([query_vectors[q] for q in query_ids]), K)
    return {q: [doc_ids[r] for r in row] for q, row in zip(query_ids, rows)}


def recall(found: dict[str, list[str]], truth: dict[str, list[str]], query_ids) -> float:
    return float(np.mean([len(set(found.get(q, [])[:K]) & set(truth[q])) / K for q in query_ids]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedding-cache", type=Path, required=True, help="an embedding cache holding SciFact")
    parser.add_argument("--work-dir", type=Path)
    args = parser.parse_args()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="irforge-fidelity-"))
    work.mkdir(parents=True, exist_ok=True)
    qrels = read_qrels()
    figures: dict = {"precision": {}, "hnsw": {}}
    try:
        stores = {"--embedding-cache": args.embedding_cache, "--index-dir": work / "bm25"}
        runs = {}
        for precision in ("float32", "float16"):
            code, results, tail, seconds = irforge_eval(work / precision, {**stores, "--vector-dir": work / "exact"},
                                                        "--exact-precision", precision)
            if code:
                raise SystemExit(f"eval --exact-precision {precision} failed ({code}):\n{tail}")
            runs[precision] = read_run(work / precision / "run.trec")
            figures["precision"][precision] = {
                "nDCG@10": results["metrics"]["nDCG@10"], "R@100": results["metrics"].get("R@100"),
                "nDCG@10_pytrec_eval": pytrec_ndcg10(qrels, runs[precision]), "seconds": round(seconds, 1),
                "documents_encoded": results["counts"].get("documents_encoded")}
        for depth in (10, 100):
            a, b = ranked(runs["float32"], depth), ranked(runs["float16"], depth)
            figures["precision"][f"same_top{depth}_documents"] = sum(set(a[q]) == set(b.get(q, [])) for q in a)
            figures["precision"][f"same_top{depth}_order"] = sum(a[q] == b.get(q) for q in a)
        figures["precision"]["queries"] = len(runs["float32"])
        figures["precision"]["nDCG@10_difference"] = (figures["precision"]["float16"]["nDCG@10"]
                                                      - figures["precision"]["float32"]["nDCG@10"])

        all_queries = sorted(qrels)
        truth = faiss_truth(args.embedding_cache, all_queries)
        cases = {"ef 128": ("--vector-dir", work / "hnsw", "--search", "hnsw", "--top-k", str(K)),
                 "--target-recall 0.99": ("--vector-dir", work / "hnsw", "--search", "hnsw", "--top-k", str(K),
                                          "--target-recall", "0.99"),
                 "m 2, ef_construct 4, --target-recall 0.99": (
                     "--vector-dir", work / "sparse", "--search", "hnsw", "--top-k", str(K), "--hnsw-m", "2",
                     "--hnsw-ef-construct", "4", "--target-recall", "0.99")}
        for name, extra in cases.items():
            out = work / name.replace(" ", "_").replace(",", "")
            code, results, tail, seconds = irforge_eval(out, stores, *[str(x) for x in extra])
            if code:
                figures["hnsw"][name] = {"exit_code": code, "message": tail.strip().splitlines()[-1], "seconds": round(seconds, 1),
                                         "left_behind": out.exists()}
                continue
            record = results["search_recall"]
            found = ranked(read_run(out / "run.trec"), K)
            figures["hnsw"][name] = {
                "exit_code": 0, "hnsw_ef": record["hnsw_ef"], "tried": record.get("tried"),
                "recorded_recall@100": record[f"recall@{K}"], "queries_sampled": record["queries_sampled"],
                "faiss_recall@100_same_queries": recall(found, truth, record["query_ids"]),
                "faiss_recall@100_all_queries": recall(found, truth, all_queries),
                "nDCG@10": results["metrics"]["nDCG@10"], "seconds": round(seconds, 1),
                "table_line": next((line for line in tail.splitlines() if "HNSW recall" in line), None)}
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)

    p = figures["precision"]
    print(f"SciFact test, {MODEL}, exact search: {p['queries']} queries")
    print(table(["precision", "nDCG@10", "pytrec_eval nDCG@10", "R@100"],
                [[name, p[name]["nDCG@10"], p[name]["nDCG@10_pytrec_eval"], p[name]["R@100"]] for name in ("float32", "float16")]))
    print(f"nDCG@10 float16 - float32: {p['nDCG@10_difference']:+.6f}; same top-10 documents {p['same_top10_documents']}, "
          f"same top-100 documents {p['same_top100_documents']} of {p['queries']} queries")
    rows = []
    for name, h in figures["hnsw"].items():
        if h["exit_code"]:
            rows.append([name, f"refused (exit {h['exit_code']})", None, None, None, None])
        else:
            rows.append([name, h["hnsw_ef"], h["recorded_recall@100"], h["faiss_recall@100_same_queries"],
                         h["faiss_recall@100_all_queries"], h["nDCG@10"]])
    print(table(["HNSW, top 100", "ef", "recall@100 irforge records", "FAISS, same queries", "FAISS, all 300", "nDCG@10"], rows))
    for name, h in figures["hnsw"].items():
        if h["exit_code"]:
            print(f"{name}: {h['message']}")
    path = write_results(__file__, {"dataset": "scifact test", "model": MODEL, "k": K, **figures})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
