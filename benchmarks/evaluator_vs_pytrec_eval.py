"""irforge's Evaluator against plain pytrec_eval on a large synthetic run with many tied scores.

Variants, all on the same run and qrels (building them is not timed):
  (a)  irforge  Evaluator().evaluate(qrels, run, DEFAULT_MEASURES, EvaluationOptions(drop_identical_ids=True))
       -> nDCG@10, R@100, AP@100, RR@10, P@10, Judged@10
  (a') irforge with the same five measures as (b)+(c), i.e. without Judged@10 (where the time goes)
  (b)  pytrec_eval.RelevanceEvaluator(qrels, {ndcg_cut.10, recall.100, map_cut.100, recip_rank, P.10})
       .evaluate(run) + compute_aggregated_measure: recip_rank here is over the WHOLE run, not RR@10
  (c)  pytrec_eval + manual truncation: each query cut to its top 10 (score desc, then doc id desc,
       trec_eval's tie rule) with sorted(), then recip_rank -> RR@10

Run: .venv/bin/python benchmarks/evaluator_vs_pytrec_eval.py [--queries 10000 --docs-per-query 1000 --repeat 3]
Writes benchmarks/results/evaluator_vs_pytrec_eval.json.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pytrec_eval

from _common import MEMORY_METHOD, extra_peak_mib, measure, rss_mib, table, write_results
from irforge.evaluator.core import EvaluationOptions, Evaluator
from irforge.evaluator.measures import DEFAULT_MEASURES

PLAIN_MEASURES = {"ndcg_cut.10", "recall.100", "map_cut.100", "recip_rank", "P.10"}
# irforge output name -> the plain pytrec_eval key giving the same number
SAME_AS_PLAIN = {"nDCG@10": "ndcg_cut_10", "R@100": "recall_100", "AP@100": "map_cut_100", "P@10": "P_10"}
FIVE_MEASURES = ("nDCG@10", "R@100", "AP@100", "RR@10", "P@10")


def build(n_queries: int, docs_per_query: int, pool_size: int, max_judged: int,
          coarse_fraction: float, seed: int) -> tuple[dict, dict, dict]:
    """A run of n_queries x docs_per_query and qrels with 1..max_judged graded (0-2) judgements.

    Scores are rounded to 2 decimals (many ties); a `coarse_fraction` of queries get scores with
    one decimal in 0..1 only (11 values: ties everywhere, the top-10 boundary included). About a
    quarter of the judged documents are not retrieved. Judged retrieved documents get a score
    boost growing with their grade, so the measures are not all near zero.
    """
    rng = np.random.default_rng(seed)
    doc_names = [f"D{i:07d}" for i in range(pool_size)]      # shared str objects keep the run small
    score_table = [i / 100 for i in range(0, 2001)]           # 0.00 .. 20.00, shared float objects
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    coarse_queries = 0
    for qi in range(n_queries):
        query_id = f"Q{qi:06d}"
        ids = rng.choice(pool_size, size=docs_per_query, replace=False)
        n_judged = int(rng.integers(1, max_judged + 1))
        n_retrieved = min(int(rng.binomial(n_judged, 0.75)), docs_per_query)
        grades = rng.integers(0, 3, size=n_judged)
        if rng.random() < coarse_fraction:
            coarse_queries += 1
            hundredths = rng.integers(0, 11, size=docs_per_query) * 10          # 0.0, 0.1, .. 1.0
            hundredths[:n_retrieved] = np.minimum(hundredths[:n_retrieved] + 10 * grades[:n_retrieved], 100)
        else:
            hundredths = np.clip(np.rint(rng.normal(500, 150, size=docs_per_query)), 0, 1000).astype(np.int64)
            hundredths[:n_retrieved] += np.rint(grades[:n_retrieved] * rng.uniform(0, 300, size=n_retrieved)).astype(np.int64)
        run[query_id] = dict(zip(map(doc_names.__getitem__, ids.tolist()), map(score_table.__getitem__, hundredths.tolist())))
        judged = dict(zip(map(doc_names.__getitem__, ids[:n_retrieved].tolist()), grades[:n_retrieved].tolist()))
        retrieved = set(ids.tolist())
        for grade in grades[n_retrieved:].tolist():              # judged but not retrieved
            while True:
                candidate = int(rng.integers(0, pool_size))
                if candidate not in retrieved and doc_names[candidate] not in judged:
                    judged[doc_names[candidate]] = grade
                    break
        qrels[query_id] = judged
    stats = {"coarse_score_queries": coarse_queries}
    return run, qrels, stats


def boundary_ties(run: dict, k: int = 10) -> int:
    """Queries whose k-th and (k+1)-th best scores are equal: the tie rule decides their top k."""
    count = 0
    for scores in run.values():
        if len(scores) > k:
            top = np.partition(np.fromiter(scores.values(), dtype=np.float64, count=len(scores)), len(scores) - k - 1)
            kth = np.sort(top[len(scores) - k - 1:])[::-1]
            count += bool(kth[k - 1] == kth[k])
    return count


def plain_pytrec_eval(qrels: dict, run: dict) -> tuple[dict, dict]:
    per_query = pytrec_eval.RelevanceEvaluator(qrels, PLAIN_MEASURES).evaluate(run)
    keys = next(iter(per_query.values())).keys()
    aggregate = {key: pytrec_eval.compute_aggregated_measure(key, [v[key] for v in per_query.values()]) for key in keys}
    return aggregate, per_query


def _score_then_id(item):
    return item[1], item[0]


def plain_rr_at_10(qrels: dict, run: dict) -> tuple[float, dict]:
    truncated = {q: dict(sorted(scores.items(), key=_score_then_id, reverse=True)[:10]) for q, scores in run.items()}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(truncated)
    return pytrec_eval.compute_aggregated_measure("recip_rank", [v["recip_rank"] for v in per_query.values()]), per_query


def max_diff(a: dict, a_key: str, b: dict, b_key: str) -> float:
    if a.keys() != b.keys():
        return math.inf
    return max(abs(a[q][a_key] - b[q][b_key]) for q in a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs-per-query", type=int, default=1_000)
    parser.add_argument("--pool-size", type=int, default=200_000, help="distinct document ids to draw from")
    parser.add_argument("--max-judged", type=int, default=20, help="judged documents per query: 1..this")
    parser.add_argument("--coarse-fraction", type=float, default=0.2, help="share of queries with 11 distinct scores")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per variant; the best is reported")
    parser.add_argument("--no-breakdown", action="store_true", help="skip variant (a'), irforge without Judged@10")
    parser.add_argument("--no-memory", action="store_true", help="skip the extra (forked) run per variant that measures peak memory")
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()

    start = time.perf_counter()
    run, qrels, stats = build(args.queries, args.docs_per_query, args.pool_size, args.max_judged, args.coarse_fraction, args.seed)
    build_seconds = time.perf_counter() - start
    n_entries = sum(map(len, run.values()))
    n_judgements = sum(map(len, qrels.values()))
    judged_not_retrieved = sum(sum(d not in run[q] for d in judged) for q, judged in qrels.items())
    ties = boundary_ties(run)
    resident = rss_mib() or 0.0
    print(f"run: {args.queries:,} queries x {args.docs_per_query:,} docs = {n_entries:,} entries; "
          f"qrels: {n_judgements:,} judgements ({judged_not_retrieved:,} not retrieved); "
          f"{ties:,} queries tied across the top-10 boundary; built in {build_seconds:.1f} s "
          f"(not timed), resident {resident:,.0f} MiB; best of {args.repeat}\n")

    options = EvaluationOptions(drop_identical_ids=True)
    variants: dict[str, dict] = {}

    plan = [("irforge", "(a) irforge Evaluator, 6 default measures",
             lambda: Evaluator().evaluate(qrels, run, DEFAULT_MEASURES, options))]
    if not args.no_breakdown:
        plan.append(("irforge_five", "(a') irforge Evaluator, same 5 measures (no Judged@10)",
                     lambda: Evaluator().evaluate(qrels, run, FIVE_MEASURES, options)))
    plan += [("pytrec_eval", "(b) plain pytrec_eval, 5 measures", lambda: plain_pytrec_eval(qrels, run)),
             ("pytrec_eval_rr10", "(c) pytrec_eval + manual truncation, RR@10", lambda: plain_rr_at_10(qrels, run))]

    # Memory first, each variant once in a forked child of this same process state (inputs built,
    # nothing timed yet), so that no variant reuses memory an earlier one freed.
    peaks = {name: None if args.no_memory else extra_peak_mib(function) for name, _, function in plan}
    results = {}
    for name, label, function in plan:
        results[name], seconds = measure(function, args.repeat)
        variants[name] = {"label": label, "seconds": seconds, "best_s": min(seconds), "extra_peak_mib": peaks[name]}
        memory = "" if peaks[name] is None else f"; extra peak {peaks[name]:,.0f} MiB"
        print(f"  {label}: best {min(seconds):.2f} s of {', '.join(f'{s:.2f}' for s in seconds)}{memory}", flush=True)
    irforge_result = results["irforge"]
    plain_aggregate, plain_per_query = results["pytrec_eval"]
    rr10_aggregate, rr10_per_query = results["pytrec_eval_rr10"]
    for name in variants:
        variants[name]["queries_per_s"] = args.queries / variants[name]["best_s"]

    # -- values ---------------------------------------------------------------------------------
    comparisons = []
    for ir_name, key in SAME_AS_PLAIN.items():
        comparisons.append({
            "measure": ir_name, "against": f"(b) {key}", "irforge": irforge_result.aggregate[ir_name],
            "plain": plain_aggregate[key], "aggregate_abs_diff": abs(irforge_result.aggregate[ir_name] - plain_aggregate[key]),
            "per_query_max_abs_diff": max_diff(irforge_result.per_query, ir_name, plain_per_query, key),
        })
    comparisons.append({
        "measure": "RR@10", "against": "(c) recip_rank on top 10", "irforge": irforge_result.aggregate["RR@10"],
        "plain": rr10_aggregate, "aggregate_abs_diff": abs(irforge_result.aggregate["RR@10"] - rr10_aggregate),
        "per_query_max_abs_diff": max_diff(irforge_result.per_query, "RR@10", rr10_per_query, "recip_rank"),
    })
    comparisons.append({
        "measure": "RR@10", "against": "(b) recip_rank, whole run", "irforge": irforge_result.aggregate["RR@10"],
        "plain": plain_aggregate["recip_rank"], "aggregate_abs_diff": abs(irforge_result.aggregate["RR@10"] - plain_aggregate["recip_rank"]),
        "per_query_max_abs_diff": max_diff(irforge_result.per_query, "RR@10", plain_per_query, "recip_rank"),
    })

    # -- report ---------------------------------------------------------------------------------
    base = variants["pytrec_eval"]["best_s"]
    base_bc = base + variants["pytrec_eval_rr10"]["best_s"]
    print("\nTiming (seconds, best of %d)" % args.repeat)
    rows = []
    for name, v in variants.items():
        rows.append([v["label"], v["best_s"], v["queries_per_s"], v["best_s"] / base, v["best_s"] / base_bc, v["extra_peak_mib"]])
    rows.append(["(b)+(c) plain pytrec_eval, 5 measures with RR@10", base_bc, args.queries / base_bc, base_bc / base, 1.0, None])
    print(table(["variant", "seconds", "queries/s", "/ (b)", "/ (b)+(c)", "extra peak MiB"], rows))
    print(f"(extra peak memory: {MEMORY_METHOD}; the run and qrels themselves take about {resident:,.0f} MiB)")

    print("\nValues (mean over queries)")
    print(table(["measure", "compared with", "irforge", "plain", "|diff| mean", "max |diff| per query"],
                [[c["measure"], c["against"], f"{c['irforge']:.6f}", f"{c['plain']:.6f}", c["aggregate_abs_diff"],
                  c["per_query_max_abs_diff"]] for c in comparisons]))
    print(f"irforge Judged@10: {irforge_result.aggregate['Judged@10']:.6f}; identical ids dropped: {irforge_result.identical_ids_dropped}")

    ratio = variants["irforge"]["best_s"] / base
    print(f"\nirforge / plain pytrec_eval (b): {ratio:.2f}x; irforge / (b)+(c): {variants['irforge']['best_s'] / base_bc:.2f}x")

    path = write_results(__file__, {
        "parameters": vars(args),
        "data": {"entries": n_entries, "judgements": n_judgements, "judged_not_retrieved": judged_not_retrieved,
                 "queries_tied_at_top10_boundary": ties, "build_seconds": build_seconds, **stats},
        "memory_method": None if args.no_memory else MEMORY_METHOD,
        "resident_mib_after_build": resident,
        "variants": variants,
        "ratios": {"irforge_over_pytrec_eval": ratio, "irforge_over_pytrec_eval_plus_truncation": variants["irforge"]["best_s"] / base_bc},
        "values": comparisons,
        "irforge_aggregate": irforge_result.aggregate,
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
