"""Encoding throughput on a GPU: in-process EncoderCore against the Ray Serve deployment, at
float32, float16 and bfloat16, with what the precision does to the vectors and to nDCG@10.

On a BEIR folder (SciFact by default: 5,183 documents, the 300 test queries), per precision:

  in-process  EncoderCore(EncoderSpec(device, precision)).encode(call) over calls of --call-size texts
  ray-serve   RayEncoder over irforge's encoder deployment (1 replica, num_gpus=1 on a GPU), the
              same calls, one in flight

Each leg is timed after a warm-up call (the model loaded, CUDA kernels chosen), best of --rounds;
documents/s and queries/s. Then the precision's effect: the largest |difference| and the smallest
cosine of its document vectors against float32's, and nDCG@10 / R@100 of an exact cosine search
(numpy, ties by doc id descending) scored by irforge's Evaluator, against float32's. Ray Serve's
vectors are compared with the in-process ones of the same precision (must be equal).

Run (on a GPU machine):  python benchmarks/gpu_encoding.py --model PATH_OR_NAME
On a CPU it runs float32 only (half precision is a GPU feature here), e.g. to try it:
  .venv/bin/python benchmarks/gpu_encoding.py --docs 200 --device cpu --precisions float32
Writes benchmarks/results/gpu_encoding.json.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from _common import table, write_results
from irforge.data import BeirDataset
from irforge.evaluator.core import EvaluationOptions, Evaluator
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole
from irforge.ranking import Ranking

DEFAULT_DATASET = Path(os.environ.get("IRFORGE_SHARED", "/work/shared")) / "data" / "beir" / "scifact"


def calls(texts: list[str], size: int) -> list[list[str]]:
    return [texts[start:start + size] for start in range(0, len(texts), size)]


def timed_encode(encode, texts: list[str], role: TextRole, call_size: int, rounds: int) -> tuple[np.ndarray, float]:
    """(vectors, best seconds over `rounds`) after one warm-up call."""
    encode(texts[:call_size], role)
    best, vectors = float("inf"), None
    for _ in range(rounds):
        started = time.perf_counter()
        vectors = np.concatenate([encode(call, role) for call in calls(texts, call_size)])
        best = min(best, time.perf_counter() - started)
    return vectors, best


def exact_run(query_vectors: np.ndarray, doc_vectors: np.ndarray, query_ids: list[str], doc_ids: np.ndarray,
              id_rank: np.ndarray, k: int) -> dict[str, Ranking]:
    """Cosine top-k per query, ties by doc id descending (trec_eval's rule)."""
    def unit(v):
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

    scores = (unit(query_vectors) @ unit(doc_vectors).T).astype(np.float64)
    run = {}
    for row, query_id in enumerate(query_ids):
        order = np.lexsort((-id_rank, -scores[row]))[:k]
        run[query_id] = Ranking(doc_ids[order], scores[row][order])
    return run


def vector_agreement(vectors: np.ndarray, reference: np.ndarray) -> dict:
    cosine = np.sum(vectors * reference, axis=1) / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1))
    return {"max_abs_diff": float(np.max(np.abs(vectors - reference))), "min_cosine": float(np.min(cosine))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET, help="a BEIR folder")
    parser.add_argument("--split", default="test", help="qrels split whose queries are encoded and scored")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="model name or folder")
    parser.add_argument("--device", default=None, help="cuda / cpu; default: cuda when present")
    parser.add_argument("--precisions", nargs="+", default=["float32", "float16", "bfloat16"],
                        choices=["float32", "float16", "bfloat16"], help="precisions to measure (float32 first: the reference)")
    parser.add_argument("--batch-size", type=int, default=256, help="the model's forward-pass batch")
    parser.add_argument("--call-size", type=int, default=1024, help="texts per encode call (per Serve request)")
    parser.add_argument("--docs", type=int, default=0, help="first N documents only (0: all)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per leg; the best is kept")
    parser.add_argument("--no-serve", action="store_true", help="in-process legs only (no Ray)")
    parser.add_argument("--replica-cpus", type=int, nargs="+", default=[1, 4],
                        help="a Ray Serve leg per value: the replica's num_cpus (its torch and tokenizer threads)")
    args = parser.parse_args()

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dataset = BeirDataset.open(args.dataset)
    documents = []
    for document in dataset.corpus():
        documents.append(document)
        if args.docs and len(documents) >= args.docs:
            break
    qrels = dataset.qrels(args.split)
    queries = [q for q in dataset.queries() if q.query_id in qrels]
    doc_texts, query_texts = [d.full_text for d in documents], [q.text for q in queries]
    doc_ids = np.array([d.doc_id for d in documents], dtype=object)
    id_rank = np.empty(len(doc_ids), dtype=np.int64)
    id_rank[np.argsort(doc_ids.astype(str), kind="stable")] = np.arange(len(doc_ids))
    present = set(doc_ids.tolist())
    judged = {q: {d: r for d, r in j.items() if d in present} for q, j in qrels.items()}
    judged = {q: j for q, j in judged.items() if j}
    gpu = torch.cuda.get_device_name(0) if device.startswith("cuda") else None
    print(f"{len(documents)} documents, {len(queries)} queries, device {device}{f' ({gpu})' if gpu else ''}")

    legs, reference, reference_metrics = [], {}, None
    serve_up = False
    for precision in args.precisions:
        spec = EncoderSpec(model=args.model, device=device, precision=precision, batch_size=args.batch_size)
        core = EncoderCore(spec)
        doc_vectors, doc_s = timed_encode(core.encode, doc_texts, TextRole.PASSAGE, args.call_size, args.rounds)
        query_vectors, query_s = timed_encode(core.encode, query_texts, TextRole.QUERY, args.call_size, args.rounds)
        run = exact_run(query_vectors, doc_vectors, [q.query_id for q in queries], doc_ids, id_rank, 1000)
        result = Evaluator().evaluate(judged, {q: r.as_dict() for q, r in run.items()}, ["nDCG@10", "R@100"], EvaluationOptions(complete=True))
        metrics = {name: result.aggregate[name] for name in result.measure_names}
        if precision == "float32":
            reference, reference_metrics = {"docs": doc_vectors, "queries": query_vectors}, metrics
        leg = {"precision": precision, "path": "in-process", "docs_per_s": len(doc_texts) / doc_s,
               "queries_per_s": len(query_texts) / query_s, "metrics": metrics}
        if reference:
            leg["vs_float32"] = vector_agreement(doc_vectors, reference["docs"])
            leg["ndcg10_minus_float32"] = metrics["nDCG@10"] - reference_metrics["nDCG@10"]
        legs.append(leg)
        print(f"{precision} in-process: {leg['docs_per_s']:.0f} docs/s, nDCG@10 {metrics['nDCG@10']:.4f}")

        if not args.no_serve:
            from irforge.models.serve import (EncoderDeploymentConfig, start_encoder_app, start_local_ray,
                                              stop_local_ray)
            from irforge.models.serve_client import RayEncoder
            from ray import serve

            for cpus in args.replica_cpus:
                app = f"encoder-{precision}-{cpus}"
                try:
                    if not serve_up:
                        start_local_ray(num_cpus=max(2, min(8, os.cpu_count() or 2)))
                        serve_up = True
                    config = EncoderDeploymentConfig(num_replicas=1, num_cpus=cpus,
                                                     num_gpus=1.0 if device.startswith("cuda") else 0.0)
                    encoder = RayEncoder(start_encoder_app(spec, config, name=app))
                    served, served_s = timed_encode(encoder.encode, doc_texts, TextRole.PASSAGE, args.call_size, args.rounds)
                    served_q, served_q_s = timed_encode(encoder.encode, query_texts, TextRole.QUERY, args.call_size, args.rounds)
                    serve.delete(app)
                    legs.append({"precision": precision, "path": f"ray-serve ({cpus} cpu)", "replica_cpus": cpus,
                                 "docs_per_s": len(doc_texts) / served_s, "queries_per_s": len(query_texts) / served_q_s,
                                 "ratio_to_in_process": (len(doc_texts) / served_s) / leg["docs_per_s"],
                                 "vs_in_process": vector_agreement(served, doc_vectors),
                                 "queries_vs_in_process": vector_agreement(served_q, query_vectors)})
                    print(f"{precision} ray-serve ({cpus} cpu): {legs[-1]['docs_per_s']:.0f} docs/s")
                except Exception as error:  # one failing leg must not lose the others' figures
                    legs.append({"precision": precision, "path": f"ray-serve ({cpus} cpu)", "error": f"{type(error).__name__}: {error}"})
                    print(f"{precision} ray-serve ({cpus} cpu) failed: {error}")
        del core
    if serve_up:
        stop_local_ray()

    rows = [[leg["precision"], leg["path"], round(leg.get("docs_per_s", 0)), round(leg.get("queries_per_s", 0)),
             round(leg.get("ratio_to_in_process", 1.0), 3),
             f"{leg['metrics']['nDCG@10']:.4f}" if "metrics" in leg else "",
             f"{leg.get('vs_float32', leg.get('vs_in_process', {})).get('max_abs_diff', 0):.2e}"]
            for leg in legs]
    print(table(["precision", "path", "docs/s", "queries/s", "ratio", "nDCG@10", "max |diff| (vs fp32 / in-process)"], rows))
    write_results(__file__, {"dataset": str(args.dataset), "documents": len(documents), "queries": len(queries),
                             "device": device, "gpu": gpu, "torch": torch.__version__,
                             "batch_size": args.batch_size, "call_size": args.call_size, "legs": legs})


if __name__ == "__main__":
    main()
