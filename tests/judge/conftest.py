"""Fixtures for judge tests: a scripted OpenAI-compatible chat server on loopback, judge specs
pointing at it, a secret-looking key, and small real pairs from SciFact.

    def test_x(scripted_chat, llm_spec_file, fake_key):
        scripted_chat.script("2", scripted.status(429, retry_after=1))
        spec_path = llm_spec_file(max_retries=2)       # YAML in tmp_path, url = scripted_chat.url

`scripted` (this module's attribute, also the `scripted` fixture) is tests/judge/scripted_chat.py:
its action helpers (status, slow, drop, malformed, ...) build scripts.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
import yaml

from irforge.judge.base import JudgePair

HERE = Path(__file__).resolve().parent


def _load(name: str):
    """Helper modules of this folder (tests are not a package under --import-mode=importlib)."""
    module_name = f"irforge_judge_tests_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    module_spec = importlib.util.spec_from_file_location(module_name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return module


scripted = _load("scripted_chat")
KEY_ENV = "IRFORGE_TEST_JUDGE_KEY"


@pytest.fixture(scope="session")
def scripted_module():
    return scripted


@pytest.fixture()
def scripted_chat():
    """A started ScriptedChat (.url, .requests, .script(...), .responder, .max_in_flight)."""
    server = scripted.ScriptedChat().start()
    yield server
    server.stop()


@pytest.fixture()
def fake_key(monkeypatch) -> str:
    """A secret-looking key in $IRFORGE_TEST_JUDGE_KEY; tests assert it never leaks."""
    value = "sk-irforge-judge-" + os.urandom(12).hex()
    monkeypatch.setenv(KEY_ENV, value)
    return value


@pytest.fixture()
def llm_spec_data(scripted_chat, fake_key):
    """A judge spec mapping for the scripted server, with fast backoff; overrides as keywords."""

    def make(**overrides) -> dict:
        return {"kind": "openai-chat", "url": scripted_chat.url, "model": "scripted-judge", "api_key_env": KEY_ENV,
                "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0, **overrides}

    return make


@pytest.fixture()
def llm_spec_file(llm_spec_data, tmp_path):
    """Write a judge spec YAML for the scripted server into tmp_path; returns its path."""
    count = iter(range(1_000_000))

    def make(**overrides) -> Path:
        path = tmp_path / f"judge-{next(count)}.yaml"
        path.write_text(yaml.safe_dump(llm_spec_data(**overrides)))
        return path

    return make


@pytest.fixture(scope="session")
def scifact_pairs(beir_dir) -> list[JudgePair]:
    """24 real (query, document) pairs from SciFact's test qrels: judged documents of 8 queries,
    each with 2 further documents of the corpus (unjudged for that query)."""
    import itertools

    from irforge.data import BeirDataset

    dataset = BeirDataset.open(beir_dir / "scifact")
    qrels = dataset.qrels("test")
    query_ids = sorted(qrels)[:8]
    queries = {q.query_id: q.text for q in dataset.queries() if q.query_id in query_ids}
    wanted = {doc_id for q in query_ids for doc_id in qrels[q]}
    documents, others = {}, []
    for document in dataset.corpus():
        if document.doc_id in wanted:
            documents[document.doc_id] = document.full_text
        elif len(others) < 16:
            others.append((document.doc_id, document.full_text))
        if len(documents) == len(wanted) and len(others) >= 16:
            break
    pairs = []
    other = iter(others)
    for query_id in query_ids:
        for doc_id in sorted(qrels[query_id]):
            pairs.append(JudgePair(query_id, queries[query_id], doc_id, documents[doc_id]))
        for doc_id, text in itertools.islice(other, 2):
            pairs.append(JudgePair(query_id, queries[query_id], doc_id, text))
    return pairs
