"""`irforge eval`: the main job — index a BEIR collection, retrieve for its split, evaluate.
Parse → configuration → irforge.app.evaluate → print."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irforge.app.errors import UsageError
from irforge.cli.options import add_config_file_option, add_config_options, config_from_args
from irforge.common.output_set import OutputFolderError
from irforge.common.redact import redact_text
from irforge.config import ConfigError, PipelineConfig

# The options of eval-instructions only, and of eval only.
INSTRUCTION_OPTIONS = ("instruction_template", "robustness_k")
EVAL_ONLY_OPTIONS = ("fill_holes", "judge", "store", "thresholds", "relevant_from", "flagged", "second_judge")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval", help="evaluate a retriever on a BEIR collection",
        description="Index the corpus (skipping work already done), retrieve for every query of the split, "
        "write OUT/run.trec and OUT/results.json, and print the metric table. Every option is a field of the "
        "pipeline configuration (docs/configuration.md); --config FILE reads them all from a file.",
    )
    add_pipeline_arguments(parser, exclude=INSTRUCTION_OPTIONS)
    parser.set_defaults(handler=run_eval)


def add_pipeline_arguments(parser: argparse.ArgumentParser, exclude: tuple[str, ...] = ()) -> None:
    """--out, --config and every pipeline option (irforge.config.PipelineConfig's fields): one set
    of flags for `irforge eval`, `eval-instructions`, `bench` and `submit`."""
    parser.add_argument("--out", type=Path, required=True, help="output folder for run.trec and results.json")
    add_config_file_option(parser)
    add_config_options(parser, PipelineConfig, exclude=exclude)


def run_eval(args: argparse.Namespace) -> int:
    # Here, not at the top: `irforge --help` imports every command's module (start-up time).
    from irforge.app.evaluate import EXIT_MOSTLY_EMPTY, empty_run_report, evaluate
    from irforge.app.holes import EXIT_NOT_ALL_JUDGED

    try:
        results = evaluate(config_from_args(args, PipelineConfig), args.out)
    except (UsageError, ConfigError, OutputFolderError) as error:
        print(f"irforge eval: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    sys.stdout.write(results.table())
    lines, mostly_empty = empty_run_report(results)
    for line in lines:
        print(f"irforge eval: {line}", file=sys.stderr)
    if mostly_empty:
        return EXIT_MOSTLY_EMPTY
    from irforge.judge.holes import not_all_judged

    if "holes" in results and (problem := not_all_judged(results["holes"])):
        print(f"irforge eval: {problem}", file=sys.stderr)
        return EXIT_NOT_ALL_JUDGED
    return 0
