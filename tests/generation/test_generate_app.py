"""The generate use case's own door (irforge.app.generate): bad options are refused as UsageError
before any request, and a GenerateRequest writes the collection `irforge generate` writes."""

from __future__ import annotations

import json

import pytest

from irforge.app.errors import UsageError
from irforge.app.generate import GenerateRequest, generate


@pytest.mark.parametrize("change, said", [
    ({"docs": 0}, "--docs must be at least 1, got 0"),
    ({"max_cost": 0.0}, "--max-cost must be positive"),
    ({"max_requests": 0}, "--max-requests must be at least 1"),
    ({"llm": None}, "--llm required"),
    ({"templates": "missing-folder"}, "--templates missing-folder: not a folder"),
])
def test_bad_options_are_refused_before_any_request(change, said, chat, spec_file, scifact_tiny, tmp_path):
    options = {"corpus": scifact_tiny, "llm": spec_file(), "out": tmp_path / "out", "cache": tmp_path / "cache.sqlite3"}
    with pytest.raises(UsageError, match=said):
        generate(GenerateRequest("airbench-qa", **{**options, **change}))
    assert not chat.chat_requests and not (tmp_path / "out").exists()


def test_a_store_inside_out_is_refused(chat, spec_file, scifact_tiny, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(UsageError, match="--store"):
        generate(GenerateRequest("airbench-qa", corpus=scifact_tiny, llm=spec_file(), out=out, store=out / "s.sqlite3"))
    assert not chat.chat_requests


def test_the_request_writes_what_the_command_writes(chat, spec_file, run_cli, scifact_tiny, tmp_path):
    spec, cache = spec_file(), tmp_path / "cache.sqlite3"
    manifest = generate(GenerateRequest("airbench-qa", corpus=scifact_tiny, llm=spec, out=tmp_path / "app", docs=4,
                                        seed=3, qc=False, cache=cache))
    assert manifest["path"] == str(tmp_path / "app") and manifest["complete"] and manifest["qc"]["reason"] == "--no-qc"
    code, stdout, _ = run_cli("generate", "airbench-qa", "--corpus", scifact_tiny, "--llm", spec, "--out",
                              tmp_path / "cli", "--docs", 4, "--seed", 3, "--cache", cache, "--no-qc")
    assert code == 0 and f"wrote {tmp_path / 'cli'}" in stdout
    written = json.loads((tmp_path / "cli" / "generation.json").read_text())
    timing = ("started_at", "finished_at", "stages", "cost")   # the second run is answered by the cache
    assert {k: v for k, v in written.items() if k not in timing} == \
           {k: v for k, v in manifest.items() if k not in timing + ("path",)}
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "hard_negatives.tsv"):
        assert (tmp_path / "app" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
