"""Suite runs over two real datasets with different documents, queries and relevance levels:
the SciFact and NFCorpus slices of tests/conftest.py."""

from __future__ import annotations

import pytest
from irforge.cli.main import main


LABELS = ["scifact", "nfcorpus"]


def bench(workspace, out, *extra) -> list[str]:
    """`irforge bench` over the workspace's suite, its BM25 indexes in the workspace."""
    return ["bench", "--suite", str(workspace["suite"]), "--out", str(out), "--index-dir", str(workspace["index"]), *extra]


@pytest.fixture(scope="session")
def workspace(tmp_path_factory, scifact_subset, nfcorpus_subset):
    """A suite file naming both slices, and one BM25 index folder for every bench of the session."""
    root = tmp_path_factory.mktemp("bench-ws")
    suite = root / "suite.yaml"
    suite.write_text(f"name: two-slices\ndatasets:\n  - {{path: {scifact_subset}, label: scifact}}\n  - {nfcorpus_subset}\n")
    return {"root": root, "suite": suite, "index": root / "index", "datasets": [scifact_subset, nfcorpus_subset]}


@pytest.fixture(scope="session")
def first_run(workspace):
    """The suite benched once into OUT (its printed output kept); tests copy OUT before changing it."""
    import contextlib
    import io

    out = workspace["root"] / "first"
    printed, progress = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(progress):
        assert main(bench(workspace, out)) == 0
    return {"out": out, "stdout": printed.getvalue(), "stderr": progress.getvalue()}
