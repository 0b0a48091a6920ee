"""`irforge agreement`: do two label sets (or two collections) rank the same systems the same way?

Three ways to give the systems' scores under A (the reference: human labels, the original
collection) and under B:
  RUN... --qrels-a FILE... --qrels-b FILE...   the same TREC runs evaluated under two label sets
                                               (a set may be several files: human qrels plus
                                               a judged layer such as qrels.judged.tsv)
  --a RESULTS... --b RESULTS...                results of the same systems, in the same order, on
                                               two collections (an original and its generated or
                                               QC-corrected version)
  --table FILE                                 a TSV/CSV: system, score under A, score under B

Parse → irforge.app.agreement.agreement → print.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from irforge.app.agreement import DEFAULT_MEASURE, AgreementOptions, agreement_with
from irforge.compare.agreement import AgreementError, AgreementSettings
from irforge.compare.systems import ComparisonError
from irforge.results import ResultsFileError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "agreement", help="Kendall's tau, tau_AP and Spearman's rho between system rankings under two label sets",
        description="Rank the same systems under label set (or collection) A and B and measure how far the two "
                    "rankings agree: Kendall's tau-b and Spearman's rho with scipy's p-values, tau_AP (top-weighted, "
                    "A as reference) with a randomization p-value.",
    )
    parser.add_argument("runs", nargs="*", metavar="RUN", help="TREC runs, each evaluated under --qrels-a and --qrels-b")
    parser.add_argument("--qrels-a", action="append", type=Path, metavar="FILE",
                        help="label set A (reference), BEIR or TREC qrels; repeat to add a layer (e.g. qrels.judged.tsv)")
    parser.add_argument("--qrels-b", action="append", type=Path, metavar="FILE", help="label set B; repeat to add layers")
    parser.add_argument("--a", dest="results_a", nargs="+", metavar="RESULTS", help="results folders of the systems under A")
    parser.add_argument("--b", dest="results_b", nargs="+", metavar="RESULTS", help="results of the same systems under B, same order")
    parser.add_argument("--table", type=Path, help="TSV or CSV with a header: system, score under A, score under B")
    parser.add_argument("--lower-is-better", action="store_true", help="--table holds ranks (1 = best), not scores")
    parser.add_argument("-m", "--measure", default=DEFAULT_MEASURE, help=f"the measure that ranks systems (default {DEFAULT_MEASURE})")
    parser.add_argument("--keep-identical-ids", action="store_true", help="RUN inputs: keep documents whose id equals the query id")
    parser.add_argument("--permutations", type=int, default=AgreementSettings.permutations,
                        help="random orders for tau_AP's p-value (default 10000)")
    parser.add_argument("--seed", type=int, default=AgreementSettings.seed, help="seed of tau_AP's randomization (default 0)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="what to print (default text)")
    parser.set_defaults(handler=run_agreement)


def run_agreement(args: argparse.Namespace) -> int:
    options = AgreementOptions(
        runs=tuple(args.runs), qrels_a=tuple(args.qrels_a or ()), qrels_b=tuple(args.qrels_b or ()),
        a=tuple(args.results_a or ()), b=tuple(args.results_b or ()), table=args.table,
        lower_is_better=args.lower_is_better, measure=args.measure, keep_identical_ids=args.keep_identical_ids,
        permutations=args.permutations, seed=args.seed,
    )
    try:
        result = agreement_with(options)
    except (AgreementError, ComparisonError, ResultsFileError) as error:
        print(f"irforge agreement: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(result, indent=1) + "\n" if args.format == "json" else describe(result))
    return 0


def describe(result: dict) -> str:
    width = max(len("system"), *(len(name) for name in result["ranks"]))
    lines = [f"{result['systems']} systems" + (f" ranked by {result['measure']}" if result["measure"] else "") + f" ({result['source']})",
             f"{'system':<{width}} {'A':>10} {'rank':>5} {'B':>10} {'rank':>5}"]
    for name, r in sorted(result["ranks"].items(), key=lambda item: item[1]["A"]):
        lines.append(f"{name:<{width}} {r['score_A']:>10.4f} {r['A']:>5} {r['score_B']:>10.4f} {r['B']:>5}")
    k, s, t = result["kendall_tau"], result["spearman_rho"], result["tau_ap"]
    lines += [f"Kendall's tau   {k['value']:+.4f}  p = {k['p']:.2g}",
              f"Spearman's rho  {s['value']:+.4f}  p = {s['p']:.2g}",
              f"tau_AP (A ref.) {t['value']:+.4f}  p = {t['p']:.2g} ({t['permutations']} random orders, seed {t['seed']})"]
    return "\n".join(lines) + "\n"
