"""`irforge eval-instructions`: instruction-following evaluation (InfoSearch, FollowIR, InstructIR)
with the retrievers, endpoints, rerankers and services of `irforge eval`.
Parse → configuration → irforge.app.evaluate.evaluate_instructions → print."""

from __future__ import annotations

import argparse
import sys

from irforge.app.errors import UsageError
from irforge.cli.eval_cmd import EVAL_ONLY_OPTIONS, add_pipeline_arguments
from irforge.cli.options import config_from_args
from irforge.common.output_set import OutputFolderError
from irforge.common.redact import redact_text
from irforge.config import ConfigError, PipelineConfig


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval-instructions", help="evaluate instruction following (InfoSearch, FollowIR, InstructIR layouts)",
        description="Retrieve every mode of every query (original, instructed, reversely instructed) over the full corpus, "
        "write one TREC run per mode and dimension and OUT/results.json: nDCG per mode against its own qrels, p-MRR, "
        "WISE, SICR (InfoSearch), p-MRR (FollowIR) or Robustness@k (InstructIR). --dataset is an instruction-following "
        "folder (InfoSearch: qrels_og/ qrels_changed/ qrels_reversed/; FollowIR: qrels_og/ qrels_changed/; InstructIR: "
        "qrels/ with query ids <base>_<n>), or a folder of such folders, one per dimension. See docs/instructions.md.",
    )
    add_pipeline_arguments(parser, exclude=EVAL_ONLY_OPTIONS)
    parser.set_defaults(handler=run_eval_instructions)


def run_eval_instructions(args: argparse.Namespace) -> int:
    from irforge.app.evaluate import evaluate_instructions   # here: start-up time (irforge --help)

    try:
        results = evaluate_instructions(config_from_args(args, PipelineConfig), args.out)
    except (UsageError, ConfigError, OutputFolderError) as error:
        print(f"irforge eval-instructions: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    sys.stdout.write(results.table())
    return 0
