"""Entry point of the `irforge` console script."""

from __future__ import annotations

import argparse
import os
import sys

from irforge import __version__
from irforge.cli import eval_cmd, jobs_cmd, judge_cmd, metrics_cmd, qc_cmd, serve_cmd, service_cmd, shard_cmd
from irforge.common.grpc_errors import ServiceUnavailable
from irforge.corpus.errors import CorpusError
from irforge.data.errors import DataFormatError
from irforge.endpoints.errors import EndpointError
from irforge.evaluator.core import EvaluationError
from irforge.evaluator.measures import MeasureError
from irforge.judge.errors import JudgeError
from irforge.models.errors import ModelError

# Never reach a model hub at run time; models come from packages or mounted paths.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

USER_ERRORS = (DataFormatError, MeasureError, EvaluationError, CorpusError, ModelError, EndpointError, ServiceUnavailable,
               JudgeError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="irforge", description="Retrieval evaluation you can trust.")
    parser.add_argument("--version", action="version", version=f"irforge {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    eval_cmd.add_parser(subparsers)
    metrics_cmd.add_parser(subparsers)
    service_cmd.add_parser(subparsers)
    serve_cmd.add_parser(subparsers)
    jobs_cmd.add_parsers(subparsers)
    qc_cmd.add_parser(subparsers)
    judge_cmd.add_parser(subparsers)
    shard_cmd.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            code = _run(argv)
        except SystemExit as stop:   # argparse after --help or a usage error
            code = stop.code
        sys.stdout.flush()           # here, not at exit: a reader that went away surfaces below
        return code
    except BrokenPipeError:
        # The reader went away (`irforge jobs | head`): stop quietly, as a Unix tool killed by
        # SIGPIPE does (exit 128 + 13). stdout goes to /dev/null so the interpreter's final flush
        # cannot raise the same error again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except USER_ERRORS as error:
        print(f"irforge {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"irforge {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
