"""One OpenAI-compatible chat endpoint, as every irforge LLM path calls it (the judge, generation).

    chat = ChatEndpoint(spec, budget_note="judgements already made are kept in the store")
    caller = chat.caller()                       # a RobustCaller with the spec's retry settings
    reply = chat.ask(caller, messages, tally, what="judge request for pair 3/10",
                     max_tokens=512, response_format={...})

What it owns, for the endpoint's lifetime, under one lock: the openai client (its own retries
off: RobustCaller is the one retry policy), a concurrency slot per request in flight
(`max_concurrency`), the request and token budgets (checked before every request, retries
included), a stop once the endpoint refuses a key or model (401/403/404: every later request
would be refused the same way), token usage (the answer's `usage`, or characters / 4 when it has
none, or a count that is not a whole number from 0 to MAX_USAGE_TOKENS, said once in the log) and
its cost at the spec's prices.

A reply is the assistant's text, or a `problem` when the 200 is not a usable chat completion
(no choices, no content, a body that is not JSON): an answer to re-ask, not a transport failure.
The key never appears in a message, a raw output or a log line.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

import openai

from irforge.common.api_keys import no_key_hint, openai_auth_headers
from irforge.common.call_errors import EndpointError, RequestBudgetExhausted
from irforge.common.calling import CallCounters, RobustCaller
from irforge.common.endpoint_tls import openai_http_client
from irforge.llm.errors import ChatErrors

log = logging.getLogger(__name__)

MAX_USAGE_TOKENS = 10**9             # per answer; beyond any model's context, so a broken count
REFUSING_STATUSES = (401, 403, 404)   # bad key, no access, unknown model: every request would get the same


@dataclass
class Tally:
    """What one unit of work (a pair, a generation step) cost."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    text: str               # the assistant's content, verbatim ("" when there was none)
    problem: str = ""       # set when the answer is not a usable chat completion


class ChatEndpoint:
    def __init__(self, spec, *, budget_note: str = "what was already done is kept",
                 on_request: Callable[[], None] | None = None,
                 on_usage: Callable[[int, int, float], None] | None = None,
                 errors: ChatErrors = ChatErrors()):
        self.spec = spec
        self.errors = errors                # the types raised for a bad spec and a spent token budget
        self.budget_note = budget_note      # how a budget message tells the user nothing is lost
        self._on_request = on_request       # metrics hooks (the judge's Prometheus counters)
        self._on_usage = on_usage
        self.key = spec.api_key()
        self._auth = openai_auth_headers(self.key)
        self._client = openai.OpenAI(base_url=spec.url, api_key=self.key or "none", max_retries=0,
                                     timeout=spec.timeout_s, http_client=openai_http_client(spec, errors.spec_error))
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(spec.max_concurrency)
        self.requests = 0                   # sent in this endpoint's lifetime (the request budget counts these)
        self.tokens = 0                     # prompt + completion (the token budget counts these)
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.estimated_usage = 0            # answers whose usage was missing or invalid
        self.counters = CallCounters()      # RobustCaller's figures, summed over callers
        self._refused: str | None = None
        self._warned_usage = False

    def caller(self) -> RobustCaller:
        """A fresh RobustCaller (a closed breaker); budgets are counted here, not in it."""
        return RobustCaller.from_spec(self.spec, secrets=[self.key], request_budget=None)

    def close(self) -> None:
        self._client.close()

    @property
    def cost_usd(self) -> float:
        return self.cost_of(self.prompt_tokens, self.completion_tokens)

    def cost_of(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.spec.price_per_million_prompt_tokens
                + completion_tokens * self.spec.price_per_million_completion_tokens) / 1_000_000

    def redact(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key else text

    def add_counters(self, counters: CallCounters) -> None:
        with self._lock:
            for name in (field.name for field in dataclasses.fields(counters)):
                setattr(self.counters, name, getattr(self.counters, name) + getattr(counters, name))

    # -- budgets ------------------------------------------------------------------------------
    def check(self, what: str) -> None:
        """Raise (RequestBudgetExhausted, errors.token_budget, EndpointError) if nothing may be sent."""
        with self._lock:
            self._check_locked(what)

    def _check_locked(self, what: str) -> None:
        spec, where = self.spec, self.spec.source or "the spec"
        if self._refused is not None:
            raise EndpointError(f"not sent: {self._refused}")
        if spec.request_budget is not None and self.requests >= spec.request_budget:
            raise RequestBudgetExhausted(
                f"not sent: the request budget of {spec.request_budget} requests is used up before {what}; "
                f"raise `request_budget` in {where} to go on ({self.budget_note})")
        if spec.token_budget is not None and self.tokens >= spec.token_budget:
            raise self.errors.token_budget(
                f"not sent: the token budget of {spec.token_budget} tokens is used up ({self.tokens} spent) "
                f"before {what}; raise `token_budget` in {where} to go on ({self.budget_note})")

    # -- one request --------------------------------------------------------------------------
    def ask(self, caller: RobustCaller, messages: list[dict], tally: Tally, *, what: str,
            max_tokens: int | None = None, response_format: dict | None = None) -> Reply:
        """One answer, with the caller's retries; raises EndpointError (and budget errors) and
        openai errors RobustCaller does not classify."""
        self.check(what)   # a spent budget costs no attempt in the caller
        return caller.call(lambda: self._send(messages, tally, what, max_tokens, response_format), what=what)

    def _send(self, messages: list[dict], tally: Tally, what: str, max_tokens: int | None,
              response_format: dict | None) -> Reply:
        with self._lock:   # checked again here: retries inside caller.call spend budget too
            self._check_locked(what)
            self.requests += 1
            tally.calls += 1
        if self._on_request is not None:
            self._on_request()
        extra = {"response_format": response_format} if response_format is not None else {}
        with self._slots:
            try:
                response = self._client.chat.completions.create(
                    model=self.spec.model, messages=messages, temperature=self.spec.temperature,
                    extra_headers=self._auth, **{self.spec.token_limit_field: max_tokens or self.spec.max_tokens},
                    **extra)
            except json.JSONDecodeError as error:  # a 200 whose body is not JSON: an answer, not a transport failure
                return Reply("", f"the answer is not valid JSON ({error})")
            except openai.APIStatusError as error:
                if error.status_code in REFUSING_STATUSES:
                    with self._lock:
                        self._refused = self._refused or (
                            f"endpoint {self.spec.host} ({self.spec.model}) refused a request with HTTP "
                            f"{error.status_code}; check `api_key_env`, `model` and `url` in {self.spec.source or 'the spec'}"
                            + (f" ({hint})" if (hint := no_key_hint(self.spec.api_key_env)) else ""))
                raise
        choices = getattr(response, "choices", None)
        text = ""
        if isinstance(choices, list) and choices:
            content = getattr(getattr(choices[0], "message", None), "content", None)
            text = content if isinstance(content, str) else ""
        self._count_usage(response, "".join(m["content"] for m in messages), text, tally)
        if not isinstance(choices, list) or not choices:
            return Reply("", "the answer has no choices")
        if not text:
            return Reply("", "the answer has no message content")
        return Reply(text)

    def _count_usage(self, response, prompt: str, text: str, tally: Tally) -> None:
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
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
        if self._on_usage is not None:
            self._on_usage(prompt_tokens, completion_tokens, self.cost_of(prompt_tokens, completion_tokens))


def _count(value) -> bool:
    """A usable token count: a whole number from 0 to MAX_USAGE_TOKENS (more is no real answer's
    usage: 10**30 once overflowed the judgement store and lost a batch of paid answers)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_USAGE_TOKENS
