"""`irforge metrics QRELS RUN`: a trec_eval-compatible command over the evaluator core.
Parse → irforge.app.metrics.measure → print.

Prints `measure<TAB>qid|all<TAB>value` lines exactly as trec_eval lays them out (measure name
padded to 22 characters, 4 decimals, counts as integers), so its output diffs against trec_eval's.
What a user should know about the input (which qrels layout was read, qrels queries the run has
no ranking for) goes to stderr, so stdout still diffs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irforge.app.errors import UsageError
from irforge.evaluator.measures import AGGREGATE_ONLY, COUNT_MEASURES


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "metrics",
        help="trec_eval-compatible evaluation of a TREC run file",
        description="Evaluate a TREC run against qrels (TREC or BEIR layout), printing trec_eval's output format. "
        "Measures by trec_eval name (map, P.5,10, ndcg_cut.10, all_trec) or ir_measures name "
        "(nDCG@10, R@100, RR@10, Judged@10). Without -m: irforge eval's measures "
        "(nDCG@10 R@100 AP@100 RR@10 P@10 Judged@10); --trec-eval (or -m official): trec_eval's default set.",
    )
    parser.add_argument("qrels", type=Path,
                        help="qrels file: TREC (qid iter docno rel) or BEIR (header query-id corpus-id score, 3 tab-separated columns)")
    parser.add_argument("run", type=Path, help="TREC run file: qid Q0 docno rank score tag")
    parser.add_argument("-m", dest="measures", action="append", metavar="MEASURE", help="measure or measure set (repeatable)")
    parser.add_argument("--trec-eval", action="store_true",
                        help="trec_eval's default measure set (as trec_eval without -m), same as -m official")
    parser.add_argument("-q", dest="per_query", action="store_true", help="print per-query values as well as 'all'")
    parser.add_argument("-c", dest="complete", action="store_true", help="average over every qrels query; missing ones score 0")
    parser.add_argument("-M", dest="max_docs", type=int, default=0, metavar="N", help="use at most N documents per query")
    parser.add_argument("-l", dest="relevance_level", type=int, default=1, metavar="N", help="relevance >= N counts as relevant")
    parser.add_argument(
        "--keep-identical-ids", action="store_true",
        help="do not drop retrieved documents whose id equals the query id (BEIR's rule, on by default)",
    )
    parser.set_defaults(handler=run_metrics)


def format_line(name: str, query_id: str, value: float | str) -> str:
    if isinstance(value, str):
        text = value
    elif name in COUNT_MEASURES:
        text = str(int(round(value)))
    else:
        text = f"{value:6.4f}"
    return f"{name:<22}\t{query_id}\t{text}"


def run_metrics(args: argparse.Namespace) -> int:
    from irforge.app.metrics import MetricsOptions, measure_with   # here: start-up time (irforge --help)

    measures = [*(args.measures or []), *(["official"] if args.trec_eval else [])]
    options = MetricsOptions(measures=tuple(measures) or None, complete=args.complete,
                             max_docs=args.max_docs, relevance_level=args.relevance_level,
                             keep_identical_ids=args.keep_identical_ids)
    try:
        results = measure_with(args.qrels, args.run, options,
                               notes=lambda line: print(f"irforge metrics: {line}", file=sys.stderr))
    except UsageError as error:
        print(f"irforge metrics: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(trec_eval_text(results, options.measure_list, args.per_query))
    return 0


def trec_eval_text(results, requested: list[str], per_query: bool) -> str:
    """The Results as trec_eval prints them: per query (with -q) then 'all'; the runid line when
    the measures asked for include it (runid, all_trec, official, or trec_eval's default set)."""
    names = results["measures"]
    wants_runid = any(m in ("runid", "all_trec", "official") for m in requested)
    out = []
    if per_query:
        for query_id in sorted(results.per_query):
            values = results.per_query[query_id]
            out.extend(format_line(n, query_id, values[n]) for n in names if n not in AGGREGATE_ONLY)
    if wants_runid:
        out.append(format_line("runid", "all", results["run_tag"]))
    out.extend(format_line(n, "all", results.metrics[n]) for n in names)
    return "\n".join(out) + "\n"
