"""A small real NFCorpus slice beside the SciFact ones of tests/conftest.py: two datasets with
different documents, queries and relevance levels (NFCorpus grades 1 and 2) for suite runs."""

from __future__ import annotations

import json

import pytest
from irforge.cli.main import main


@pytest.fixture(scope="session")
def nfcorpus_subset(beir_dir, tmp_path_factory):
    """25 NFCorpus test queries, every document they judge, and the first 150 others."""
    from irforge.data import BeirDataset

    source = BeirDataset.open(beir_dir / "nfcorpus")
    qrels = source.qrels("test")
    query_ids = sorted(qrels)[:25]
    judged = {doc_id for q in query_ids for doc_id in qrels[q]}
    root = tmp_path_factory.mktemp("bench") / "nfcorpus"
    (root / "qrels").mkdir(parents=True)
    kept = [d for n, d in enumerate(source.corpus()) if d.doc_id in judged or n < 150]
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) + "\n"
                                               for d in kept))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q.query_id, "text": q.text}) + "\n"
                                                for q in source.queries() if q.query_id in query_ids))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{r}\n" for q in query_ids for d, r in sorted(qrels[q].items())))
    return root


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
