"""BM25 on SciFact: irforge's EmbeddedBackend against plain bm25s, same settings, same process.

Measures
  - indexing: documents/second for EmbeddedBackend.create + ingest (tokenize, index, and write the
    generation to disk) and for plain bm25s (tokenize + index, in memory);
  - search: queries/second at k = 10, 100, 1000 for backend.search(corpus_id, queries, k) and for
    plain bm25s (bm25s.tokenize of the queries + retriever.retrieve(..., n_threads=1)); also bm25s's
    retrieve alone on pre-tokenized queries. On the 300 test queries, and on them repeated to 3,000;
  - agreement: nDCG@10 and R@100 of both on the 300 test queries, by irforge's Evaluator.
Search rounds are interleaved (irforge, bm25s, retrieve only, then again), so a burst of other
work on a shared machine slows all three alike; the best round of each is reported.

irforge computes every document's exact score and breaks ties by doc id (trec_eval's rule), and
returns one Ranking per query (string doc ids and float64 scores as arrays, in that order);
bm25s's retrieve uses its own top-k selection (no tie rule) and returns numpy arrays of
document positions.

Run: .venv/bin/python benchmarks/bm25_queries_per_second.py [--dataset PATH --repeat 10 --rounds 3 --k 10 100 1000]
Writes benchmarks/results/bm25_queries_per_second.json.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from _common import measure, measure_interleaved, table, write_results
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset
from irforge.evaluator.core import Evaluator

DEFAULT_DATASET = Path(os.environ.get("IRFORGE_SHARED", "/work/shared")) / "data" / "beir" / "scifact"


def batches(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET, help="a BEIR folder (default: SciFact)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--repeat", type=int, default=10, help="the split's queries repeated this many times for the stable figure")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs per figure; the best is reported")
    parser.add_argument("--k", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--batch-size", type=int, default=1000, help="documents per ingest batch")
    args = parser.parse_args()

    dataset = BeirDataset.open(args.dataset)
    documents = list(dataset.corpus())
    all_queries = {q.query_id: q for q in dataset.queries()}
    qrels = dataset.qrels(args.split)
    split_queries = [all_queries[q] for q in sorted(qrels) if q in all_queries]
    query_sets = {len(split_queries): split_queries, len(split_queries) * args.repeat: split_queries * args.repeat}
    fingerprint = dataset.corpus_fingerprint()
    settings = Bm25Settings()
    print(f"{dataset.name}: {len(documents):,} documents, {len(split_queries)} {args.split} queries "
          f"(also repeated to {len(split_queries) * args.repeat:,}); BM25 k1={settings.k1} b={settings.b}; "
          f"best of {args.rounds}\n")

    with tempfile.TemporaryDirectory(prefix="irforge-bench-") as tmp:
        backend = EmbeddedBackend(tmp)

        # -- indexing ---------------------------------------------------------------------------
        index_rounds = iter(range(args.rounds))

        def irforge_index():
            corpus_id = f"{dataset.name}-{next(index_rounds)}"
            backend.create(corpus_id, fingerprint, settings)
            for _ in backend.ingest(corpus_id, batches(documents, args.batch_size)):
                pass
            return corpus_id

        corpus_id, irforge_index_s = measure(irforge_index, args.rounds)
        stemmer = Stemmer.Stemmer("english")
        texts = [d.full_text for d in documents]

        def bm25s_index():
            tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
            retriever = bm25s.BM25(k1=settings.k1, b=settings.b, method="lucene")
            retriever.index(tokens, show_progress=False)
            return retriever

        retriever, bm25s_index_s = measure(bm25s_index, args.rounds)
        indexing = {
            "irforge": {"seconds": irforge_index_s, "best_s": min(irforge_index_s), "docs_per_s": len(documents) / min(irforge_index_s),
                        "what": "create + ingest in batches of %d: tokenize, index, write to disk" % args.batch_size},
            "bm25s": {"seconds": bm25s_index_s, "best_s": min(bm25s_index_s), "docs_per_s": len(documents) / min(bm25s_index_s),
                      "what": "bm25s.tokenize + BM25.index, in memory"},
        }
        print(table(["indexing", "seconds", "documents/s"],
                    [[name, v["best_s"], v["docs_per_s"]] for name, v in indexing.items()]))
        print(f"irforge / bm25s documents/s: {indexing['irforge']['docs_per_s'] / indexing['bm25s']['docs_per_s']:.2f}\n")

        # -- search -----------------------------------------------------------------------------
        backend.search(corpus_id, split_queries[:5], 10)           # warm-up: loads the index from disk
        ids_of_position = np.asarray([d.doc_id for d in documents], dtype=object)

        def bm25s_search(queries, k):
            query_tokens = bm25s.tokenize([q.text for q in queries], stopwords="en", stemmer=stemmer, show_progress=False)
            return retriever.retrieve(query_tokens, k=k, n_threads=1, show_progress=False)

        bm25s_search(split_queries[:5], 10)                          # warm-up
        search_rows, search = [], []
        outputs = {}
        for n_queries, queries in query_sets.items():
            pretokenized = bm25s.tokenize([q.text for q in queries], stopwords="en", stemmer=stemmer, show_progress=False)
            for k in args.k:
                timed = measure_interleaved({
                    "irforge": lambda: backend.search(corpus_id, queries, k),
                    "bm25s": lambda: bm25s_search(queries, k),
                    "retrieve": lambda: retriever.retrieve(pretokenized, k=k, n_threads=1, show_progress=False),
                }, args.rounds)
                (hits, irforge_s), (found, bm25s_s), (_, retrieve_s) = timed["irforge"], timed["bm25s"], timed["retrieve"]
                figure = {
                    "queries": n_queries, "k": k,
                    "irforge_qps": n_queries / min(irforge_s), "bm25s_qps": n_queries / min(bm25s_s),
                    "bm25s_retrieve_only_qps": n_queries / min(retrieve_s),
                    "irforge_mean_hits": sum(map(len, hits)) / n_queries,  # only documents with a score > 0
                    "irforge_seconds": irforge_s, "bm25s_seconds": bm25s_s, "bm25s_retrieve_only_seconds": retrieve_s,
                }
                figure["irforge_over_bm25s"] = figure["irforge_qps"] / figure["bm25s_qps"]
                search.append(figure)
                search_rows.append([n_queries, k, figure["irforge_qps"], figure["bm25s_qps"], figure["irforge_over_bm25s"],
                                    figure["bm25s_retrieve_only_qps"], f"{figure['irforge_mean_hits']:.1f}"])
                print(f"  {n_queries:,} queries, k={k}: irforge {figure['irforge_qps']:,.0f} q/s, bm25s {figure['bm25s_qps']:,.0f} q/s", flush=True)
                if n_queries == len(split_queries) and k == max(args.k):
                    outputs = {"hits": hits, "found": found}
        print()
        print(table(["queries", "k", "irforge q/s", "bm25s q/s", "irforge / bm25s", "bm25s retrieve only q/s",
                     "irforge hits/query"], search_rows))
        print("(bm25s always returns k documents, zero scores included; irforge only documents with a score > 0)")

    # -- agreement ------------------------------------------------------------------------------
    k_max = max(args.k)
    # Plain dicts (pytrec_eval reads nothing else), built outside the timed searches.
    irforge_run = {q.query_id: ranking.as_dict() for q, ranking in zip(split_queries, outputs["hits"])}
    positions, scores = outputs["found"]
    bm25s_run = {q.query_id: {str(ids_of_position[p]): float(s) for p, s in zip(positions[i], scores[i])}
                 for i, q in enumerate(split_queries)}
    evaluator = Evaluator()
    measures = ["nDCG@10", "R@100"]
    irforge_values = evaluator.evaluate(qrels, irforge_run, measures).aggregate
    bm25s_values = evaluator.evaluate(qrels, bm25s_run, measures).aggregate
    same_top10 = sum(list(irforge_run[q])[:10] == [str(ids_of_position[p]) for p in positions[i][:10]]
                     for i, q in enumerate(irforge_run))
    same_top10_set = sum(set(list(irforge_run[q])[:10]) == {str(ids_of_position[p]) for p in positions[i][:10]}
                         for i, q in enumerate(irforge_run))
    max_score_diff = max(abs(irforge_run[q][d] - s) for q in irforge_run for d, s in bm25s_run[q].items() if d in irforge_run[q])
    print(f"\nAgreement on the {len(split_queries)} {args.split} queries (runs of k={k_max}, scored by irforge's Evaluator)")
    print(table(["system", *measures], [["irforge", *(f"{irforge_values[m]:.4f}" for m in measures)],
                                         ["bm25s", *(f"{bm25s_values[m]:.4f}" for m in measures)]]))
    print(f"same top-10 in the same order: {same_top10}/{len(split_queries)}; same top-10 set: {same_top10_set}/{len(split_queries)}; "
          f"max |score difference| on documents both returned: {max_score_diff:.2e}")

    path = write_results(__file__, {
        "parameters": {**vars(args), "dataset": str(args.dataset)},
        "data": {"dataset": dataset.name, "documents": len(documents), "split_queries": len(split_queries), "bm25": settings.as_dict()},
        "indexing": indexing,
        "search": search,
        "agreement": {"k": k_max, "irforge": irforge_values, "bm25s": bm25s_values,
                      "same_top10_order": same_top10, "same_top10_set": same_top10_set, "max_score_abs_diff": max_score_diff},
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
