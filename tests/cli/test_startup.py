"""`irforge --help` and `irforge eval --help` answer at once: they import the command modules and
the configuration, never the heavy libraries a command loads when it runs (each costs 0.1-1 s of
start-up on these cores: scipy.stats ~1 s, torch several). Checked in a fresh interpreter by what
is in sys.modules afterwards, so a new top-level import of one of them fails here, not in a
stopwatch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Libraries that must not load to print help. numpy may be present as a lazy module (not yet
# executed): numpy._core is what loading it imports.
HEAVY = ("torch", "transformers", "sentence_transformers", "ray", "grpc", "google.protobuf", "kubernetes",
         "elasticsearch", "qdrant_client", "qdrant_edge", "openai", "scipy", "numpy._core", "pytrec_eval_ext",
         "httpx", "bm25s", "pythainlp", "starlette", "uvicorn")
PROBE = """
import json, sys
from irforge.cli.main import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit:
    pass
heavy = json.loads(sys.argv[2])
print(json.dumps(sorted(name for name in sys.modules if any(name == h or name.startswith(h + ".") for h in heavy))))
"""


@pytest.mark.parametrize("argv", [["--help"], ["eval", "--help"], ["compare", "--help"], ["serve", "--help"]], ids=" ".join)
def test_help_imports_none_of_the_heavy_libraries(argv):
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "usage: irforge" in done.stdout and json.loads(lines[-1]) == []


def test_the_listing_names_every_command_and_a_command_parses_alone():
    from irforge.cli.main import COMMAND_MODULES, build_parser

    whole = build_parser()
    commands = next(action for action in whole._actions if action.dest == "command").choices
    assert sorted(commands) == sorted(COMMAND_MODULES)
    alone = build_parser(["metrics", "qrels.tsv", "run.trec"])
    assert list(next(a for a in alone._actions if a.dest == "command").choices) == ["metrics"]
    assert alone.parse_args(["metrics", "qrels.tsv", "run.trec"]).qrels == whole.parse_args(["metrics", "qrels.tsv", "run.trec"]).qrels
