"""`irforge compare RESULTS...`: is system B better than A, on which measures, and is it significant?

Inputs are results folders (or results.json files) of `irforge eval`, or TREC runs with --qrels.
Prints the table (or --format), and with --out writes comparison.json (every p-value, the
per-query values, every system's configuration), .md, .tex and .csv as one output set.
Parse → irforge.app.compare.compare → print."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irforge.compare import stats
from irforge.compare.corrections import CORRECTIONS
from irforge.compare.render import FORMATS
from irforge.compare.systems import ComparisonError, IDENTITY
from irforge.results import ResultsFileError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "compare", help="paired significance tests between systems, corrected for multiple comparisons",
        description="Compare systems query by query: paired t-test, Wilcoxon signed-rank, Fisher's randomization test "
                    "and a paired bootstrap per measure, against a baseline or between every pair, with Holm "
                    "(default), Bonferroni or Benjamini-Hochberg correction. Refuses results from different datasets, "
                    "splits, corpora, labels or evaluation options unless --allow-different says otherwise.",
    )
    parser.add_argument("inputs", nargs="+", metavar="RESULTS",
                        help="a results folder or results.json of irforge eval; an irforge bench OUT folder (suite.json: "
                             "every dataset the suites share is compared); with --qrels, TREC run files")
    parser.add_argument("--qrels", type=Path, help="qrels (BEIR or TREC layout) to evaluate TREC run inputs against")
    parser.add_argument("--label", action="append", metavar="NAME",
                        help="a name per input, in order (default: the results folder's or run file's name)")
    parser.add_argument("--baseline", metavar="NAME", help="compare every system with this one (default: every pair)")
    parser.add_argument("-m", "--measure", dest="measures", action="append", metavar="MEASURE",
                        help="measure to compare (repeatable; default: every measure all inputs have)")
    parser.add_argument("--test", dest="tests", action="append", choices=stats.TESTS,
                        help="test to run (repeatable; default: all four)")
    parser.add_argument("--significance-test", choices=stats.TESTS, default="t",
                        help="the test whose corrected p-value decides the table's letters (default t)")
    parser.add_argument("--correction", choices=CORRECTIONS, default="holm",
                        help="correction for multiple comparisons within each measure and test (default holm)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    parser.add_argument("--permutations", type=int, default=stats.TestSettings.permutations,
                        help=f"random sign patterns of the randomization test (default {stats.TestSettings.permutations}; "
                             "exact when 2^queries is smaller)")
    parser.add_argument("--bootstrap-samples", type=int, default=stats.TestSettings.bootstrap_samples,
                        help=f"bootstrap resamples (default {stats.TestSettings.bootstrap_samples})")
    parser.add_argument("--confidence", type=float, default=stats.TestSettings.confidence,
                        help="confidence level of the bootstrap interval (default 0.95)")
    parser.add_argument("--seed", type=int, default=stats.TestSettings.seed,
                        help="seed of the randomization and bootstrap resampling (default 0): same seed, same p-values")
    parser.add_argument("--allow-different", action="append", choices=tuple(IDENTITY), metavar="FIELD",
                        help=f"compare even though this field differs ({', '.join(IDENTITY)}; repeatable)")
    parser.add_argument("--keep-identical-ids", action="store_true",
                        help="TREC run inputs: keep retrieved documents whose id equals the query id (default: drop, as eval)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="what to print (default text)")
    parser.add_argument("--out", type=Path, help="also write comparison.json/.md/.tex/.csv into this folder, as one set")
    parser.add_argument("--mteb", action="append", type=Path, metavar="PATH",
                        help="MTEB results (a TaskResult file, or a model's folder of them, e.g. from the public "
                             "embeddings-benchmark/results): its published figures beside each system's, per dataset "
                             "(means only: MTEB publishes no per-query values, so no test against them); repeatable")
    parser.set_defaults(handler=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    from irforge.app.compare import CompareOptions, compare_with, render_any   # here: start-up time (irforge --help)

    options = CompareOptions(
        qrels=args.qrels, labels=tuple(args.label) if args.label else None, baseline=args.baseline,
        measures=tuple(args.measures) if args.measures else None, tests=tuple(args.tests) if args.tests else None,
        significance_test=args.significance_test, correction=args.correction, alpha=args.alpha,
        permutations=args.permutations, bootstrap_samples=args.bootstrap_samples, confidence=args.confidence,
        seed=args.seed, allow_different=tuple(args.allow_different or ()), keep_identical_ids=args.keep_identical_ids,
        out=args.out, mteb=tuple(args.mteb or ()),
    )
    try:
        comparison = compare_with(args.inputs, options)
    except (ComparisonError, ResultsFileError) as error:
        print(f"irforge compare: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(render_any(comparison, args.format))
    return 0
