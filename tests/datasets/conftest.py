"""Fixtures for the dataset download tests: a real BEIR archive built from a SciFact slice, served
from 127.0.0.1 by a server the test starts (http_stand_ins.py), and a catalogue naming it. Nothing
here reaches the internet; every proxy variable of the environment is cleared first."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy")


def _load(path: Path, name: str):
    """A helper module of this folder (tests are not packages under --import-mode=importlib)."""
    if name not in sys.modules:
        module_spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


stand_ins = _load(HERE / "http_stand_ins.py", "irforge_datasets_http_stand_ins")
archives = _load(HERE / "archives.py", "irforge_datasets_archives")
NAME, ARCHIVE_PATH = archives.NAME, archives.ARCHIVE_PATH


@pytest.fixture(autouse=True)
def no_outside_configuration(monkeypatch):
    """The developer's proxies and dataset settings never reach these tests."""
    for variable in (*PROXY_VARIABLES, "IRFORGE_DATASETS_DIR", "IRFORGE_DATASETS_CATALOG", "IRFORGE_DATASETS_MIRROR"):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture(scope="session")
def scifact_slice(beir_dir, tmp_path_factory) -> Path:
    """50 real SciFact documents: those judged for the first test queries, then others; the
    queries and test qrels of those judged documents. Lines kept byte for byte."""
    source = beir_dir / "scifact"
    qrels = [line.split("\t") for line in (source / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    chosen_queries, judged = [], []
    for query_id, doc_id, _ in qrels:
        if len(set(judged) | {doc_id}) > 30:
            break
        if query_id not in chosen_queries:
            chosen_queries.append(query_id)
        judged.append(doc_id)
    judged = set(judged)
    lines = (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    ids = [json.loads(line)["_id"] for line in lines]
    others = [doc_id for doc_id in ids if doc_id not in judged][: 50 - len(judged)]
    wanted = judged | set(others)
    kept = [line for doc_id, line in zip(ids, lines) if doc_id in wanted]
    assert len(kept) == 50
    root = tmp_path_factory.mktemp("scifact-slice") / "scifact-mini"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(kept), encoding="utf-8")
    queries = [line for line in (source / "queries.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
               if json.loads(line)["_id"] in chosen_queries]
    (root / "queries.jsonl").write_text("".join(queries), encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        "\t".join(row) + "\n" for row in qrels if row[0] in chosen_queries), encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def slice_zip(scifact_slice) -> bytes:
    return archives.beir_zip(scifact_slice, "scifact-mini")


@pytest.fixture
def server(slice_zip):
    running = stand_ins.ArchiveServer({ARCHIVE_PATH: slice_zip})
    yield running
    running.close()


@pytest.fixture
def catalog(tmp_path, server, slice_zip) -> Path:
    """A team catalogue (YAML) naming the served slice archive by its sha256."""
    return archives.write_catalog(tmp_path / "catalog.yaml", [
        {"name": NAME, "url": server.url + ARCHIVE_PATH, "sha256": hashlib.sha256(slice_zip).hexdigest()}])
