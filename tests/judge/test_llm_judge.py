"""The LLM judge against a scripted OpenAI-compatible server on loopback (tests/judge/scripted_chat.py):
labels, strict parsing with re-asks, retries (429 + Retry-After, 5xx, timeouts, dropped connections),
request and token budgets, token and cost accounting, the concurrency bound, a dead endpoint, a
refused key, and the key never leaking. Every test counts the requests the server received."""

from __future__ import annotations

import logging
import sys
import time

import pytest

from irforge.judge.backends.llm import REASK, OpenAIChatJudge
from irforge.judge.base import JudgePair, Verdict, identity_sha256
from irforge.judge.errors import JudgeSpecError
from irforge.judge.spec import JudgeSpec
from irforge.judge.template import DEFAULT_TEMPLATE, SYSTEM_MESSAGE, quoted

# tests/judge/scripted_chat.py, loaded by this folder's conftest.py (no package imports under importlib mode).
scripted = sys.modules["irforge_judge_tests_scripted_chat"]


@pytest.fixture()
def make_judge(llm_spec_data):
    judges = []

    def make(**overrides) -> OpenAIChatJudge:
        judge = OpenAIChatJudge(JudgeSpec.from_dict(llm_spec_data(**overrides), source="test judge spec"))
        judges.append(judge)
        return judge

    yield make
    for judge in judges:
        judge.close()


def pairs_of(scifact_pairs, n):
    return scifact_pairs[:n]


def test_labels_come_from_the_answers_with_the_right_request(make_judge, scripted_chat, scifact_pairs, fake_key):
    pairs = pairs_of(scifact_pairs, 3)
    scripted_chat.script("0", "3", " 2.\n")
    judge = make_judge(max_concurrency=1)
    judgements = judge.judge(pairs)

    assert [j.label for j in judgements] == [0, 3, 2]
    assert [j.raw_output for j in judgements] == ["0", "3", " 2.\n"]
    assert all(j.verdict is Verdict.LABELLED and j.calls == 1 and not j.error for j in judgements)
    assert [(j.query_id, j.doc_id) for j in judgements] == [(p.query_id, p.doc_id) for p in pairs]
    requests = scripted_chat.chat_requests
    assert len(requests) == 3
    first = requests[0]
    assert first.body["model"] == "scripted-judge" and first.body["temperature"] == 0 and first.body["max_tokens"] == 5
    assert first.body["messages"] == [{"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": (
        DEFAULT_TEMPLATE.format(query=quoted(pairs[0].query, "query"), document=quoted(pairs[0].document, "passage")))}]
    assert first.authorization == f"Bearer {fake_key}"
    identity = judge.identity()
    assert all(j.judge_id == identity_sha256(identity) and j.template_sha256 == identity["template_sha256"]
               and j.backend == "openai-chat" and j.model == "scripted-judge" and j.created_at for j in judgements)


def test_unparsed_answers_are_asked_again_then_recorded_unparsed_never_zero(make_judge, scripted_chat, scifact_pairs):
    pair = pairs_of(scifact_pairs, 1)
    scripted_chat.script("relevant", "2 or 3", "23")
    [judgement] = make_judge(max_unparsed_retries=2).judge(pair)
    assert judgement.verdict is Verdict.UNPARSED and judgement.label is None
    assert judgement.raw_output == "23" and judgement.calls == 3 and len(scripted_chat.chat_requests) == 3
    assert "not a label after 3 answer(s)" in judgement.error and "23 is not a label" in judgement.error
    # Re-asked in context: the prompt, the judge's own answer, the follow-up.
    first, second, third = scripted_chat.chat_requests
    assert second.body["messages"] == [*first.body["messages"], {"role": "assistant", "content": "relevant"},
                                       {"role": "user", "content": REASK}]
    assert third.body["messages"][2] == {"role": "assistant", "content": "2 or 3"}
    # Tokens of every answer count, unparsed ones included.
    assert judgement.prompt_tokens == sum(scripted.words(r.conversation) for r in (first, second, third))
    assert judgement.completion_tokens == 1 + 3 + 1   # words of "relevant", "2 or 3", "23"


def test_an_unparsed_answer_that_parses_when_asked_again_is_a_label(make_judge, scripted_chat, scifact_pairs):
    scripted_chat.script("Relevance: high", "**1**")
    [judgement] = make_judge().judge(pairs_of(scifact_pairs, 1))
    assert (judgement.verdict, judgement.label, judgement.calls) == (Verdict.LABELLED, 1, 2)


def test_no_re_ask_when_max_unparsed_retries_is_zero(make_judge, scripted_chat, scifact_pairs):
    scripted_chat.script("maybe")
    [judgement] = make_judge(max_unparsed_retries=0).judge(pairs_of(scifact_pairs, 1))
    assert judgement.verdict is Verdict.UNPARSED and judgement.calls == 1 and len(scripted_chat.chat_requests) == 1


@pytest.mark.parametrize("bad_answer", [scripted.malformed(), scripted.no_choices(), scripted.answer("")])
def test_answers_that_are_no_chat_completion_are_asked_again(make_judge, scripted_chat, scifact_pairs, bad_answer):
    scripted_chat.script(bad_answer, bad_answer, bad_answer)
    [judgement] = make_judge(max_unparsed_retries=2).judge(pairs_of(scifact_pairs, 1))
    assert judgement.verdict is Verdict.UNPARSED and judgement.label is None and judgement.calls == 3
    assert any(why in judgement.error for why in ("not valid JSON", "no choices", "no message content"))
    scripted_chat.script(bad_answer, "2")
    [judgement] = make_judge().judge(pairs_of(scifact_pairs, 1))
    assert (judgement.verdict, judgement.label, judgement.calls) == (Verdict.LABELLED, 2, 2)


def test_429_waits_for_retry_after(make_judge, scripted_chat, scifact_pairs):
    scripted_chat.script(scripted.status(429, retry_after=1), "2")
    judge = make_judge(backoff_initial_s=0.01)
    [judgement] = judge.judge(pairs_of(scifact_pairs, 1))
    first, second = scripted_chat.chat_requests
    gap = second.at - first.at
    # Retry-After 1 s plus at most min(backoff_initial_s, 1) of jitter; without the header the
    # backoff would be at most 0.01 s.
    assert 1.0 <= gap < 1.5, gap
    assert (judgement.label, judgement.calls) == (2, 2)
    assert judge.counters.rate_limited == 1 and judge.counters.retries == 1


def test_5xx_dropped_connections_and_timeouts_are_retried(make_judge, scripted_chat, scifact_pairs):
    scripted_chat.script(scripted.status(500), scripted.status(503), scripted.drop(), scripted.slow(1.5, "0"), "1")
    start = time.monotonic()
    [judgement] = make_judge(max_retries=4, timeout_s=0.5).judge(pairs_of(scifact_pairs, 1))
    # The slow "0" came after the client's 0.5 s timeout: the label is the retried answer's.
    assert (judgement.verdict, judgement.label, judgement.calls) == (Verdict.LABELLED, 1, 5)
    assert len(scripted_chat.chat_requests) == 5 and time.monotonic() - start < 5


def test_retries_give_up_as_failed_not_as_a_label(make_judge, scripted_chat, scifact_pairs):
    scripted_chat.responder = lambda prompt: scripted.status(502)
    [judgement] = make_judge(max_retries=2, circuit_breaker_failures=100).judge(pairs_of(scifact_pairs, 1))
    assert judgement.verdict is Verdict.FAILED and judgement.label is None and judgement.raw_output == ""
    assert judgement.calls == 3 and len(scripted_chat.chat_requests) == 3
    assert "gave up" in judgement.error and "HTTP 502" in judgement.error


def test_a_quota_sized_retry_after_fails_the_pair_at_once(make_judge, scripted_chat, scifact_pairs):
    scripted_chat.script(scripted.status(429, retry_after=3600))
    start = time.monotonic()
    [judgement] = make_judge(max_unparsed_retries=0).judge(pairs_of(scifact_pairs, 1))
    assert judgement.verdict is Verdict.FAILED and "3600" in judgement.error and time.monotonic() - start < 2


def test_request_budget_fails_the_rest_without_calls(make_judge, scripted_chat, scifact_pairs):
    pairs = pairs_of(scifact_pairs, 5)
    scripted_chat.script(scripted.status(500), "1", "2", "3")   # the retry spends budget too
    judgements = make_judge(request_budget=3, max_concurrency=1).judge(pairs)
    assert len(scripted_chat.chat_requests) == 3
    assert [j.verdict for j in judgements] == [Verdict.LABELLED] * 2 + [Verdict.FAILED] * 3
    assert [j.calls for j in judgements] == [2, 1, 0, 0, 0]
    assert all("request budget of 3 requests is used up" in j.error and "test judge spec" in j.error
               for j in judgements[2:])


def test_token_budget_fails_the_rest_without_calls(make_judge, scripted_chat, scifact_pairs):
    pairs = pairs_of(scifact_pairs, 5)
    scripted_chat.responder = lambda prompt: scripted.answer("2", prompt_tokens=100, completion_tokens=1)
    judge = make_judge(token_budget=250, max_concurrency=1)
    judgements = judge.judge(pairs)
    # 101 tokens per answer: after 3 answers (303) the budget of 250 is spent.
    assert len(scripted_chat.chat_requests) == 3 and judge.tokens == 303
    assert [j.verdict for j in judgements] == [Verdict.LABELLED] * 3 + [Verdict.FAILED] * 2
    assert all(j.calls == 0 and "token budget of 250 tokens is used up (303 spent)" in j.error for j in judgements[3:])
    # The budget is the judge's, across judge() calls.
    again = judge.judge(pairs[:1])
    assert again[0].verdict is Verdict.FAILED and len(scripted_chat.chat_requests) == 3


def test_the_token_limit_is_sent_as_the_field_the_spec_names(make_judge, scripted_chat, scifact_pairs):
    """OpenAI's reasoning models refuse max_tokens and take max_completion_tokens."""
    scripted_chat.script(scripted.answer("2"))
    judgement, = make_judge(token_limit_field="max_completion_tokens", max_tokens=2000).judge(pairs_of(scifact_pairs, 1))
    assert judgement.label == 2
    body = scripted_chat.chat_requests[0].body
    assert body["max_completion_tokens"] == 2000 and "max_tokens" not in body
    with pytest.raises(JudgeSpecError, match="token_limit_field"):
        make_judge(token_limit_field="max_output_tokens")


def test_tokens_and_cost_are_accounted_from_usage(make_judge, scripted_chat, scifact_pairs):
    pairs = pairs_of(scifact_pairs, 2)
    scripted_chat.script(scripted.answer("x", prompt_tokens=1000, completion_tokens=7),
                         scripted.answer("2", prompt_tokens=1200, completion_tokens=3),
                         scripted.answer("3", prompt_tokens=900, completion_tokens=2))
    from prometheus_client import REGISTRY

    def exported(name, **labels):
        return REGISTRY.get_sample_value(name, labels) or 0.0

    before = (exported("irforge_judge_tokens_total", kind="prompt"), exported("irforge_judge_cost_usd_total"))
    judge = make_judge(max_concurrency=1, price_per_million_prompt_tokens=0.5, price_per_million_completion_tokens=2.0)
    calls_before = exported("irforge_judge_calls_total", backend="openai-chat", model=judge.spec.model)
    judgements = judge.judge(pairs)
    first, second = judgements
    # The Prometheus counters (what ops watch) agree with the per-judgement accounting.
    assert exported("irforge_judge_calls_total", backend="openai-chat", model=judge.spec.model) - calls_before == 3
    assert exported("irforge_judge_tokens_total", kind="prompt") - before[0] == 3100
    assert exported("irforge_judge_cost_usd_total") - before[1] == pytest.approx((3100 * 0.5 + 12 * 2.0) / 1e6)
    assert (first.prompt_tokens, first.completion_tokens, first.calls, first.label) == (2200, 10, 2, 2)
    assert first.cost_usd == pytest.approx((2200 * 0.5 + 10 * 2.0) / 1e6)
    assert (second.prompt_tokens, second.completion_tokens) == (900, 2)
    assert second.cost_usd == pytest.approx((900 * 0.5 + 2 * 2.0) / 1e6)


@pytest.mark.parametrize("usage", [None, {"prompt_tokens": "many"}, {"prompt_tokens": -5, "completion_tokens": 1},
                                   {"prompt_tokens": 3.5, "completion_tokens": 1}])
def test_unusable_usage_counts_an_estimate_against_the_budget(make_judge, scripted_chat, scifact_pairs, usage, caplog):
    scripted_chat.responder = lambda prompt: scripted.bad_usage("1", usage)
    judge = make_judge(max_concurrency=1, token_budget=1, price_per_million_prompt_tokens=1.0)
    with caplog.at_level(logging.WARNING):
        judgements = judge.judge(pairs_of(scifact_pairs, 3))
    prompt = "".join(m["content"] for m in scripted_chat.chat_requests[0].body["messages"])
    assert judgements[0].prompt_tokens == -(-len(prompt) // 4) and judgements[0].completion_tokens == 1
    assert judgements[0].cost_usd == pytest.approx(judgements[0].prompt_tokens / 1e6)
    assert [j.verdict for j in judgements] == [Verdict.LABELLED, Verdict.FAILED, Verdict.FAILED]
    assert judge.estimated_usage == 1 and "without usable token usage" in caplog.text


def test_concurrency_is_bounded_and_used(make_judge, scripted_chat, scifact_pairs):
    scripted_chat.hold_s = 0.2
    pairs = pairs_of(scifact_pairs, 12)
    start = time.monotonic()
    judgements = make_judge(max_concurrency=3).judge(pairs)
    elapsed = time.monotonic() - start
    assert scripted_chat.max_in_flight == 3
    assert all(j.is_label for j in judgements) and len(scripted_chat.chat_requests) == 12
    assert elapsed < 12 * 0.2 * 0.75, elapsed   # parallel, not one at a time


def test_progress_counts_every_pair(make_judge, scifact_pairs):
    seen = []
    make_judge(max_concurrency=2).judge(pairs_of(scifact_pairs, 5), progress=seen.append)
    assert sum(seen) == 5


def test_a_judge_that_never_answers_fails_every_pair_quickly(make_judge, unused_port, scifact_pairs):
    pairs = pairs_of(scifact_pairs, 10)
    start = time.monotonic()
    judgements = make_judge(url=f"http://127.0.0.1:{unused_port}/v1", max_retries=5,
                            circuit_breaker_failures=3).judge(pairs)
    assert all(j.verdict is Verdict.FAILED and j.label is None and j.raw_output == "" for j in judgements)
    assert any("looks down" in j.error for j in judgements)
    assert time.monotonic() - start < 10


def test_the_circuit_breaker_stops_requests_to_a_failing_endpoint(make_judge, scripted_chat, scifact_pairs):
    scripted_chat.responder = lambda prompt: scripted.status(500)
    judge = make_judge(max_retries=5, circuit_breaker_failures=3, max_concurrency=2)
    judgements = judge.judge(pairs_of(scifact_pairs, 10))
    assert all(j.verdict is Verdict.FAILED for j in judgements)
    # 3 failures open the breaker; a request already in flight may still land.
    assert 3 <= len(scripted_chat.chat_requests) <= 4
    assert sum(j.calls for j in judgements) == len(scripted_chat.chat_requests)
    # The next judge() call tries again (a recovered endpoint is used): one fresh breaker per call.
    scripted_chat.responder = scripted.label_by_hash
    assert all(j.is_label for j in judge.judge(pairs_of(scifact_pairs, 2)))


def test_a_refused_key_stops_the_judge_and_never_leaks(make_judge, scripted_chat, scifact_pairs, fake_key, caplog):
    scripted_chat.responder = lambda prompt: scripted.echo_auth()
    with caplog.at_level(logging.DEBUG):
        judgements = make_judge(max_concurrency=1).judge(pairs_of(scifact_pairs, 4))
    assert len(scripted_chat.chat_requests) == 1   # the rest would be refused the same way
    assert all(j.verdict is Verdict.FAILED for j in judgements)
    assert "HTTP 401" in judgements[0].error and "***" in judgements[0].error
    assert all("api_key_env" in j.error for j in judgements[1:])
    text = " ".join(j.error + j.raw_output for j in judgements) + caplog.text
    assert fake_key not in text and scripted_chat.chat_requests[0].authorization == f"Bearer {fake_key}"


def test_a_key_echoed_in_an_answer_is_redacted(make_judge, scripted_chat, scifact_pairs, fake_key):
    scripted_chat.script(f"my key is {fake_key}", f"still {fake_key}", f"{fake_key}")
    [judgement] = make_judge().judge(pairs_of(scifact_pairs, 1))
    assert judgement.verdict is Verdict.UNPARSED
    assert fake_key not in judgement.raw_output + judgement.error and "***" in judgement.raw_output


def test_an_unset_key_variable_sends_no_key_as_endpoints_do(make_judge, scripted_chat, scifact_pairs, monkeypatch,
                                                            caplog):
    from irforge.common import api_keys as keys

    monkeypatch.delenv("IRFORGE_TEST_JUDGE_KEY")
    monkeypatch.setattr(keys, "_told", set())
    with caplog.at_level(logging.WARNING, logger="irforge.endpoints"):
        judgements = make_judge(max_concurrency=1).judge(pairs_of(scifact_pairs, 2))
        make_judge()
    assert all(j.is_label for j in judgements)
    assert [r.authorization for r in scripted_chat.chat_requests] == [None, None]  # no header at all
    assert [r.getMessage() for r in caplog.records if "IRFORGE_TEST_JUDGE_KEY" in r.getMessage()] == [
        "test judge spec: environment variable IRFORGE_TEST_JUDGE_KEY (`api_key_env`) is not set: "
        "sending requests without a key"]


def test_an_empty_batch_sends_nothing(make_judge, scripted_chat):
    assert make_judge().judge([]) == [] and scripted_chat.requests == []


def test_the_identity_ignores_the_host_but_not_the_prompt(llm_spec_data, scripted_chat):
    one = JudgeSpec.from_dict(llm_spec_data())
    moved = JudgeSpec.from_dict(llm_spec_data(url="http://127.0.0.1:1/v1"))
    other_prompt = JudgeSpec.from_dict(llm_spec_data(template="Q {query} D {document} 0-3?"))
    assert one.identity() == moved.identity() != other_prompt.identity()
    assert JudgePair("q", "x", "d", "y")  # the contract type is importable alongside


def test_the_bound_holds_across_concurrent_judge_calls(make_judge, scripted_chat, scifact_pairs, fake_key):
    import threading

    scripted_chat.hold_s = 0.15
    judge = make_judge(max_concurrency=2)
    results = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, judge.judge(scifact_pairs[4 * n:4 * n + 4])))
               for n in range(3)]   # three gRPC requests at once, say
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert scripted_chat.max_in_flight == 2 and len(scripted_chat.chat_requests) == 12
    assert all(j.is_label for n in range(3) for j in results[n])
    description = judge.describe()
    assert description["requests"] == 12 and description["calls"]["requests"] == 12
    assert fake_key not in str(description) and description["api_key_env"] == "IRFORGE_TEST_JUDGE_KEY"
