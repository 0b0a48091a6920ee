"""An LLM judge behind any OpenAI-compatible chat endpoint (POST {url}/chat/completions).

    judge = OpenAIChatJudge(JudgeSpec.from_file("judge.yaml"))
    judgements = judge.judge(pairs)          # one Judgement per pair, in order; never raises per pair

Each pair is one prompt (the spec's template) sent as a single user message; the answer must
be exactly one label 0-3 (irforge.judge.parsing). An answer that is not one is re-asked as a
follow-up turn (the prompt, the judge's own answer, then REASK): asking the identical prompt again
at temperature 0 would mostly get the identical answer back. What governs the calls:

- retries: irforge.endpoints.calling.RobustCaller, the same one that calls teams' endpoints
  (429/5xx/timeouts retried with capped exponential backoff and jitter, Retry-After honoured, a
  circuit breaker that stops a dead endpoint after `circuit_breaker_failures` failed attempts).
  The openai client's own retries are off (max_retries=0) so there is one retry policy. A fresh
  caller (a closed breaker) per judge() call: a long-running judge service tries a recovered
  endpoint again on the next request instead of staying open forever.
- concurrency: at most `max_concurrency` requests in flight per judge, across concurrent
  judge() calls (a semaphore around the HTTP request; backoff sleeps do not hold it).
- budgets: `request_budget` (every request sent: first tries, retries and re-asks) and
  `token_budget` (prompt + completion tokens as the endpoint reports them) are counted here for
  the judge's lifetime, exactly, under one lock, checked before each request. A pair that finds
  a budget spent is FAILED without a request. Tokens are known only after an answer, so requests
  already in flight when the token budget is reached may pass it by at most `max_concurrency`
  answers.
- unparsed answers (and answers that are not a chat completion at all) are re-asked up to
  `max_unparsed_retries` times; then the pair is UNPARSED with the last raw text. Never 0.
- a refused key or unknown model (HTTP 401/403/404) stops the judge: every later pair is FAILED
  without a request, since each would be refused the same way.

Tokens come from the answer's `usage`; an answer without usable usage counts an estimate
(characters / 4, rounded up) so the token budget still binds, and says so in the log once.
Cost = tokens x the spec's prices per million. The API key never appears in a message, a raw
output or a log line (RobustCaller.redact).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

import openai

from irforge.common.metrics import JUDGE_CALLS, JUDGE_COST_USD, JUDGE_TOKENS
from irforge.endpoints.calling import CallCounters, RobustCaller
from irforge.endpoints.keys import no_key_hint, openai_auth_headers
from irforge.endpoints.errors import EndpointError, RequestBudgetExhausted
from irforge.endpoints.tls import openai_http_client
from irforge.judge.base import Judgement, JudgePair, Progress, Verdict, identity_sha256
from irforge.judge.errors import JudgeError, JudgeSpecError, TokenBudgetExhausted
from irforge.judge.parsing import parse_label
from irforge.judge.spec import JudgeSpec

log = logging.getLogger(__name__)

REASK = "That answer is not one of the labels. Reply with exactly one number: 0, 1, 2 or 3, and nothing else."
REFUSING_STATUSES = (401, 403, 404)   # bad key, no access, unknown model: every request would get the same


@dataclass
class _Tally:
    """What one pair cost."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class _Reply:
    text: str               # the assistant's content, verbatim ("" when there was none)
    problem: str = ""       # set when the answer is not a usable chat completion


class OpenAIChatJudge:
    def __init__(self, spec: JudgeSpec):
        self.spec = spec
        self._key = spec.api_key()
        self._auth = openai_auth_headers(self._key)
        # max_retries=0: retries belong to RobustCaller (budget, breaker, Retry-After in one place).
        self._client = openai.OpenAI(base_url=spec.url, api_key=self._key or "none", max_retries=0,
                                     timeout=spec.timeout_s, http_client=openai_http_client(spec, JudgeSpecError))
        self._identity = spec.identity()
        self.judge_id = identity_sha256(self._identity)
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(spec.max_concurrency)
        self.requests = 0                   # sent in this judge's lifetime (the request budget counts these)
        self.tokens = 0                     # prompt + completion (the token budget counts these)
        self.estimated_usage = 0            # answers whose usage was missing or invalid
        self.counters = CallCounters()      # RobustCaller's figures, summed over judge() calls
        self._refused: str | None = None
        self._warned_usage = False

    # -- the JudgeBackend protocol ----------------------------------------------------------
    def identity(self) -> dict[str, str]:
        return dict(self._identity)

    def judge(self, pairs: Sequence[JudgePair], progress: Progress | None = None) -> list[Judgement]:
        pairs = list(pairs)
        if not pairs:
            return []
        caller = RobustCaller.from_spec(self.spec, secrets=[self._key], request_budget=None)
        done = threading.Lock()

        def judge_one(index: int) -> Judgement:
            judgement = self._judge_pair(caller, pairs[index], f"pair {index + 1}/{len(pairs)}")
            if progress is not None:
                with done:
                    progress(1)
            return judgement

        workers = min(self.spec.max_concurrency, len(pairs))
        try:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm-judge") as pool:
                return list(pool.map(judge_one, range(len(pairs))))
        finally:
            self._add_counters(caller.counters)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIChatJudge:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def describe(self) -> dict:
        """What results record: the spec without secrets, the identity, what was spent."""
        return {**self.spec.public(), "judge_id": self.judge_id, "requests": self.requests, "tokens": self.tokens,
                "estimated_usage": self.estimated_usage, "calls": self.counters.as_dict()}

    # -- one pair ---------------------------------------------------------------------------
    def _judge_pair(self, caller: RobustCaller, pair: JudgePair, position: str) -> Judgement:
        what = f"judge request for {position} (query {pair.query_id}, document {pair.doc_id})"
        first = [{"role": "user", "content": self.spec.prompt.render(pair.query, pair.document)}]
        messages = first
        tally = _Tally()
        answered, reply = False, _Reply("")
        asks = 1 + self.spec.max_unparsed_retries
        for _ in range(asks):
            try:
                self._check_before_sending(what)   # a spent budget costs no attempt in the caller
                reply = caller.call(lambda messages=messages: self._send(messages, tally, what), what=what)
            except (EndpointError, JudgeError, openai.OpenAIError) as error:
                # OpenAIError: what RobustCaller does not classify (e.g. an answer the client cannot
                # validate) still fails only this pair, never the batch.
                reason = caller.redact(str(error) if not isinstance(error, openai.OpenAIError)
                                       else f"{type(error).__name__}: {error}")
                if not answered:
                    return self._judgement(pair, Verdict.FAILED, None, "", tally, error=reason)
                return self._judgement(pair, Verdict.UNPARSED, None, reply.text, tally,
                                       error=f"{reply.problem}; asking again failed: {reason}")
            answered = True
            if not reply.problem:
                parsed = parse_label(reply.text)
                if parsed.ok:
                    return self._judgement(pair, Verdict.LABELLED, parsed.label, reply.text, tally)
                reply = _Reply(reply.text, parsed.problem)
            # Re-ask in context when there was an answer to show; a broken reply is simply asked again.
            messages = first + [{"role": "assistant", "content": reply.text}, {"role": "user", "content": REASK}] \
                if reply.text else first
        return self._judgement(pair, Verdict.UNPARSED, None, reply.text, tally,
                               error=f"not a label after {asks} answer(s); last: {reply.problem}")

    def _check_before_sending(self, what: str) -> None:
        with self._lock:
            self._check_locked(what)

    def _check_locked(self, what: str) -> None:
        spec, where = self.spec, self.spec.source or "the judge spec"
        if self._refused is not None:
            raise EndpointError(f"not sent: {self._refused}")
        if spec.request_budget is not None and self.requests >= spec.request_budget:
            raise RequestBudgetExhausted(
                f"not sent: the request budget of {spec.request_budget} requests is used up before {what}; "
                f"raise `request_budget` in {where} to go on (judgements already made are kept in the store)")
        if spec.token_budget is not None and self.tokens >= spec.token_budget:
            raise TokenBudgetExhausted(
                f"not sent: the token budget of {spec.token_budget} tokens is used up ({self.tokens} spent) "
                f"before {what}; raise `token_budget` in {where} to go on (judgements already made are kept in the store)")

    def _send(self, messages: list[dict], tally: _Tally, what: str) -> _Reply:
        """One request (RobustCaller retries it); transport errors propagate to the caller."""
        with self._lock:   # checked again here: retries inside caller.call spend budget too
            self._check_locked(what)
            self.requests += 1
            tally.calls += 1
        JUDGE_CALLS.labels(backend=self.spec.kind, model=self.spec.model).inc()
        with self._slots:
            try:
                response = self._client.chat.completions.create(
                    model=self.spec.model, messages=messages,
                    temperature=self.spec.temperature, extra_headers=self._auth,
                    **{self.spec.token_limit_field: self.spec.max_tokens})
            except json.JSONDecodeError as error:  # a 200 whose body is not JSON: an answer, not a transport failure
                return _Reply("", f"the answer is not valid JSON ({error})")
            except openai.APIStatusError as error:
                if error.status_code in REFUSING_STATUSES:
                    with self._lock:
                        self._refused = self._refused or (
                            f"endpoint {self.spec.host} ({self.spec.model}) refused a request with HTTP "
                            f"{error.status_code}; check `api_key_env`, `model` and `url` in {self.spec.source or 'the judge spec'}"
                            + (f" ({hint})" if (hint := no_key_hint(self.spec.api_key_env)) else ""))
                raise
        choices = getattr(response, "choices", None)
        text = ""
        if isinstance(choices, list) and choices:
            content = getattr(getattr(choices[0], "message", None), "content", None)
            text = content if isinstance(content, str) else ""
        self._count_usage(response, "".join(m["content"] for m in messages), text, tally)
        if not isinstance(choices, list) or not choices:
            return _Reply("", "the answer has no choices")
        if not text:
            return _Reply("", "the answer has no message content")
        return _Reply(text)

    def _count_usage(self, response, prompt: str, text: str, tally: _Tally) -> None:
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        completion_tokens = getattr(usage, "completion_tokens", None)
        if not (_count(prompt_tokens) and _count(completion_tokens)):
            prompt_tokens, completion_tokens = math.ceil(len(prompt) / 4), max(1, math.ceil(len(text) / 4))
            with self._lock:
                self.estimated_usage += 1
                warn, self._warned_usage = not self._warned_usage, True
            if warn:
                log.warning("endpoint %s (%s) answered without usable token usage (%r); counting an estimate "
                            "(characters / 4) against the token budget and cost", self.spec.host, self.spec.model,
                            usage)
        tally.prompt_tokens += prompt_tokens
        tally.completion_tokens += completion_tokens
        with self._lock:
            self.tokens += prompt_tokens + completion_tokens
        JUDGE_TOKENS.labels(kind="prompt").inc(prompt_tokens)
        JUDGE_TOKENS.labels(kind="completion").inc(completion_tokens)
        JUDGE_COST_USD.inc((prompt_tokens * self.spec.price_per_million_prompt_tokens
                            + completion_tokens * self.spec.price_per_million_completion_tokens) / 1_000_000)

    # -- results ----------------------------------------------------------------------------
    def _judgement(self, pair: JudgePair, verdict: Verdict, label: int | None, raw: str, tally: _Tally,
                   error: str = "") -> Judgement:
        spec = self.spec
        cost = (tally.prompt_tokens * spec.price_per_million_prompt_tokens
                + tally.completion_tokens * spec.price_per_million_completion_tokens) / 1_000_000
        return Judgement(
            query_id=pair.query_id, doc_id=pair.doc_id, verdict=verdict, label=label,
            raw_output=self._redact(raw), backend=spec.kind, model=spec.model,
            template_sha256=spec.prompt.sha256, judge_id=self.judge_id, calls=tally.calls,
            prompt_tokens=tally.prompt_tokens, completion_tokens=tally.completion_tokens, cost_usd=cost,
            error=self._redact(error), created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def _add_counters(self, counters: CallCounters) -> None:
        with self._lock:
            for name in (field.name for field in dataclasses.fields(counters)):
                setattr(self.counters, name, getattr(self.counters, name) + getattr(counters, name))


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
