"""An LLM judge behind any OpenAI-compatible chat endpoint (POST {url}/chat/completions).

    judge = OpenAIChatJudge(JudgeSpec.from_file("judge.yaml"))
    judgements = judge.judge(pairs)          # one Judgement per pair, in order; never raises per pair

Each pair is one request: a system message saying the judged texts are data, never instructions,
then the spec's template as the user message with the query and the passage quoted in it
(irforge.judge.template); the answer must be exactly one label 0-3 (irforge.judge.parsing). An answer that is not one is re-asked as a
follow-up turn (the prompt, the judge's own answer, then REASK): asking the identical prompt again
at temperature 0 would mostly get the identical answer back. What governs the calls:

- retries: irforge.common.calling.RobustCaller, the same one that calls teams' endpoints
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

Sending, budgets, the refusal stop and token accounting are irforge.llm.chat.ChatEndpoint's, the
one chat caller the judge and generation share: tokens come from the answer's `usage` (an
estimate, characters / 4, when it has none, said once in the log); cost = tokens x the spec's
prices per million. The API key never appears in a message, a raw output or a log line.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import openai

from irforge.common.call_errors import EndpointError
from irforge.common.calling import RobustCaller
from irforge.common.metrics import JUDGE_CALLS, JUDGE_COST_USD, JUDGE_TOKENS
from irforge.judge.base import Judgement, JudgePair, Progress, Verdict, identity_sha256
from irforge.judge.errors import CHAT_ERRORS, JudgeError
from irforge.judge.parsing import parse_label
from irforge.judge.spec import JudgeSpec
from irforge.llm.chat import REFUSING_STATUSES, ChatEndpoint, Reply, Tally  # noqa: F401 - REFUSING_STATUSES re-exported

REASK = "That answer is not one of the labels. Reply with exactly one number: 0, 1, 2 or 3, and nothing else."


class OpenAIChatJudge:
    def __init__(self, spec: JudgeSpec):
        self.spec = spec
        self.chat = ChatEndpoint(spec, budget_note="judgements already made are kept in the store",
                                 on_request=JUDGE_CALLS.labels(backend=spec.kind, model=spec.model).inc,
                                 on_usage=_record_usage, errors=CHAT_ERRORS)
        self._identity = spec.identity()
        self.judge_id = identity_sha256(self._identity)

    # What was spent in this judge's lifetime (the budgets count these).
    @property
    def requests(self) -> int:
        return self.chat.requests

    @property
    def tokens(self) -> int:
        return self.chat.tokens

    @property
    def estimated_usage(self) -> int:
        return self.chat.estimated_usage

    @property
    def counters(self):
        return self.chat.counters

    # -- the JudgeBackend protocol ----------------------------------------------------------
    def identity(self) -> dict[str, str]:
        return dict(self._identity)

    def judge(self, pairs: Sequence[JudgePair], progress: Progress | None = None) -> list[Judgement]:
        pairs = list(pairs)
        if not pairs:
            return []
        caller = self.chat.caller()
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
            self.chat.add_counters(caller.counters)

    def close(self) -> None:
        self.chat.close()

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
        first = self.spec.prompt.messages(pair.query, pair.document)
        messages = first
        tally = Tally()
        answered, reply = False, Reply("")
        asks = 1 + self.spec.max_unparsed_retries
        for _ in range(asks):
            try:
                reply = self.chat.ask(caller, messages, tally, what=what)
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
                reply = Reply(reply.text, parsed.problem)
            # Re-ask in context when there was an answer to show; a broken reply is simply asked again.
            messages = first + [{"role": "assistant", "content": reply.text}, {"role": "user", "content": REASK}] \
                if reply.text else first
        return self._judgement(pair, Verdict.UNPARSED, None, reply.text, tally,
                               error=f"not a label after {asks} answer(s); last: {reply.problem}")

    # -- results ----------------------------------------------------------------------------
    def _judgement(self, pair: JudgePair, verdict: Verdict, label: int | None, raw: str, tally: Tally,
                   error: str = "") -> Judgement:
        spec = self.spec
        return Judgement(
            query_id=pair.query_id, doc_id=pair.doc_id, verdict=verdict, label=label,
            raw_output=self.chat.redact(raw), backend=spec.kind, model=spec.model,
            template_sha256=spec.prompt.sha256, judge_id=self.judge_id, calls=tally.calls,
            prompt_tokens=tally.prompt_tokens, completion_tokens=tally.completion_tokens,
            cost_usd=self.chat.cost_of(tally.prompt_tokens, tally.completion_tokens),
            error=self.chat.redact(error), created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )


def _record_usage(prompt_tokens: int, completion_tokens: int, cost_usd: float) -> None:
    JUDGE_TOKENS.labels(kind="prompt").inc(prompt_tokens)
    JUDGE_TOKENS.labels(kind="completion").inc(completion_tokens)
    JUDGE_COST_USD.inc(cost_usd)
