"""The generation engine: every LLM call of every recipe goes through Engine.run(stage, asks).

    engine = Engine(spec, GenerationCache(path), max_cost=5.0, max_requests=2000, progress=tqdm_progress)
    outcomes = engine.run(stage, [Ask("q-12", {"document": text, "count": 3})])   # in input order
    outcomes[0].status, outcomes[0].data      # "ok" and the validated JSON object, or None

A stage declares its answer as a JSON Schema, sent as OpenAI structured outputs
(`response_format: {"type": "json_schema", "json_schema": {name, schema, strict: true}}`). The
answer is validated against the schema whether or not the server honoured it: an answer that is
not valid is re-asked once as a follow-up turn naming the problem, then recorded as `unparsed`
with its raw text. A malformed answer never becomes data.

The calls themselves are irforge.llm.chat.ChatEndpoint's (the judge's caller: concurrency,
retries with Retry-After, the breaker, budgets, token and cost accounting). Before a call the
cache (cache.py) is asked; an answered call is stored at once, so a killed run resumes without
paying twice. A stop (`--max-cost`, `--max-requests`, the spec's budgets, an endpoint that looks
down) is clean: the asks not yet sent come back `not_sent` and the recipes keep what is complete.
`--max-requests` is exact (it lowers the spec's request budget, which counts retries and re-asks);
`--max-cost` is checked before each request, and requests already in flight may pass it by at
most `max_concurrency` answers (tokens are known only after an answer).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import jsonschema
import openai

from irforge.common.call_errors import EndpointError, EndpointUnavailable, RequestBudgetExhausted
from irforge.common.progress import ProgressFactory, no_progress
from irforge.generation.cache import GenerationCache, call_key
from irforge.generation.templates import PromptTemplate
from irforge.judge.errors import CHAT_ERRORS, JudgeError, TokenBudgetExhausted
from irforge.llm.chat import ChatEndpoint, Tally

REASK = ("That answer is not valid: {problem}. Reply again with only one JSON object that matches the "
         "requested schema, and nothing else.")
STATUSES = ("ok", "unparsed", "failed", "not_sent")


@dataclass(frozen=True)
class Stage:
    name: str                   # also the json_schema name sent to the server
    template: PromptTemplate
    schema: dict
    max_tokens: int             # the answer's bound (and the cost estimate's, docs/generation.md)
    system: str = ""            # the system message sent before the prompt (templates.system_message)

    def response_format(self, schema: dict | None = None) -> dict:
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": schema or self.schema, "strict": True}}


@dataclass(frozen=True)
class Ask:
    subject: str                # what the answer is for (a query id, a document id): provenance joins on it
    inputs: dict                # the template's placeholders
    schema: dict | None = None  # this ask's answer schema when it differs from the stage's (an exact item count)


@dataclass
class Outcome:
    status: str                 # ok | unparsed | failed | not_sent
    data: dict | None
    record: dict                # the provenance line


@dataclass
class StageCounts:
    asked: int = 0
    from_cache: int = 0
    ok: int = 0
    unparsed: int = 0
    failed: int = 0
    not_sent: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "cost_usd": round(self.cost_usd, 6)}


def parse_answer(text: str, schema: dict) -> tuple[dict | None, str]:
    """The answer as a JSON object valid against `schema`, or (None, what is wrong). A fenced
    ```json block is read as its content: many models fence even when asked not to."""
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, flags=re.DOTALL)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except ValueError as error:
        return None, f"not JSON ({error})"
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the answer"
        return None, f"{where}: {error.message}"
    return data, ""


class Engine:
    def __init__(self, spec, cache: GenerationCache, *, max_cost: float | None = None,
                 max_requests: int | None = None, progress: ProgressFactory = no_progress):
        if max_requests is not None:
            budget = spec.request_budget
            spec = dataclasses.replace(spec, request_budget=max_requests if budget is None else min(budget, max_requests))
        self.spec = spec
        self.max_cost = max_cost
        self.max_requests = max_requests
        self.cache = cache
        self.progress = progress
        self.chat = ChatEndpoint(spec, budget_note="every answer so far is kept in the generation cache",
                                 errors=CHAT_ERRORS)
        self.counts: dict[str, StageCounts] = {}
        self.templates: dict[str, dict] = {}   # stage -> the template's hash and source, for the manifest
        self.records: list[dict] = []
        self.stopped: str | None = None     # why no more requests are sent
        self._lock = threading.Lock()

    def close(self) -> None:
        self.chat.close()

    def describe(self) -> dict:
        return {"model": self.spec.model, "endpoint": self.spec.public(), "requests": self.chat.requests,
                "prompt_tokens": self.chat.prompt_tokens, "completion_tokens": self.chat.completion_tokens,
                "cost_usd": round(self.chat.cost_usd, 6), "estimated_usage": self.chat.estimated_usage,
                "calls": self.chat.counters.as_dict(), "max_cost": self.max_cost, "max_requests": self.max_requests,
                "stopped": self.stopped}

    # -- a stage over many asks -----------------------------------------------------------------
    def run(self, stage: Stage, asks: list[Ask]) -> list[Outcome]:
        counts = self.counts.setdefault(stage.name, StageCounts())
        self.templates[stage.name] = {"sha256": stage.template.sha256, "source": stage.template.source,
                                      "max_tokens": stage.max_tokens,
                                      **({"system_sha256": _sha256(stage.system)} if stage.system else {})}
        if not asks:
            return []
        bar = self.progress(f"generating: {stage.name}", len(asks), "call")
        caller = self.chat.caller()

        def one(ask: Ask) -> Outcome:
            outcome = self._one(caller, stage, ask)
            with self._lock:
                bar.update(1)
            return outcome

        try:
            with ThreadPoolExecutor(max_workers=min(self.spec.max_concurrency, len(asks)),
                                    thread_name_prefix=f"generate-{stage.name}") as pool:
                outcomes = list(pool.map(one, asks))
        finally:
            bar.close()
            self.chat.add_counters(caller.counters)
        with self._lock:
            for outcome in outcomes:
                counts.asked += 1
                setattr(counts, outcome.status, getattr(counts, outcome.status) + 1)
                counts.from_cache += outcome.record["from_cache"]
                if not outcome.record["from_cache"]:
                    counts.requests += outcome.record["calls"]
                    counts.prompt_tokens += outcome.record["prompt_tokens"]
                    counts.completion_tokens += outcome.record["completion_tokens"]
                    counts.cost_usd += outcome.record["cost_usd"]
                self.records.append(outcome.record)
        return outcomes

    # -- one ask --------------------------------------------------------------------------------
    def _one(self, caller, stage: Stage, ask: Ask) -> Outcome:
        prompt = stage.template.render(**ask.inputs)
        schema = ask.schema or stage.schema
        key = call_key({"template_sha256": stage.template.sha256, "model": self.spec.model,
                        "temperature": float(self.spec.temperature), "max_tokens": stage.max_tokens,
                        "schema": schema, "prompt": prompt, **({"system": stage.system} if stage.system else {})})
        base = {"stage": stage.name, "subject": ask.subject, "template": stage.template.name,
                "template_sha256": stage.template.sha256, "model": self.spec.model, "cache_key": key}
        cached = self.cache.get(key)
        if cached is not None:
            return Outcome(cached["status"], cached["data"], {**base, **cached, "from_cache": True})
        tally, raws = Tally(), []
        record = lambda status, data=None, error="": {  # noqa: E731 - one shape for every exit
            **base, "status": status, "data": data, "raw": raws, "error": self.chat.redact(error), "from_cache": False,
            "calls": tally.calls, "prompt_tokens": tally.prompt_tokens, "completion_tokens": tally.completion_tokens,
            "cost_usd": self.chat.cost_of(tally.prompt_tokens, tally.completion_tokens)}
        asked = ([{"role": "system", "content": stage.system}] if stage.system else []) + [{"role": "user", "content": prompt}]
        messages = asked
        problem = ""
        for _ in range(2):   # the answer, and one re-ask
            if self._should_stop():
                return Outcome("not_sent" if not raws else "unparsed", None, record("not_sent" if not raws else "unparsed",
                                                                                    error=self.stopped))
            what = f"{stage.name} request for {ask.subject}"
            try:
                reply = self.chat.ask(caller, messages, tally, what=what, max_tokens=stage.max_tokens,
                                      response_format=stage.response_format(schema))
            except (RequestBudgetExhausted, TokenBudgetExhausted) as error:
                self._stop(self._budget_reason(error))
                status = "not_sent" if not raws else "unparsed"
                return Outcome(status, None, record(status, error=self.stopped))
            except EndpointUnavailable as error:
                self._stop(str(error))
                return Outcome("failed", None, record("failed", error=str(error)))
            except (EndpointError, JudgeError, openai.OpenAIError) as error:
                return Outcome("failed", None, record("failed", error=caller.redact(str(error))))
            raws.append(self.chat.redact(reply.text))
            data, problem = parse_answer(reply.text, schema) if not reply.problem else (None, reply.problem)
            if data is not None:
                done = record("ok", data)
                self.cache.put(key, stage.name, self.spec.model, stage.template.sha256, _cached(done))
                return Outcome("ok", data, done)
            messages = asked + ([{"role": "assistant", "content": reply.text}] if reply.text else []) + \
                [{"role": "user", "content": REASK.format(problem=problem)}]
        done = record("unparsed", error=f"not valid after 2 answers; last: {problem}")
        self.cache.put(key, stage.name, self.spec.model, stage.template.sha256, _cached(done))
        return Outcome("unparsed", None, done)

    def _should_stop(self) -> bool:
        if self.stopped is None and self.max_cost is not None and self.chat.cost_usd >= self.max_cost:
            self._stop(f"--max-cost {self.max_cost:g} USD reached (${self.chat.cost_usd:.4f} spent)")
        return self.stopped is not None

    def _budget_reason(self, error: Exception) -> str:
        if isinstance(error, RequestBudgetExhausted) and self.max_requests is not None \
                and self.chat.requests >= self.max_requests:
            return f"--max-requests {self.max_requests} reached"
        return str(error)

    def _stop(self, reason: str) -> None:
        with self._lock:
            self.stopped = self.stopped or reason


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _cached(record: dict) -> dict:
    """What the cache keeps of a record (the rest is the asker's: subject, key, from_cache)."""
    return {name: record[name] for name in ("status", "data", "raw", "error", "calls", "prompt_tokens",
                                            "completion_tokens", "cost_usd")}
