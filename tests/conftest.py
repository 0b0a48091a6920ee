"""Shared fixtures: paths to the real data beside the project (../shared/data)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Everything the suite writes outside tmp_path goes into one folder of its own, removed when the
# session ends: pytest's tmp_path folders, tempfile users, Ray's session folders (Ray reads
# TMPDIR), torch's compile cache, and the user-wide irforge stores (indexes, embedding cache,
# judgements, thresholds) that commands fall back to, so a run neither reads nor changes the
# developer's own. Subprocesses inherit all of it. The short prefix keeps Ray's socket paths under
# the 107-byte limit of AF_UNIX.
SESSION_TMP = Path(tempfile.mkdtemp(prefix="irf-"))
os.environ["TMPDIR"] = str(SESSION_TMP)
tempfile.tempdir = None
for variable in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
    os.environ[variable] = str(SESSION_TMP / variable.lower())


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 0:
        shutil.rmtree(SESSION_TMP, ignore_errors=True)
    else:  # keep the evidence of a failed run
        print(f"\ntest files kept in {SESSION_TMP}")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("IRFORGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
BEIR = SHARED_DATA / "beir"
CONFORMANCE = SHARED_DATA / "trec_eval_conformance"


@pytest.fixture(scope="session")
def beir_dir() -> Path:
    if not BEIR.is_dir():
        pytest.fail(f"real BEIR data not found at {BEIR} (set IRFORGE_SHARED_DATA)")
    return BEIR


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.fail(f"trec_eval conformance fixtures not found at {CONFORMANCE} (set IRFORGE_SHARED_DATA)")
    return CONFORMANCE


@pytest.fixture()
def unused_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def scifact_subset(beir_dir, tmp_path_factory) -> Path:
    """A small real BEIR folder: 40 SciFact test queries, their judged documents and the first
    300 others. For paths whose cost grows with the corpus (Ray Serve, remote encoders)."""
    import itertools
    import json

    from irforge.data import BeirDataset

    source = BeirDataset.open(beir_dir / "scifact")
    qrels = source.qrels("test")
    query_ids = sorted(qrels)[:40]
    judged = {doc_id for q in query_ids for doc_id in qrels[q]}
    root = tmp_path_factory.mktemp("scifact-subset")
    (root / "qrels").mkdir()
    with open(root / "corpus.jsonl", "w") as out:
        for n, document in enumerate(source.corpus()):
            if document.doc_id in judged or n < 300:
                out.write(json.dumps({"_id": document.doc_id, "title": document.title, "text": document.text}) + "\n")
    with open(root / "queries.jsonl", "w") as out:
        for query in itertools.islice((q for q in source.queries() if q.query_id in query_ids), None):
            out.write(json.dumps({"_id": query.query_id, "text": query.text}) + "\n")
    with open(root / "qrels" / "test.tsv", "w") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for q in query_ids:
            for doc_id, relevance in qrels[q].items():
                out.write(f"{q}\t{doc_id}\t{relevance}\n")
    return root


@pytest.fixture(scope="session")
def scifact_tiny(scifact_subset, tmp_path_factory) -> Path:
    """3 SciFact test queries, their judged documents and 20 others: for slow models and endpoints."""
    import json

    from irforge.data import BeirDataset

    source = BeirDataset.open(scifact_subset)
    qrels = source.qrels("test")
    query_ids = sorted(qrels)[:3]
    judged = {doc for q in query_ids for doc in qrels[q]}
    root = tmp_path_factory.mktemp("scifact-tiny")
    (root / "qrels").mkdir()
    kept = [d for n, d in enumerate(source.corpus()) if d.doc_id in judged or n < 20]
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) + "\n" for d in kept))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q.query_id, "text": q.text}) + "\n"
                                                for q in source.queries() if q.query_id in query_ids))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{r}\n" for q in query_ids for d, r in qrels[q].items()))
    return root


@pytest.fixture()
def services_address(tmp_path):
    """A fresh corpus service (embedded BM25, its own index folder) and an evaluator on one
    loopback port: what orchestrator jobs call."""
    from irforge.common.grpc_server import start_server
    from irforge.corpus import server as corpus_server
    from irforge.corpus.core import CorpusService
    from irforge.corpus.lexical.embedded import EmbeddedBackend
    from irforge.evaluator import server as evaluator_server
    from irforge.evaluator.core import Evaluator

    running = start_server([corpus_server.binding(CorpusService(EmbeddedBackend(tmp_path / "indexes"))),
                            evaluator_server.binding(Evaluator())], port=0)
    yield f"127.0.0.1:{running.port}"
    running.stop(grace=0)
