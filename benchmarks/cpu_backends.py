"""CPU encoding backends (--encoder-backend, --encoder-precision) against torch: speed and nDCG@10.

all-MiniLM-L6-v2 (the packaged copy) on SciFact, texts = Document.full_text, the model's 256-token
cap, EncoderCore.encode in calls of --batch-size texts, one encode at a time:

  1  speed: the first --docs SciFact documents encoded by every leg (torch fp32, onnx fp32, onnx
     int8, openvino fp32, openvino int8) in --rounds interleaved rounds, so a burst of other work on
     the shared cores hits every leg alike; each leg's best round is reported, with its ratio to
     torch's, and how far its vectors are from torch's (cosine, min and mean);
  2  quality: every leg encodes the whole corpus (5,183) and the test queries (300) through irforge's
     embedding cache (--embedding-cache FILE, keyed by the encoder identity, backend and precision
     included: a leg whose vectors a cache copy already holds, e.g. torch's from an earlier
     `irforge eval`, reads them instead of encoding; `encoded` says how many it encoded); exact
     cosine search (numpy, top 100, a document whose id is the query's dropped as BEIR does)
     scored by pytrec_eval: nDCG@10 and R@100, and the difference from torch's (MTEB: 0.6451).
     --full-legs picks the legs and their order (one SciFact encode takes 5-20 min on 2 shared cores).

Exports are made into a fresh cache folder (their time is reported as export_s), so nothing is
reused from an earlier run.

Run: nice -n 10 .venv/bin/python benchmarks/cpu_backends.py [--docs 256 --rounds 2 --no-full]
       [--embedding-cache copy-of-embeddings.sqlite3] [--full-legs "onnx int8,openvino int8"]
Writes benchmarks/results/cpu_backends.json.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytrec_eval
from _common import table, write_results
from irforge.data import BeirDataset
from irforge.models.cache import EmbeddingCache
from irforge.models.cached_encoding import encode_with_cache
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole

MODEL = "all-MiniLM-L6-v2"
LEGS = (("torch", "fp32"), ("onnx", "fp32"), ("onnx", "int8"), ("openvino", "fp32"), ("openvino", "int8"))
DEFAULT_DATASET = Path(os.environ.get("IRFORGE_SHARED_DATA", "/work/shared/data")) / "beir" / "scifact"


def leg_name(backend: str, precision: str) -> str:
    return f"{backend} {precision}"


def load(backend: str, precision: str, batch_size: int) -> tuple[EncoderCore, float]:
    started = time.perf_counter()
    core = EncoderCore(EncoderSpec(MODEL, batch_size=batch_size, device="cpu", backend=backend, backend_precision=precision))
    return core, time.perf_counter() - started


def timed_encode(core: EncoderCore, texts: list[str], role: TextRole) -> tuple[np.ndarray, float]:
    started = time.perf_counter()
    vectors = core.encode(texts, role)
    return vectors, time.perf_counter() - started


def cached_vectors(core: EncoderCore, cache: EmbeddingCache, role: TextRole, items: list[tuple[str, str]]):
    """(vectors in item order, encoded count, seconds encoding) through the embedding cache."""
    encoding = encode_with_cache(core, cache, role, items, batch_size=256)
    vectors = np.concatenate([chunk for _, chunk in encoding])
    return vectors, encoding.stats.encoded, encoding.stats.encode_s


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        next(rows)  # query-id corpus-id score
        for query_id, doc_id, score in rows:
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def ndcg(doc_ids: list[str], doc_vectors: np.ndarray, query_ids: list[str], query_vectors: np.ndarray,
         qrels: dict[str, dict[str, int]], depth: int = 100) -> dict[str, float]:
    scores = query_vectors @ doc_vectors.T
    run = {}
    for row, query_id in enumerate(query_ids):
        top = np.argsort(-scores[row], kind="stable")[:depth + 1]
        ranked = {doc_ids[i]: float(scores[row, i]) for i in top if doc_ids[i] != query_id}
        run[query_id] = dict(itertools.islice(ranked.items(), depth))
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    per_query = evaluator.evaluate(run)
    return {"nDCG@10": float(np.mean([q["ndcg_cut_10"] for q in per_query.values()])),
            "R@100": float(np.mean([q["recall_100"] for q in per_query.values()]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default=str(DEFAULT_DATASET))
    parser.add_argument("--docs", type=int, default=256, help="documents of the speed sample")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved speed rounds; each leg's best is reported")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--no-full", action="store_true", help="skip the full-corpus nDCG@10 phase")
    parser.add_argument("--embedding-cache", default=None, help="embedding cache file for the full phase (default: a new one)")
    parser.add_argument("--full-legs", default=",".join(leg_name(*leg) for leg in LEGS),
                        help="the full phase's legs, in order, comma-separated")
    args = parser.parse_args()

    os.environ["IRFORGE_CACHE_DIR"] = tempfile.mkdtemp(prefix="irforge-cpu-backends-")
    dataset = BeirDataset.open(args.dataset)
    documents = list(dataset.corpus())
    sample = [d.full_text for d in documents[:args.docs]]
    cores, export_s = {}, {}
    for backend, precision in LEGS:
        name = leg_name(backend, precision)
        cores[name], export_s[name] = load(backend, precision, args.batch_size)
        cores[name].encode(sample[:8], TextRole.PASSAGE)  # warm-up
        print(f"{name}: loaded (and exported) in {export_s[name]:.1f} s", flush=True)

    best: dict[str, float] = {}
    sample_vectors: dict[str, np.ndarray] = {}
    for round_index in range(args.rounds):
        order = list(cores) if round_index % 2 == 0 else list(reversed(cores))
        for name in order:
            vectors, seconds = timed_encode(cores[name], sample, TextRole.PASSAGE)
            sample_vectors[name] = vectors
            best[name] = max(best.get(name, 0.0), len(sample) / seconds)
            print(f"round {round_index + 1} {name}: {len(sample) / seconds:.1f} docs/s", flush=True)
    reference = sample_vectors["torch fp32"]
    legs: dict[str, dict] = {}
    for name in cores:
        cosines = (sample_vectors[name] * reference).sum(axis=1)
        legs[name] = {"docs_per_s": round(best[name], 2), "ratio_vs_torch": round(best[name] / best["torch fp32"], 3),
                      "cosine_vs_torch_min": round(float(cosines.min()), 5),
                      "cosine_vs_torch_mean": round(float(cosines.mean()), 5), "load_and_export_s": round(export_s[name], 1),
                      "identity": cores[name].identity}
    versions = {name: metadata.version(name) for name in ("torch", "sentence-transformers", "transformers", "onnxruntime",
                                                         "onnx", "openvino", "nncf")}
    payload = {"model": MODEL, "versions": versions, "dataset": dataset.name, "sample_docs": len(sample), "rounds": args.rounds,
               "batch_size": args.batch_size, "cpus": os.cpu_count(), "legs": legs}
    write_results(__file__, payload)

    if not args.no_full:
        qrels = read_qrels(Path(args.dataset) / "qrels" / "test.tsv")
        queries = [q for q in dataset.queries() if q.query_id in qrels]
        doc_ids, doc_texts = [d.doc_id for d in documents], [d.full_text for d in documents]
        cache = EmbeddingCache(args.embedding_cache or Path(os.environ["IRFORGE_CACHE_DIR"]) / "embeddings.sqlite3")
        payload["full_corpus_docs"], payload["queries"] = len(doc_texts), len(queries)
        for name in [leg.strip() for leg in args.full_legs.split(",")]:
            core = cores[name]
            doc_vectors, encoded, seconds = cached_vectors(core, cache, TextRole.PASSAGE, list(zip(doc_ids, doc_texts)))
            query_vectors, _, _ = cached_vectors(core, cache, TextRole.QUERY, [(q.query_id, q.text) for q in queries])
            figures = ndcg(doc_ids, doc_vectors, [q.query_id for q in queries], query_vectors, qrels)
            legs[name].update({"full_corpus_encoded": encoded, "nDCG@10": round(figures["nDCG@10"], 4),
                               "R@100": round(figures["R@100"], 4), "encoder_key": core.identity_key,
                               **({"full_corpus_docs_per_s": round(encoded / seconds, 2)} if encoded else {})})
            print(f"{name}: nDCG@10 {figures['nDCG@10']:.4f} ({encoded} documents encoded in {seconds:.0f} s)", flush=True)
            if "nDCG@10" in legs["torch fp32"]:
                for leg in legs.values():
                    if "nDCG@10" in leg:
                        leg["nDCG@10_difference"] = round(leg["nDCG@10"] - legs["torch fp32"]["nDCG@10"], 4)
            write_results(__file__, payload)   # after every leg: a stopped run keeps what it measured

    rows = [[name, f"{leg['docs_per_s']:.1f}", f"{leg['ratio_vs_torch']:.2f}", leg.get("nDCG@10", "-"),
             leg.get("nDCG@10_difference", "-"), leg["cosine_vs_torch_min"]] for name, leg in legs.items()]
    print(table(["backend precision", "docs/s", "x torch", "nDCG@10", "difference", "min cosine"], rows))


if __name__ == "__main__":
    sys.exit(main())
