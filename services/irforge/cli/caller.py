"""The flags every client command of a platform takes to say where it is and who calls: --server
and --token-env. A token is read from the environment, never from the command line, where
shell history, `ps` and CI logs would keep it."""

from __future__ import annotations

import argparse
import os

from irforge.accounts.errors import AccountsError

DEFAULT_SERVER = "127.0.0.1:50050"
TOKEN_VARIABLE = "IRFORGE_TOKEN"


def default_server() -> str:
    return os.environ.get("IRFORGE_SERVER") or DEFAULT_SERVER


def add_caller_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default=default_server(), metavar="HOST:PORT",
                        help=f"the orchestrator (default $IRFORGE_SERVER or {DEFAULT_SERVER})")
    parser.add_argument("--token-env", default=TOKEN_VARIABLE, metavar="VAR",
                        help=f"the environment variable that holds your token (default {TOKEN_VARIABLE}; unset: no "
                             "token, as a platform started with --auth none wants). Never the token itself: a flag's "
                             "value stays in shell history and process lists")


def token_from(args: argparse.Namespace) -> str | None:
    """The token in the variable --token-env names; None when the default one is unset."""
    name = getattr(args, "token_env", TOKEN_VARIABLE)
    value = (os.environ.get(name) or "").strip()
    if value:
        return value
    if name != TOKEN_VARIABLE:   # asked for by name: its absence is a mistake worth saying
        raise AccountsError(f"--token-env {name}: the environment variable {name} is not set (or empty)")
    return None
