"""ListwiseLLMReranker against a local OpenAI-compatible chat server with scripted answers: the
RankGPT prompt, the sliding window's arithmetic and final order, strict parsing (PRODUCT.md §7),
the unparseable counter, and the openai client's retries."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from irforge.endpoints.errors import EndpointError
from irforge.models.listwise import ListwiseLLMReranker, parse_ranking, window_bounds

PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def oracle(passages: list[str]) -> str:
    """A perfect ranker: passage "candidate NN" is as relevant as NN is large."""
    order = sorted(range(len(passages)), key=lambda i: -int(passages[i].split()[1]))
    return " > ".join(f"[{i + 1}]" for i in order)


class ChatServer:
    """POST /v1/chat/completions. `script` answers each request: a string (the completion), None
    (content null), or ("status", code, retry_after); when empty, the oracle answers."""

    def __init__(self):
        self.script: list = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                user = body["messages"][-1]["content"]
                passages = [text for _, text in PASSAGE.findall(user)]
                with server.lock:
                    server.requests.append({**body, "passages": passages, "path": self.path})
                    step = server.script.pop(0) if server.script else oracle(passages)
                if isinstance(step, tuple):
                    _, status, retry_after = step
                    return self._send(status, {"error": {"message": "busy", "type": "rate_limit"}},
                                      {"Retry-After": retry_after} if retry_after else {})
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": step}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
                })

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_port}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def chat():
    server = ChatServer()
    yield server
    server.http.shutdown()
    server.http.server_close()


@pytest.fixture()
def server(chat):
    chat.script.clear()
    chat.requests.clear()
    return chat


def candidates(n: int) -> tuple[list[str], list[str]]:
    return [f"c{i:02d}" for i in range(n)], [f"candidate {i:02d}" for i in range(n)]


def shown(request) -> list[int]:
    return [int(text.split()[1]) for text in request["passages"]]


def test_window_bounds():
    assert window_bounds(45, 20, 10) == [(25, 45), (15, 35), (5, 25), (0, 15)]
    assert window_bounds(100, 20, 10) == [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60), (30, 50), (20, 40), (10, 30), (0, 20)]
    assert window_bounds(20, 20, 10) == [(0, 20)] and window_bounds(7, 20, 10) == [(0, 7)]
    assert window_bounds(25, 20, 10) == [(5, 25), (0, 15)] and window_bounds(0, 20, 10) == []


def test_sliding_window_on_45_candidates(server):
    reranker = ListwiseLLMReranker(server.url, "rank-llm", window=20, step=10)
    doc_ids, texts = candidates(45)
    order = reranker.rerank("which candidate has the largest number?", doc_ids, texts)

    # Four windows, bottom first; each sees the list as the previous windows left it.
    assert [shown(r) for r in server.requests] == [
        list(range(25, 45)),
        list(range(15, 25)) + list(range(44, 34, -1)),
        list(range(5, 15)) + list(range(44, 34, -1)),
        list(range(5)) + list(range(44, 34, -1)),
    ]
    # The best 10 climbed to the top in order; the rest are the windows' leftovers, each sorted.
    expected = [*range(44, 34, -1), *range(4, -1, -1), *range(14, 4, -1), *range(24, 14, -1), *range(34, 24, -1)]
    assert order == [f"c{i:02d}" for i in expected]
    assert reranker.counts() == {"windows": 4, "unparseable": 0, "ignored_identifiers": 0, "missing_identifiers": 0,
                                 "prompt_tokens": 400, "completion_tokens": 28, "requests": 4, "retries": 0,
                                 "failures": 0, "rate_limited": 0, "backoff_s": 0.0, "timeouts": 0, "splits": 0}


def test_the_prompt_is_rankgpts(server):
    reranker = ListwiseLLMReranker(server.url, "rank-llm", max_passage_words=300)
    long_text = "candidate 01 " + "\n".join(["word"] * 400)
    reranker.rerank("what is best?", ["a", "b"], ["candidate 00 short", long_text])
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions" and request["model"] == "rank-llm" and request["temperature"] == 0
    system, user = request["messages"]
    assert system["role"] == "system" and "rank passages" in system["content"]
    assert user["role"] == "user"
    assert user["content"].index("what is best?") < user["content"].index("[1] candidate 00 short")
    assert user["content"].rindex("what is best?") > user["content"].index("[2] candidate 01")
    assert "e.g., [2] > [1] > [3]" in user["content"] and "Only respond with the ranking" in user["content"]
    assert request["passages"][1] == "candidate 01 " + " ".join(["word"] * 298)  # 300 words, one line


@pytest.mark.parametrize("answer, order, ignored, missing", [
    ("[3] > [1] > [2] > [5] > [4]", [3, 1, 2, 5, 4], 0, 0),
    ("  [3]>[1] > [ 2 ]  ", [3, 1, 2, 4, 5], 0, 2),           # partial: the rest keep their order
    ("[2] > [2] > [9] > [0] > [1]", [2, 1, 3, 4, 5], 3, 3),   # repeated and unknown ids ignored
])
def test_parseable_answers(server, answer, order, ignored, missing):
    server.script.append(answer)
    reranker = ListwiseLLMReranker(server.url, "rank-llm")
    doc_ids, texts = candidates(5)
    assert reranker.rerank("q", doc_ids, texts) == [f"c{i - 1:02d}" for i in order]
    counts = reranker.counts()
    assert (counts["unparseable"], counts["ignored_identifiers"], counts["missing_identifiers"]) == (0, ignored, missing)


@pytest.mark.parametrize("answer", [
    "I would rank passage 2 first.", "", None, "[2] > [1] because it mentions the query", "1 > 2 > 3", "[2], [1], [3]",
])
def test_unparseable_answers_keep_the_window_and_are_counted(server, answer):
    server.script.append(answer)
    reranker = ListwiseLLMReranker(server.url, "rank-llm")
    doc_ids, texts = candidates(5)
    assert reranker.rerank("q", doc_ids, texts) == doc_ids
    assert reranker.counts()["unparseable"] == 1 and reranker.counts()["windows"] == 1


def test_one_garbage_window_among_several(server):
    server.script.extend([None, "no idea"])  # the first two windows (bottom of the list)
    reranker = ListwiseLLMReranker(server.url, "rank-llm", window=20, step=10)
    doc_ids, texts = candidates(45)
    order = reranker.rerank("q", doc_ids, texts)
    # Windows 1-2 kept their order; window 3 ([5,25)) and 4 ([0,15)) ranked by the oracle.
    assert shown(server.requests[2]) == list(range(5, 25))
    assert order[:10] == [f"c{i:02d}" for i in range(24, 14, -1)]
    assert reranker.counts()["unparseable"] == 2 and reranker.counts()["windows"] == 4


def test_scores_are_reciprocal_ranks_and_queries_run_concurrently(server):
    reranker = ListwiseLLMReranker(server.url, "rank-llm", max_concurrency=3)
    items = [(f"query {n}", [f"candidate {i:02d}" for i in (3, 1, 2)]) for n in range(6)]
    for scores in reranker.score_batch(items):
        np.testing.assert_allclose(scores, [1.0, 1 / 3, 1 / 2])
    assert reranker.counts()["windows"] == 6
    assert reranker.score("q", ["candidate 01"]).tolist() == [1.0]  # nothing to rank: no request
    assert reranker.counts()["requests"] == 6


def test_429_with_retry_after_then_ok(server):
    server.script.append(("status", 429, "1"))
    reranker = ListwiseLLMReranker(server.url, "rank-llm", retries=2)
    doc_ids, texts = candidates(3)
    assert reranker.rerank("q", doc_ids, texts) == ["c02", "c01", "c00"]
    counts = reranker.counts()
    assert (counts["requests"], counts["retries"], counts["rate_limited"], counts["windows"]) == (2, 1, 1, 1)
    assert counts["backoff_s"] >= 1.0  # Retry-After: 1


def test_persistent_errors_raise_naming_the_window(server):
    server.script.extend([("status", 500, None)] * 2)
    reranker = ListwiseLLMReranker(server.url, "rank-llm", retries=1)
    with pytest.raises(EndpointError, match=r"endpoint 127\.0\.0\.1:\d+: gave up on listwise window \[0,3\) of query 'q' "
                                            r"\(model 'rank-llm'\) after 2 attempts; last error: HTTP 500"):
        reranker.rerank("q", *candidates(3))


def test_parameters_and_keys_are_checked(server, monkeypatch):
    with pytest.raises(ValueError, match="0 < step <= window"):
        ListwiseLLMReranker(server.url, "m", window=10, step=20)
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    assert ListwiseLLMReranker(server.url, "m", api_key_env="NO_SUCH_KEY_VAR")._auth is not None  # no key sent
    assert parse_ranking("[1]", 0) == ([], 1, 0)
