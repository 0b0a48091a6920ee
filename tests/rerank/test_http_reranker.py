"""HttpReranker (rerank-http endpoints) against a local Cohere/Jina-style rerank server backed by
the real CrossEncoder: scores equal in-process ones, and every faulty answer is refused or
retried as it should be."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from irforge.endpoints.errors import (
    EndpointAnswerError,
    EndpointError,
    RequestBudgetExhausted,
)
from irforge.endpoints.rerank import HttpReranker
from irforge.endpoints.spec import EndpointSpec

QUERY = "vitamin D deficiency and bone density"


class RerankServer:
    """POST /v1/rerank scored by a reranker core; `faults` are consumed one per request."""

    def __init__(self, core):
        self.core = core
        self.faults: list[str] = []
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                fault = server.faults.pop(0) if server.faults else None
                if self.path != "/v1/rerank":
                    return self._send(404, {"error": "not found"})
                if fault == "500":
                    return self._send(500, {"error": "overloaded"})
                if fault == "429":
                    return self._send(429, {"error": "slow down"}, {"Retry-After": "1"})
                if fault == "400":
                    return self._send(400, {"error": "documents too long"})
                scores = server.core.score(body["query"], body["documents"])
                results = [{"index": i, "relevance_score": float(scores[i])}
                           for i in sorted(range(len(scores)), key=lambda i: -scores[i])][:body["top_n"]]
                if fault == "out-of-range":
                    results[0]["index"] = len(scores) + 5
                elif fault == "duplicate":
                    results[1]["index"] = results[0]["index"]
                elif fault == "nan":
                    results[0]["relevance_score"] = float("nan")
                elif fault == "string-score":
                    results[0]["relevance_score"] = "0.9"
                elif fault == "short":
                    results = results[:-2]
                elif fault == "not-json":
                    return self._send(200, None, raw=b"<html>oops</html>")
                self._send(200, {"results": results, "meta": {"billed_units": {"search_units": 1}}})

            def _send(self, status, payload, headers=None, raw=None):
                data = raw if raw is not None else json.dumps(payload).encode()  # NaN stays NaN, as some servers send
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

    def close(self):
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture(scope="module")
def server(core):
    running = RerankServer(core)
    yield running
    running.close()


@pytest.fixture()
def fresh(server):
    server.faults.clear()
    server.requests.clear()
    return server


def spec(server, **fields) -> EndpointSpec:
    return EndpointSpec(**{"kind": "rerank-http", "url": server.url, "model": "team-ce", "backoff_initial_s": 0.01, **fields})


def test_scores_equal_in_process_and_the_request_is_cohere_style(core, fresh, scifact_texts, monkeypatch):
    monkeypatch.setenv("TEAM_RERANK_KEY", "secret-123")
    reranker = HttpReranker(spec(fresh, api_key_env="TEAM_RERANK_KEY", batch_size=8, max_concurrency=2))
    items = [(QUERY, scifact_texts[:20]), ("scurvy", scifact_texts[20:23]), ("nothing", [])]
    for (query, documents), scores in zip(items, reranker.score_batch(items)):
        # split over requests of a few documents: other padding, last-bit differences only
        np.testing.assert_allclose(scores, core.score(query, documents), atol=1e-6, rtol=0)
    assert len(fresh.requests) == 4 and reranker.counts()["requests"] == 4  # 8 + 8 + 4, 3
    assert reranker.counts()["retries"] == 0
    first = next(r for r in fresh.requests if r["documents"] == scifact_texts[:8])
    assert first["path"] == "/v1/rerank" and first["model"] == "team-ce" and first["query"] == QUERY
    assert first["top_n"] == 8 and first["auth"] == "Bearer secret-123"
    assert "secret-123" not in json.dumps(reranker.describe())


@pytest.mark.parametrize("fault, message", [
    ("out-of-range", r"index 8, outside 0\.\.2"),
    ("duplicate", "appears more than once"),
    ("nan", "relevance_score nan, not a finite number"),
    ("string-score", "relevance_score '0.9', not a finite number"),
    ("short", "2 of 3 documents not scored"),
    ("not-json", "the answer is not JSON"),
    ("400", "HTTP 400"),
])
def test_faulty_answers_raise_naming_the_request(fresh, scifact_texts, fault, message):
    fresh.faults.append(fault)
    reranker = HttpReranker(spec(fresh))
    with pytest.raises(EndpointError, match=message) as caught:
        reranker.score("q-42 text", scifact_texts[:3])
    assert isinstance(caught.value, EndpointAnswerError) == (fault != "400")
    assert "rerank request 1/1 (query 'q-42 text', documents 0..2 of 3)" in str(caught.value)
    assert f"127.0.0.1:{fresh.http.server_port}" in str(caught.value)
    assert reranker.counts()["retries"] == 0  # a wrong answer is not retried


def test_500_then_success_is_retried(core, fresh, scifact_texts):
    fresh.faults.extend(["500", "500"])
    reranker = HttpReranker(spec(fresh))
    scores = reranker.score(QUERY, scifact_texts[:4])
    np.testing.assert_array_equal(scores, core.score(QUERY, scifact_texts[:4]).astype(np.float64))
    assert reranker.counts()["requests"] == 3 and reranker.counts()["retries"] == 2 and len(fresh.requests) == 3


def test_429_waits_for_retry_after(core, fresh, scifact_texts):
    fresh.faults.append("429")
    reranker = HttpReranker(spec(fresh))
    started = time.monotonic()
    scores = reranker.score(QUERY, scifact_texts[:4])
    assert time.monotonic() - started >= 0.95  # Retry-After: 1, not our 10 ms backoff
    np.testing.assert_array_equal(scores, core.score(QUERY, scifact_texts[:4]).astype(np.float64))
    assert reranker.counts()["retries"] == 1 and reranker.counts()["rate_limited"] == 1


def test_retries_run_out_and_budgets_hold(fresh, scifact_texts):
    fresh.faults.extend(["500"] * 3)
    with pytest.raises(EndpointError, match="after 3 attempts; last error: HTTP 500"):
        HttpReranker(spec(fresh, max_retries=2)).score(QUERY, scifact_texts[:2])
    budgeted = HttpReranker(spec(fresh, request_budget=2, batch_size=2))
    with pytest.raises(RequestBudgetExhausted, match="budget of 2"):
        budgeted.score(QUERY, scifact_texts[:6])  # three requests needed


def test_nothing_listening_is_an_endpoint_error(unused_port):
    reranker = HttpReranker(EndpointSpec(kind="rerank-http", url=f"http://127.0.0.1:{unused_port}/v1", max_retries=1,
                                         backoff_initial_s=0.01))
    with pytest.raises(EndpointError, match="after 2 attempts; last error: ConnectError"):
        reranker.score(QUERY, ["a"])
