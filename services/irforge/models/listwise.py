"""Listwise LLM reranking, RankGPT style (PRODUCT.md §7), through any OpenAI-compatible chat
completions endpoint (`url` is the client's base_url, version included: http://127.0.0.1:8000/v1).

- Prompt: a system message casting the model as a passage ranker; one user message with the
  query, the passages numbered [1]..[n] (each cut to `max_passage_words` words, whitespace
  collapsed, as RankGPT does), the query again, and a request for identifiers only, most relevant
  first, `[2] > [1] > [3]`. Temperature 0.
- Sliding window: `window` passages at a time, moving `step` up from the bottom of the list to the
  top; each window is reordered in place before the next one is sent, so good passages climb.
  Bounds: end = n, n - step, ...; start = max(0, end - window); the last window starts at 0. For
  n = window + m*step that is RankGPT's sequence (100, 20, 10: [80,100) ... [0,20)); for other n
  RankGPT's loop stops before reaching the top, this one always ends with a window at 0
  (45, 20, 10: [25,45) [15,35) [5,25) [0,15)).
- Parsing is strict: the answer must be identifiers and `>` only (whitespace allowed). Repeated or
  unknown identifiers are ignored; missing ones keep their relative order after the ones given.
  Any other answer (prose, empty, refused) is unparseable: the window keeps its first-stage order
  and `unparseable` is counted, so a run says how often the LLM was not actually ranking.
- Each window is one chat completion through the official openai client, its own retries off:
  irforge.common.calling.RobustCaller retries (429 with Retry-After, 5xx, timeouts: `retries`
  times), holds the circuit breaker and redacts the key, as for every endpoint. A window that
  still fails raises EndpointError naming the endpoint, the query and the window.
- counts(): windows sent, unparseable windows, identifiers ignored / filled in, prompt and
  completion tokens when the endpoint reports usage, and the caller's requests (attempts),
  retries, failures, rate_limited, backoff_s.

`rerank(query, doc_ids, texts)` gives the new order; `score`/`score_batch` give 1/rank scores so
the listwise reranker has the cross-encoder's surface (RerankingRetriever takes either).
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
import numpy as np

from irforge.common.api_keys import key_from_environment, no_key_hint, openai_auth_headers
from irforge.common.calling import RobustCaller
from irforge.common.redact import host_of, redact_url

SYSTEM_PROMPT = ("You are RankGPT, an intelligent assistant that can rank passages based on their relevancy "
                 "to the query.")
_ANSWER = re.compile(r"\s*\[\s*\d+\s*\](?:\s*>\s*\[\s*\d+\s*\])*\s*")
_IDENTIFIER = re.compile(r"\[\s*(\d+)\s*\]")


def build_messages(query: str, passages: list[str]) -> list[dict]:
    n = len(passages)
    numbered = "\n".join(f"[{i}] {passage}" for i, passage in enumerate(passages, 1))
    user = (f"I will provide you with {n} passages, each indicated by a numerical identifier []. "
            f"Rank the passages based on their relevance to the search query: {query}\n\n"
            f"{numbered}\n\n"
            f"Search Query: {query}\n"
            f"Rank the {n} passages above based on their relevance to the search query. List them in "
            f"descending order of relevance using their identifiers, the most relevant first. The output "
            f"format should be [] > [], e.g., [2] > [1] > [3]. Only respond with the ranking; do not explain.")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_ranking(answer: str | None, n: int) -> tuple[list[int], int, int] | None:
    """(0-based order of the n passages, identifiers ignored, identifiers missing), or None when
    the answer is not identifiers-only."""
    if answer is None or not _ANSWER.fullmatch(answer):
        return None
    given: list[int] = []
    ignored = 0
    for match in _IDENTIFIER.finditer(answer):
        position = int(match.group(1)) - 1
        if 0 <= position < n and position not in given:
            given.append(position)
        else:
            ignored += 1  # unknown or repeated
    missing = [position for position in range(n) if position not in given]
    return given + missing, ignored, len(missing)


def window_bounds(n: int, window: int, step: int) -> list[tuple[int, int]]:
    """[start, end) of each window, in the order they are sent (bottom of the list first)."""
    bounds: list[tuple[int, int]] = []
    end = n
    while end > 0:
        start = max(0, end - window)
        bounds.append((start, end))
        if start == 0:
            break
        end -= step
    return bounds


class ListwiseLLMReranker:
    def __init__(self, url: str, model: str, api_key_env: str | None = None, window: int = 20, step: int = 10,
                 max_concurrency: int = 4, timeout: float = 120.0, retries: int = 5, max_passage_words: int = 300,
                 *, caller: RobustCaller | None = None):
        import openai

        if not 0 < step <= window or window < 2:
            raise ValueError(f"listwise reranking needs window >= 2 and 0 < step <= window, got {window}, {step}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        api_key = key_from_environment(api_key_env, "--listwise-api-key-env")
        self._auth = openai_auth_headers(api_key)
        self.url, self.model = url, model
        self.window, self.step = window, step
        self.max_concurrency = max_concurrency
        self.max_passage_words = max_passage_words
        self.host = host_of(url)
        self._lock = threading.Lock()
        self._counts = {"windows": 0, "unparseable": 0, "ignored_identifiers": 0, "missing_identifiers": 0,
                        "prompt_tokens": 0, "completion_tokens": 0}
        self.caller = caller or RobustCaller(self.host, max_retries=retries, secrets=[api_key], timeout_s=timeout,
                                             refusal_hint=no_key_hint(api_key_env))
        # max_retries=0: retries belong to RobustCaller (budget, breaker, Retry-After in one place).
        self._client = openai.OpenAI(base_url=url, api_key=api_key or "none", max_retries=0, timeout=timeout)  # placeholder; not sent

    @property
    def identity(self) -> dict:
        return {"kind": "listwise-llm", "prompt": "rankgpt", "endpoint": self.host, "model": self.model,
                "window": self.window, "step": self.step, "max_passage_words": self.max_passage_words,
                "temperature": 0}

    def describe(self) -> dict:
        return {**self.identity, "url": redact_url(self.url), "max_concurrency": self.max_concurrency}

    def counts(self) -> dict:
        with self._lock:
            return {**self._counts, **self.caller.counters.as_dict()}

    def rerank(self, query: str, doc_ids: list[str], texts: list[str]) -> list[str]:
        """doc_ids in their new order (most relevant first); texts[i] is doc_ids[i]'s text."""
        if len(doc_ids) != len(texts):
            raise ValueError(f"{len(doc_ids)} doc ids but {len(texts)} texts")
        passages = [" ".join(text.split()[:self.max_passage_words]) for text in texts]
        order = list(range(len(passages)))
        for start, end in window_bounds(len(order), self.window, self.step):
            segment = order[start:end]
            if len(segment) > 1:
                order[start:end] = [segment[j] for j in self._rank_window(query, [passages[i] for i in segment], start, end)]
        return [doc_ids[i] for i in order]

    def score(self, query: str, documents: list[str]) -> np.ndarray:
        """1/rank of each document in the listwise order (1.0 for the first)."""
        order = self.rerank(query, list(range(len(documents))), list(documents))
        scores = np.zeros(len(documents))
        scores[order] = 1.0 / np.arange(1, len(order) + 1)
        return scores

    def score_batch(self, items: list[tuple[str, list[str]]]) -> list[np.ndarray]:
        """Queries are independent, windows of one query are not: queries run max_concurrency at once."""
        with ThreadPoolExecutor(self.max_concurrency) as pool:
            return list(pool.map(lambda item: self.score(*item), items))

    def _rank_window(self, query: str, passages: list[str], start: int, end: int) -> list[int]:
        messages = build_messages(query, passages)
        completion = self.caller.call(
            lambda: self._client.chat.completions.create(model=self.model, messages=messages, temperature=0,
                                                         extra_headers=self._auth),
            what=f"listwise window [{start},{end}) of query {query[:80]!r} (model {self.model!r})")
        choices = getattr(completion, "choices", None) or []
        answer = choices[0].message.content if choices and choices[0].message else None
        parsed = parse_ranking(answer, len(passages))
        usage = getattr(completion, "usage", None)
        with self._lock:
            counts = self._counts
            counts["windows"] += 1
            if usage is not None:
                counts["prompt_tokens"] += usage.prompt_tokens or 0
                counts["completion_tokens"] += usage.completion_tokens or 0
            if parsed is None:
                counts["unparseable"] += 1
            else:
                counts["ignored_identifiers"] += parsed[1]
                counts["missing_identifiers"] += parsed[2]
        return list(range(len(passages))) if parsed is None else parsed[0]
