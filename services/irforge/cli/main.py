"""Entry point of the `irforge` console script."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from irforge import __version__
from irforge.cli.parser import IrforgeParser
from irforge.common.extras import missing_extra
from irforge.common.files import NoSpaceLeft, is_disk_full
from irforge.common.redact import redact_text
from irforge.common.tls import CHANNELS, CHANNELS_VARIABLE, CLIENT_VARIABLES, channel_settings

# Never reach a model hub at run time; models come from packages or mounted paths.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def user_errors() -> tuple[type[BaseException], ...]:
    """The errors that are the user's to fix (exit 2, no traceback). Imported when an error is being
    reported (an `except` clause evaluates its types only then), not at every start: their rooms
    import numpy, YAML and pytrec_eval, which `irforge --help` has no use for."""
    from irforge.accounts.errors import USER_ERRORS as ACCOUNT_ERRORS
    from irforge.common.extras import MissingExtra
    from irforge.common.grpc_errors import ServiceUnavailable
    from irforge.common.output_set import OutputFolderError
    from irforge.common.tls import TlsConfigError
    from irforge.corpus.errors import CorpusError
    from irforge.data.errors import DataFormatError
    from irforge.datasets.errors import DatasetError
    from irforge.endpoints.errors import EndpointError
    from irforge.evaluator.core import EvaluationError
    from irforge.evaluator.measures import MeasureError
    from irforge.judge.errors import JudgeError
    from irforge.models.errors import ModelError
    from irforge.results.reading import ResultsFileError

    return (DataFormatError, MeasureError, EvaluationError, CorpusError, ModelError, EndpointError, ServiceUnavailable,
            JudgeError, TlsConfigError, OutputFolderError, DatasetError, ResultsFileError, MissingExtra, *ACCOUNT_ERRORS)


def __getattr__(name: str):
    """USER_ERRORS as before (`from irforge.cli.main import USER_ERRORS`), computed when asked for."""
    if name == "USER_ERRORS":
        return user_errors()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# A full disk (or quota) is the user's environment, not their input and not a bug: exit status 74
# (EX_IOERR, sysexits.h), told apart from 2 (bad input: retrying cannot help, so a shard worker's
# Job fails at once) and 1 (a bug, with its traceback). Freeing space and running again can succeed.
DISK_FULL_EXIT = 74


# Each command's module (irforge.cli.<module>), in the order `irforge --help` lists them. Only the
# chosen command's module is imported (`irforge eval` never loads what `serve` needs): start-up time
# is the newcomer's first impression, and a command module imports its heavy rooms in its handler.
COMMAND_MODULES = {
    "eval": "eval_cmd", "bench": "bench_cmd", "eval-instructions": "instructions_cmd",
    "build-instructions": "build_instructions_cmd", "metrics": "metrics_cmd", "service": "service_cmd",
    "serve": "serve_cmd", "submit": "jobs_cmd", "watch": "jobs_cmd", "results": "jobs_cmd", "jobs": "jobs_cmd",
    "cancel": "jobs_cmd", "leaderboard": "leaderboard_cmd", "qc": "qc_cmd", "generate": "generate_cmd",
    "judge-holes": "judge_cmd", "judge-calibrate": "judge_cmd", "judge-audit": "judge_cmd",
    "shard-worker": "shard_cmd", "encode-shards": "shard_cmd", "compare": "compare_cmd", "agreement": "agreement_cmd",
    "datasets": "datasets_cmd", "report": "report_cmd", "check": "check_cmd", "admin": "admin_cmd", "whoami": "admin_cmd",
}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; given the command line, only its command's (any other word, --help or
    nothing at all gets the whole parser, so argparse's listing and "invalid choice" stay whole)."""
    parser = IrforgeParser(prog="irforge", description="Retrieval evaluation you can trust.")
    parser.add_argument("--version", action="version", version=f"irforge {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((word for word in argv or () if not word.startswith("-")), None)
    modules = [COMMAND_MODULES[chosen]] if chosen in COMMAND_MODULES else dict.fromkeys(COMMAND_MODULES.values())
    for name in modules:
        module = importlib.import_module(f"irforge.cli.{name}")
        (module.add_parser if hasattr(module, "add_parser") else module.add_parsers)(subparsers)
    for command in subparsers.choices.values():
        add_client_tls_arguments(command)
    return parser


def add_client_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """Every command may call irforge services (--server, --corpus-server, an orchestrator's services)."""
    group = parser.add_argument_group("TLS (channels to irforge services)")
    group.add_argument("--tls-ca", metavar="PEM", help=f"call irforge services over TLS, trusting this CA (${CLIENT_VARIABLES['ca']})")
    group.add_argument("--tls-client-cert", metavar="PEM",
                       help=f"mutual TLS: present this certificate (${CLIENT_VARIABLES['cert']})")
    group.add_argument("--tls-client-key", metavar="PEM", help=f"its private key (${CLIENT_VARIABLES['key']})")
    group.add_argument("--channel-tls", action="append", metavar="CHANNEL=PEM|plaintext",
                       help=f"the channels to one service ({', '.join(CHANNELS)}) trust this CA, or are plaintext, "
                            f"instead of --tls-ca (repeatable; ${CHANNELS_VARIABLE}, comma-separated)")


def apply_client_tls_arguments(args: argparse.Namespace) -> None:
    """Flags become the environment: every channel this process opens reads it (common/tls.py),
    and so do the services and workers it starts."""
    for name, variable in (("tls_ca", CLIENT_VARIABLES["ca"]), ("tls_client_cert", CLIENT_VARIABLES["cert"]),
                           ("tls_client_key", CLIENT_VARIABLES["key"])):
        if getattr(args, name, None):
            os.environ[variable] = str(getattr(args, name))
    if getattr(args, "channel_tls", None):   # the flags' channels over the environment's
        merged = {**channel_settings(os.environ.get(CHANNELS_VARIABLE)),
                  **channel_settings(",".join(args.channel_tls), source="--channel-tls")}
        os.environ[CHANNELS_VARIABLE] = ",".join(f"{channel}={value}" for channel, value in merged.items())


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
    args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    try:
        apply_client_tls_arguments(args)   # inside: a bad --channel-tls is a user error too
        return args.handler(args)
    except ModuleNotFoundError as error:
        # The net under the boundaries that call require_extra: a library an extra brings is missing.
        missing = missing_extra(error, f"irforge {args.command}")
        if missing is None:
            raise
        print(f"irforge {args.command}: error: {missing}", file=sys.stderr)
        return 2
    except user_errors() as error:
        # Errors quote what the user gave (an endpoint's URL among them): never its credentials.
        print(f"irforge {args.command}: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    except (NoSpaceLeft, OSError) as error:
        if not isinstance(error, NoSpaceLeft):
            if not is_disk_full(error):
                raise
            error = NoSpaceLeft(error.filename or "(a file the writer did not name)")
        print(f"irforge {args.command}: error: {error}; free some space and run again", file=sys.stderr)
        return DISK_FULL_EXIT
    except KeyboardInterrupt:
        print(f"irforge {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
