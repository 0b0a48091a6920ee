"""`irforge compare RESULTS...`: is system B better than A, on which measures, and is it significant?

Inputs are results folders (or results.json files) of `irforge eval`, or TREC runs with --qrels.
Prints the table (or --format), and with --out writes comparison.json (every p-value, the
per-query values, every system's configuration), .md, .tex and .csv as one output set."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irforge.common.output_set import OutputSet, check_output_folder
from irforge.common.files import write_json_atomic
from irforge.compare import stats
from irforge.compare.comparison import CompareSettings, compare_systems
from irforge.compare.corrections import CORRECTIONS
from irforge.compare.render import FORMATS, render, render_suite
from irforge.compare.suites import compare_suites, is_suite
from irforge.compare.systems import ComparisonError, IDENTITY, check_comparable, load_results, load_run

COMPARISON_SET = ("comparison.json", "comparison.md", "comparison.tex", "comparison.csv")


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
    parser.set_defaults(handler=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    try:
        comparison = compare_from_args(args)
    except ComparisonError as error:
        print(f"irforge compare: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(render_any(comparison, args.format))
    return 0


def compare_from_args(args: argparse.Namespace) -> dict:
    """All of `irforge compare` but the printing: load, check, test, write --out. `irforge.compare` calls this too."""
    try:
        settings = CompareSettings(
            tests=tuple(dict.fromkeys(args.tests)) if args.tests else stats.TESTS,
            significance_test=args.significance_test if not args.tests or args.significance_test in args.tests else args.tests[0],
            correction=args.correction, alpha=args.alpha, baseline=args.baseline,
            measures=tuple(args.measures) if args.measures else None,
            test_settings=stats.TestSettings(args.permutations, args.bootstrap_samples, args.confidence, args.seed),
        )
    except ValueError as error:
        raise ComparisonError(str(error)) from None
    if args.label and len(args.label) != len(args.inputs):
        raise ComparisonError(f"--label given {len(args.label)} times for {len(args.inputs)} inputs: one per input, in order")
    if args.out is not None:
        check_output_folder(args.out)
    suites = [is_suite(path) for path in args.inputs]
    if any(suites) and args.qrels is None:
        if not all(suites):
            raise ComparisonError("give either irforge bench folders (suite.json) or results, not both")
        comparison = compare_suites(args.inputs, args.label, settings, set(args.allow_different or ()))
    else:
        systems = load_systems(args)
        check_comparable(systems, set(args.allow_different or ()))
        comparison = compare_systems(systems, settings)
    if args.out is not None:
        with OutputSet(args.out, replaces=COMPARISON_SET) as staging:
            write_json_atomic(staging / "comparison.json", comparison)
            for fmt, name in (("markdown", "comparison.md"), ("latex", "comparison.tex"), ("csv", "comparison.csv")):
                (staging / name).write_text(render_any(comparison, fmt), encoding="utf-8")
    return comparison


def render_any(comparison: dict, fmt: str) -> str:
    return render_suite(comparison, fmt) if comparison["kind"] == "suite-comparison" else render(comparison, fmt)


def load_systems(args: argparse.Namespace) -> list:
    labels = args.label or [None] * len(args.inputs)
    if args.qrels is None:
        return [load_results(path, label) for path, label in zip(args.inputs, labels)]
    from irforge.cli.metrics_cmd import read_qrels_argument

    qrels = read_qrels_argument(args.qrels, Path(args.inputs[0])).qrels
    return [load_run(path, qrels, str(args.qrels), args.measures, args.keep_identical_ids, label)
            for path, label in zip(args.inputs, labels)]
