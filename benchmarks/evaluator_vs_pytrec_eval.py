"""irforge's Evaluator against plain pytrec_eval on a large synthetic run with many tied scores.

The run starts as a retriever hands it over: per query, doc ids and scores as arrays in the tie-rule
order. Building each side's input from those arrays is timed on its own:
  pytrec_eval's input: query id -> {doc id: score} dicts;
  irforge's input:     query id -> irforge.ranking.Ranking over the two arrays (irforge also takes dicts).
Then the evaluation, all on the same run and qrels:
  (a)  irforge  Evaluator().evaluate(qrels, rankings, DEFAULT_MEASURES, EvaluationOptions(drop_identical_ids=True))
       -> nDCG@10, R@100, AP@100, RR@10, P@10, Judged@10
  (a2) the same on the dicts (a caller that still has dicts)
  (a') (a) with the same five measures as (b)+(c), i.e. without Judged@10
  (b)  pytrec_eval.RelevanceEvaluator(qrels, {ndcg_cut.10, recall.100, map_cut.100, recip_rank, P.10})
       .evaluate(dicts) + compute_aggregated_measure: recip_rank here is over the WHOLE run, not RR@10
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
from irforge.ranking import Ranking

PLAIN_MEASURES = {"ndcg_cut.10", "recall.100", "map_cut.100", "recip_rank", "P.10"}
# irforge output name -> the plain pytrec_eval key giving the same number
SAME_AS_PLAIN = {"nDCG@10": "ndcg_cut_10", "R@100": "recall_100", "AP@100": "map_cut_100", "P@10": "P_10"}
FIVE_MEASURES = ("nDCG@10", "R@100", "AP@100", "RR@10", "P@10")


def build(n_queries: int, docs_per_query: int, pool_size: int, max_judged: int,
          coarse_fraction: float, seed: int) -> tuple[dict, dict, dict]:
    """Each query's retrieved documents as a retriever hands them over, and qrels with
    1..max_judged graded (0-2) judgements per query.

    The run is `query id -> (doc ids, scores)`: an object array of doc id strings and a float64
    array, already in the tie-rule order (score descending, doc id descending), as a ranking
    retriever produces them. Scores are rounded to 2 decimals (many ties); a `coarse_fraction` of
    queries get scores with one decimal in 0..1 only (11 values: ties everywhere, the top-10
    boundary included). About a quarter of the judged documents are not retrieved. Judged
    retrieved documents get a score boost growing with their grade, so the measures are not all
    near zero.
    """
    rng = np.random.default_rng(seed)
    # Shared str objects keep the run small; zero-padded, so string order is number order.
    doc_names = np.array([f"D{i:07d}" for i in range(pool_size)], dtype=object)
    score_table = np.arange(0, 2001) / 100                    # 0.00 .. 20.00
    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
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
        judged = dict(zip(doc_names[ids[:n_retrieved]].tolist(), grades[:n_retrieved].tolist()))
        retrieved = set(ids.tolist())
        for grade in grades[n_retrieved:].tolist():              # judged but not retrieved
            while True:
                candidate = int(rng.integers(0, pool_size))
                if candidate not in retrieved and doc_names[candidate] not in judged:
                    judged[doc_names[candidate]] = grade
                    break
        qrels[query_id] = judged
        order = np.lexsort((ids, hundredths))[::-1]              # score desc, then doc id desc
        arrays[query_id] = (doc_names[ids[order]], score_table[hundredths[order]])
    stats = {"coarse_score_queries": coarse_queries}
    return arrays, qrels, stats


def as_dicts(arrays: dict) -> dict[str, dict[str, float]]:
    """pytrec_eval's input: query id -> {doc id: score}, Python objects."""
    return {query_id: dict(zip(doc_ids.tolist(), scores.tolist())) for query_id, (doc_ids, scores) in arrays.items()}


def as_rankings(arrays: dict) -> dict[str, Ranking]:
    """irforge's columnar input: query id -> Ranking over the retriever's two arrays."""
    return {query_id: Ranking(doc_ids, scores) for query_id, (doc_ids, scores) in arrays.items()}


def boundary_ties(arrays: dict, k: int = 10) -> int:
    """Queries whose k-th and (k+1)-th best scores are equal: the tie rule decides their top k."""
    return sum(bool(len(scores) > k and scores[k - 1] == scores[k]) for _, scores in arrays.values())


def judged_at_10(qrels: dict, arrays: dict) -> dict[str, float]:
    """Judged@10 by hand from the arrays (already in tie-rule order): a reference for irforge's."""
    return {q: sum(d in qrels[q] for d in ids[:10].tolist()) / min(10, len(ids)) for q, (ids, _) in arrays.items() if q in qrels}


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
    arrays, qrels, stats = build(args.queries, args.docs_per_query, args.pool_size, args.max_judged, args.coarse_fraction, args.seed)
    generate_seconds = time.perf_counter() - start
    n_entries = sum(len(ids) for ids, _ in arrays.values())
    n_judgements = sum(map(len, qrels.values()))
    judged_not_retrieved = n_judgements - sum(sum(d in qrels[q] for d in ids.tolist()) for q, (ids, _) in arrays.items())
    ties = boundary_ties(arrays)
    print(f"run: {args.queries:,} queries x {args.docs_per_query:,} docs = {n_entries:,} entries; "
          f"qrels: {n_judgements:,} judgements ({judged_not_retrieved:,} not retrieved); "
          f"{ties:,} queries tied across the top-10 boundary; generated in {generate_seconds:.1f} s "
          f"(not timed); best of {args.repeat}\n", flush=True)

    # -- inputs: each side's from the same arrays -------------------------------------------------
    inputs = {"dicts": ("pytrec_eval's input: {doc id: score} dicts", lambda: as_dicts(arrays)),
              "rankings": ("irforge's input: Rankings over the arrays", lambda: as_rankings(arrays))}
    input_peaks = {name: None if args.no_memory else extra_peak_mib(function) for name, (_, function) in inputs.items()}
    built, input_rows = {}, {}
    for name, (label, function) in inputs.items():
        built[name], seconds = measure(function, args.repeat)
        input_rows[name] = {"label": label, "seconds": seconds, "best_s": min(seconds), "extra_peak_mib": input_peaks[name]}
        memory = "" if input_peaks[name] is None else f"; extra peak {input_peaks[name]:,.0f} MiB"
        print(f"  building {label}: best {min(seconds):.2f} s{memory}", flush=True)
    dicts, rankings = built["dicts"], built["rankings"]
    resident = rss_mib() or 0.0

    # -- evaluation ---------------------------------------------------------------------------------
    options = EvaluationOptions(drop_identical_ids=True)
    plan = [("irforge", "(a) irforge Evaluator on Rankings, 6 default measures",
             lambda: Evaluator().evaluate(qrels, rankings, DEFAULT_MEASURES, options)),
            ("irforge_dicts", "(a2) irforge Evaluator on dicts, 6 default measures",
             lambda: Evaluator().evaluate(qrels, dicts, DEFAULT_MEASURES, options))]
    if not args.no_breakdown:
        plan.append(("irforge_five", "(a') irforge on Rankings, the 5 measures of (b)+(c)",
                     lambda: Evaluator().evaluate(qrels, rankings, FIVE_MEASURES, options)))
    plan += [("pytrec_eval", "(b) plain pytrec_eval, 5 measures", lambda: plain_pytrec_eval(qrels, dicts)),
             ("pytrec_eval_rr10", "(c) pytrec_eval + manual truncation, RR@10", lambda: plain_rr_at_10(qrels, dicts))]

    # Memory first, each variant once in a forked child of this same process state (inputs built,
    # nothing timed yet), so that no variant reuses memory an earlier one freed.
    peaks = {name: None if args.no_memory else extra_peak_mib(function) for name, _, function in plan}
    variants: dict[str, dict] = {}
    results = {}
    for name, label, function in plan:
        results[name], seconds = measure(function, args.repeat)
        variants[name] = {"label": label, "seconds": seconds, "best_s": min(seconds), "extra_peak_mib": peaks[name],
                          "queries_per_s": args.queries / min(seconds)}
        memory = "" if peaks[name] is None else f"; extra peak {peaks[name]:,.0f} MiB"
        print(f"  {label}: best {min(seconds):.2f} s of {', '.join(f'{s:.2f}' for s in seconds)}{memory}", flush=True)
    plain_aggregate, plain_per_query = results["pytrec_eval"]
    rr10_aggregate, rr10_per_query = results["pytrec_eval_rr10"]

    # -- values -------------------------------------------------------------------------------------
    comparisons = []
    reference_judged = judged_at_10(qrels, arrays)
    for variant in ("irforge", "irforge_dicts"):
        ours = results[variant]
        against = [(ir_name, f"(b) {key}", plain_aggregate[key], plain_per_query, key) for ir_name, key in SAME_AS_PLAIN.items()]
        against += [("RR@10", "(c) recip_rank on top 10", rr10_aggregate, rr10_per_query, "recip_rank"),
                    ("RR@10", "(b) recip_rank, whole run", plain_aggregate["recip_rank"], plain_per_query, "recip_rank"),
                    ("Judged@10", "by hand from the arrays", math.fsum(reference_judged.values()) / len(reference_judged),
                     {q: {"j": v} for q, v in reference_judged.items()}, "j")]
        for ir_name, label, plain, per_query, key in against:
            comparisons.append({
                "variant": variant, "measure": ir_name, "against": label, "irforge": ours.aggregate[ir_name], "plain": plain,
                "aggregate_abs_diff": abs(ours.aggregate[ir_name] - plain),
                "per_query_max_abs_diff": max_diff(ours.per_query, ir_name, per_query, key),
            })
    rankings_equal_dicts = (results["irforge"].per_query == results["irforge_dicts"].per_query
                            and results["irforge"].aggregate == results["irforge_dicts"].aggregate)

    # -- report -------------------------------------------------------------------------------------
    base = variants["pytrec_eval"]["best_s"]
    base_bc = base + variants["pytrec_eval_rr10"]["best_s"]
    print("\nEvaluation (seconds, best of %d)" % args.repeat)
    rows = [[v["label"], v["best_s"], v["queries_per_s"], v["best_s"] / base, v["best_s"] / base_bc, v["extra_peak_mib"]]
            for v in variants.values()]
    rows.append(["(b)+(c) plain pytrec_eval, 5 measures with RR@10", base_bc, args.queries / base_bc, base_bc / base, 1.0, None])
    print(table(["variant", "seconds", "queries/s", "/ (b)", "/ (b)+(c)", "extra peak MiB"], rows))
    print(f"(extra peak memory: {MEMORY_METHOD}; arrays, dicts, Rankings and qrels together take {resident:,.0f} MiB)")

    print("\nBuilding the inputs from the retriever's arrays (seconds, best of %d)" % args.repeat)
    print(table(["input", "seconds", "extra peak MiB"],
                [[v["label"], v["best_s"], v["extra_peak_mib"]] for v in input_rows.values()]))
    end_to_end = {
        "rankings_plus_a": input_rows["rankings"]["best_s"] + variants["irforge"]["best_s"],
        "dicts_plus_a2": input_rows["dicts"]["best_s"] + variants["irforge_dicts"]["best_s"],
        "dicts_plus_b": input_rows["dicts"]["best_s"] + base,
        "dicts_plus_b_c": input_rows["dicts"]["best_s"] + base_bc,
    }
    print(table(["inputs + evaluation", "seconds", "/ dicts + (b)"],
                [["Rankings + (a)", end_to_end["rankings_plus_a"], end_to_end["rankings_plus_a"] / end_to_end["dicts_plus_b"]],
                 ["dicts + (a2)", end_to_end["dicts_plus_a2"], end_to_end["dicts_plus_a2"] / end_to_end["dicts_plus_b"]],
                 ["dicts + (b)", end_to_end["dicts_plus_b"], 1.0],
                 ["dicts + (b)+(c)", end_to_end["dicts_plus_b_c"], end_to_end["dicts_plus_b_c"] / end_to_end["dicts_plus_b"]]]))

    print("\nValues (mean over queries)")
    print(table(["variant", "measure", "compared with", "irforge", "plain", "|diff| mean", "max |diff| per query"],
                [[c["variant"], c["measure"], c["against"], f"{c['irforge']:.6f}", f"{c['plain']:.6f}", c["aggregate_abs_diff"],
                  c["per_query_max_abs_diff"]] for c in comparisons]))
    print(f"(a) and (a2) identical, every query and measure: {rankings_equal_dicts}; "
          f"identical ids dropped: {results['irforge'].identical_ids_dropped}")

    ratios = {
        "irforge_over_pytrec_eval": variants["irforge"]["best_s"] / base,
        "irforge_dicts_over_pytrec_eval": variants["irforge_dicts"]["best_s"] / base,
        "irforge_over_pytrec_eval_plus_truncation": variants["irforge"]["best_s"] / base_bc,
        "irforge_dicts_over_pytrec_eval_plus_truncation": variants["irforge_dicts"]["best_s"] / base_bc,
        "rankings_input_over_dicts_input": input_rows["rankings"]["best_s"] / input_rows["dicts"]["best_s"],
        "end_to_end_rankings_over_dicts_plus_pytrec_eval": end_to_end["rankings_plus_a"] / end_to_end["dicts_plus_b"],
    }
    if not args.no_memory:
        ratios["irforge_peak_over_pytrec_eval_peak"] = variants["irforge"]["extra_peak_mib"] / variants["pytrec_eval"]["extra_peak_mib"]
        ratios["irforge_dicts_peak_over_pytrec_eval_peak"] = variants["irforge_dicts"]["extra_peak_mib"] / variants["pytrec_eval"]["extra_peak_mib"]
    print("\n" + "; ".join(f"{name}: {value:.2f}" for name, value in ratios.items()))

    path = write_results(__file__, {
        "parameters": vars(args),
        "data": {"entries": n_entries, "judgements": n_judgements, "judged_not_retrieved": judged_not_retrieved,
                 "queries_tied_at_top10_boundary": ties, "generate_seconds": generate_seconds, **stats},
        "memory_method": None if args.no_memory else MEMORY_METHOD,
        "resident_mib_after_inputs": resident,
        "inputs": input_rows,
        "variants": variants,
        "end_to_end_s": end_to_end,
        "ratios": ratios,
        "values": comparisons,
        "rankings_and_dicts_identical": rankings_equal_dicts,
        "irforge_aggregate": results["irforge"].aggregate,
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
