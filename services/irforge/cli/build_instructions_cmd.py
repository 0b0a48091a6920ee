"""`irforge build-instructions`: an instruction-following test collection built from BEIR SciFact,
without an LLM (the algorithm: irforge.instructions.scifact_build; docs/instructions.md).
Parse → irforge.instructions.scifact_build.build → print the counts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irforge.common.output_set import OutputFolderError
from irforge.data.errors import DataFormatError
from irforge.instructions.scifact_build import LAYOUTS, build
from irforge.instructions.scifact_writer import ScifactBuildError

PROG = "irforge build-instructions"

DESCRIPTION = ("Build an instruction-following test collection (InfoSearch layout: original, instructed and reversely "
               "instructed modes) from BEIR SciFact, without an LLM: a keyword and a length dimension, one sub-folder "
               "each, and BUILD.json.")


def add_parser(subparsers) -> None:
    builder = subparsers.add_parser(
        "build-instructions", help="build an instruction-following collection from BEIR SciFact, without an LLM",
        description=DESCRIPTION)
    add_arguments(builder)
    builder.set_defaults(handler=lambda args: run(args, PROG))


def _count(minimum: int):
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {number}")
        return number
    return parse


def add_arguments(parser) -> None:
    """The builder's options."""
    parser.add_argument("--source", required=True, type=Path, metavar="DIR",
                        help="the BEIR SciFact folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR",
                        help="the folder to create; built beside it and renamed into place at the end")
    parser.add_argument("--max-queries", type=_count(1), metavar="N",
                        help="keep the first N qualifying test queries (qrels order) per dimension (default: all)")
    parser.add_argument("--distractors", type=_count(0), metavar="N",
                        help="corpus = the judged documents plus the first N other SciFact documents "
                             "(default: the whole SciFact corpus)")
    parser.add_argument("--layout", choices=LAYOUTS, default="infosearch",
                        help="infosearch: og, changed and reversed modes; followir: og and changed only "
                             "(default: %(default)s)")
    parser.add_argument("--force", action="store_true",
                        help="replace --out when it holds an earlier build (a non-empty folder is refused otherwise)")


def run(args, prog: str = PROG) -> int:
    """Build as the parsed options say; print the counts; 2 with a one-line error when refused."""
    try:
        summary = build(args.source, args.out, max_queries=args.max_queries, distractors=args.distractors,
                        layout=args.layout, force=args.force)
    except (OutputFolderError, DataFormatError, ScifactBuildError, OSError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    for dimension, counts in summary["dimensions"].items():
        judged = ", ".join(f"{mode} {c['judgements']} ({c['relevant']} relevant)"
                           for mode, c in counts["judgements"].items())
        print(f"{dimension}: {counts['queries']} queries ({counts['skipped']} skipped), "
              f"{counts['corpus_documents']} documents ({counts['added_documents']} added); judgements: {judged}")
    print(f"wrote {args.out}")
    return 0
