"""`irforge generate` when the LLM answers garbage (issue 24): a generation with no usable query is
not complete (exit 1, an error saying how many answers were unusable and why, the manifest
incomplete with the reason) and never replaces an earlier collection; one with some garbage says
how much. The LLM is the suite's scripted OpenAI-compatible server on 127.0.0.1 (the one test
double: a paid API); the documents are real SciFact ones."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from irforge.cli.main import main

from ..judge import scripted_chat as scripted


@pytest.fixture()
def chat():
    server = scripted.ScriptedChat().start()
    yield server
    server.stop()


@pytest.fixture()
def llm(chat, tmp_path) -> Path:
    path = tmp_path / "llm.yaml"
    path.write_text(yaml.safe_dump({"kind": "openai-chat", "url": chat.url, "model": "scripted-generator",
                                    "max_concurrency": 4, "backoff_initial_s": 0.01, "backoff_max_s": 0.05,
                                    "timeout_s": 10.0}))
    return path


def generate(scifact_tiny, llm, out, cache, capsys, docs=4) -> tuple[int, str, str]:
    code = main(["generate", "airbench-qa", "--corpus", str(scifact_tiny), "--llm", str(llm), "--out", str(out),
                 "--docs", str(docs), "--cache", str(cache), "--no-qc"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_generation_with_no_usable_query_is_not_complete(chat, llm, scifact_tiny, tmp_path, capsys):
    chat.structured = lambda prompt, body: "Sure! Here are some characters: a nurse, a judge."   # never JSON
    out = tmp_path / "out"
    code, stdout, stderr = generate(scifact_tiny, llm, out, tmp_path / "cache.sqlite3", capsys)
    assert code == 1
    assert ("irforge generate: error: no usable query: all 4 answers of stage characters were unusable "
            "(4 unparsed: not valid after 2 answers; last: not JSON") in stderr
    manifest = json.loads((out / "generation.json").read_text())
    assert manifest["complete"] is False and manifest["output"]["queries"] == 0
    assert manifest["incomplete_reason"].startswith("no usable query: all 4 answers of stage characters were unusable")
    assert manifest["answers"] == {"asked": 4, "ok": 0, "unusable": 4, "unparsed": 4, "failed": 0, "not_sent": 0,
                                   "reasons": {"not valid after 2 answers; last: not JSON": 4}}
    # Nothing that looks like a collection to evaluate: the manifest and the raw answers only.
    assert sorted(p.name for p in out.iterdir()) == ["generation.json", "provenance.jsonl"]
    assert main(["eval", "--dataset", str(out), "--out", str(tmp_path / "eval")]) == 2


def test_garbage_never_replaces_an_earlier_collection(chat, llm, scifact_tiny, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, _ = generate(scifact_tiny, llm, out, tmp_path / "cache.sqlite3", capsys)
    assert code == 0
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.rglob("*") if p.is_file()}
    chat.structured = lambda prompt, body: "```json\n{\"broken\": \n```"
    code, _, stderr = generate(scifact_tiny, llm, out, tmp_path / "other-cache.sqlite3", capsys)
    assert code == 1 and "no usable query" in stderr
    assert f"{out} keeps the earlier collection" in stderr
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.rglob("*") if p.is_file()} == before


def test_partial_garbage_is_reported_with_counts(chat, llm, scifact_tiny, tmp_path, capsys):
    def half_garbage(prompt, body):
        # The characters stage of half the documents (by the prompt's hash) answers garbage, twice.
        if body["response_format"]["json_schema"]["name"] == "characters" and \
                int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 2:
            return "no JSON today"
        return scripted.answer_by_schema(prompt, body)

    chat.structured = half_garbage
    out = tmp_path / "out"
    code, stdout, stderr = generate(scifact_tiny, llm, out, tmp_path / "cache.sqlite3", capsys, docs=8)
    manifest = json.loads((out / "generation.json").read_text())
    bad = manifest["stages"]["characters"]["unparsed"]
    assert 0 < bad < 8 and manifest["output"]["queries"] == 8 - bad == 8 - manifest["incomplete_chains"]
    assert code == 0 and manifest["complete"] is True and manifest["incomplete_reason"] is None
    assert manifest["answers"]["unusable"] == bad and manifest["answers"]["unparsed"] == bad
    assert f"answers unusable: {bad} of {manifest['answers']['asked']} ({bad} unparsed, 0 failed): {bad}x not valid " \
           "after 2 answers; last: not JSON\n" in stdout
    assert f"queries {8 - bad} ({bad} chains incomplete)" in stdout

