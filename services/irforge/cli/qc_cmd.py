"""`irforge qc`: AIR-Bench quality control of a BEIR collection (irforge.judge.qc). Parse (the
flags derived from QcConfig) -> QcConfig -> irforge.app.qc.run_qc -> print."""

from __future__ import annotations

import argparse
import sys

from irforge.cli.options import add_config_options, config_from_args
from irforge.common.redact import redact_text
from irforge.config.qc import NOT_IN_QC, QcConfig


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "qc", help="AIR-Bench quality control: judge labelled positives, hard negatives and likely missing positives",
        description="Recall each query's top documents with the embedding model, re-rank them with every --reranker, "
        "pre-label a document positive when more than half of the rerankers rank it within the threshold, ask the judge, "
        "and write the corrected dataset (BEIR layout) with qc_audit.jsonl and qc_summary.json to --out.",
    )
    add_config_options(parser, QcConfig, exclude=NOT_IN_QC, required=("dataset", "out"))
    parser.set_defaults(handler=run_qc)


def run_qc(args: argparse.Namespace) -> int:
    from irforge.app.qc import run_qc as quality_control

    try:
        summary = quality_control(config_from_args(args, QcConfig))
    except ValueError as error:  # an option refused, an OUTDIR refused, a contradictory hard negatives file
        print(f"irforge qc: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    print_summary(summary, sys.stdout)
    return 0


def print_summary(summary: dict, out) -> None:
    from irforge.results.render import qc_lines

    out.write("\n" + "".join(line + "\n" for line in qc_lines(summary)))
