"""The generation engine against the scripted chat server: structured outputs sent, answers
validated (a malformed one never becomes data), one re-ask, retries on 429/5xx, the cache, and
clean budget stops; attribute sampling in AIR-Bench's ratios; the dev:test split."""

from __future__ import annotations

import json
import sys
from collections import Counter

import pytest
from irforge.generation.cache import GenerationCache
from irforge.generation.collection import split_queries
from irforge.generation.engine import Ask, Engine, Stage, parse_answer
from irforge.generation.sampling import CLAIM_LENGTHS, LENGTHS, STYLES, query_attributes, rng_for, styles
from irforge.generation.templates import PromptTemplate, TemplateError, load_template
from irforge.judge.spec import JudgeSpec

scripted = sys.modules["irforge_judge_tests_scripted_chat"]   # loaded by conftest.py

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["query"],
          "properties": {"query": {"type": "string", "minLength": 1}}}
STAGE = Stage("query", PromptTemplate("query", "Write a query about {topic}.", "test"), SCHEMA, 50)


def engine_for(chat, tmp_path, **options) -> Engine:
    spec = JudgeSpec.from_dict({"kind": "openai-chat", "url": chat.url, "model": "m", "max_concurrency": 2,
                                "backoff_initial_s": 0.01, "backoff_max_s": 0.02, "timeout_s": 5.0,
                                "price_per_million_prompt_tokens": 1.0})
    return Engine(spec, GenerationCache(tmp_path / "cache.sqlite3"), **options)


def test_parse_answer_reads_fences_and_refuses_what_the_schema_refuses():
    assert parse_answer('```json\n{"query": "x"}\n```', SCHEMA) == ({"query": "x"}, "")
    assert parse_answer('{"query": ""}', SCHEMA)[0] is None
    assert "extra" in parse_answer('{"query": "x", "extra": 1}', SCHEMA)[1]
    assert parse_answer("Sure! here it is", SCHEMA)[1].startswith("not JSON")


def test_structured_outputs_are_sent_and_garbage_is_reasked_once_then_unparsed(chat, tmp_path):
    chat.script("garbage", '{"query": "good"}', "garbage", '{"wrong": 1}')
    engine = engine_for(chat, tmp_path)
    first = engine.run(STAGE, [Ask("a", {"topic": "cells"})])[0]
    second = engine.run(STAGE, [Ask("b", {"topic": "genes"})])[0]
    assert (first.status, first.data) == ("ok", {"query": "good"})
    assert (second.status, second.data) == ("unparsed", None)
    assert second.record["raw"] == ["garbage", '{"wrong": 1}'] and second.record["calls"] == 2
    body = chat.chat_requests[0].body
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "query", "schema": SCHEMA, "strict": True}}
    assert body["max_tokens"] == 50
    reask = chat.chat_requests[1].body["messages"]
    assert [m["role"] for m in reask] == ["user", "assistant", "user"] and "not valid" in reask[2]["content"]
    assert len(chat.chat_requests) == 4


def test_429_and_5xx_are_retried_and_a_rerun_is_answered_by_the_cache(chat, tmp_path):
    chat.script(scripted.status(429, retry_after=0), scripted.status(503))
    asks = [Ask(f"s{i}", {"topic": f"topic {i}"}) for i in range(6)]
    engine = engine_for(chat, tmp_path)
    outcomes = engine.run(STAGE, asks)
    assert [o.status for o in outcomes] == ["ok"] * 6
    assert len(chat.chat_requests) == 8 and engine.counts["query"].requests == 8
    again = engine_for(chat, tmp_path).run(STAGE, asks)
    assert [o.data for o in again] == [o.data for o in outcomes] and all(o.record["from_cache"] for o in again)
    assert len(chat.chat_requests) == 8   # nothing sent the second time


def test_max_requests_stops_cleanly_and_exactly(chat, tmp_path):
    engine = engine_for(chat, tmp_path, max_requests=3)
    outcomes = engine.run(STAGE, [Ask(f"s{i}", {"topic": f"t{i}"}) for i in range(8)])
    assert Counter(o.status for o in outcomes) == {"ok": 3, "not_sent": 5}
    assert len(chat.chat_requests) == 3 and engine.stopped == "--max-requests 3 reached"


def test_max_cost_stops_before_the_next_request(chat, tmp_path):
    chat.structured = lambda prompt, body: scripted.answer('{"query": "q"}', prompt_tokens=1_000_000, completion_tokens=1)
    engine = engine_for(chat, tmp_path, max_cost=2.5)   # $1 per answer at 1 USD per million prompt tokens
    outcomes = engine.run(STAGE, [Ask(f"s{i}", {"topic": f"t{i}"}) for i in range(10)])
    sent = sum(o.status == "ok" for o in outcomes)
    assert 3 <= sent <= 3 + 2          # in flight when the limit was reached: at most max_concurrency more
    assert engine.stopped.startswith("--max-cost 2.5 USD reached") and sent == len(chat.chat_requests)


def test_a_template_must_use_exactly_its_stage_placeholders(tmp_path):
    (tmp_path / "query.txt").write_text("Only {document} here")
    with pytest.raises(TemplateError, match=r"missing \['character'"):
        load_template("query", {"document", "character"}, tmp_path)
    assert load_template("negatives", {"document", "query", "count"}).source == "default"


def test_attributes_follow_air_bench_ratios():
    draws = [query_attributes(rng_for(7, "attributes", str(i))) for i in range(8000)]
    lengths = Counter(d["length"] for d in draws)
    for name, weight in LENGTHS.items():
        assert lengths[name] / len(draws) == pytest.approx(weight / 8, abs=0.02)
    long_types = Counter(d["type"] for d in draws if d["length"] in CLAIM_LENGTHS)
    total = sum(long_types.values())
    assert long_types["question"] / total == pytest.approx(0.6, abs=0.03)
    assert long_types["claim"] / total == pytest.approx(0.2, abs=0.03)
    assert not any(d["type"] == "claim" for d in draws if d["length"] not in CLAIM_LENGTHS)
    assert Counter(d["information"] for d in draws)["whole"] / len(draws) == pytest.approx(0.5, abs=0.02)
    drawn = Counter(s for i in range(3000) for s in styles(rng_for(1, "styles", str(i)), 3))
    for name, weight in STYLES.items():
        assert drawn[name] / 9000 == pytest.approx(weight / 15, abs=0.015)


def test_split_is_one_to_four_and_seeded():
    ids = [f"q{i}" for i in range(50)]
    split = split_queries(ids, seed=3)
    assert Counter(split.values()) == {"dev": 10, "test": 40}
    assert split == split_queries(list(reversed(ids)), seed=3) and split != split_queries(ids, seed=4)


def test_the_scripted_server_answers_any_schema_validly():
    schema = {"type": "object", "additionalProperties": False, "required": ["documents"], "properties": {
        "documents": {"type": "array", "minItems": 5, "maxItems": 5, "items": {
            "type": "object", "additionalProperties": False, "required": ["title", "text"],
            "properties": {"title": {"type": "string"}, "text": {"type": "string", "minLength": 1}}}}}}
    body = {"response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}}
    data, problem = parse_answer(scripted.answer_by_schema("Document: cells divide often", body), schema)
    assert problem == "" and len(data["documents"]) == 5 and json.dumps(data)
