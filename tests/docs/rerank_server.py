"""A Cohere/Jina-style rerank API on 127.0.0.1 for the documented `--reranker-endpoint` command:
`POST /v1/rerank` with query, documents, top_n -> results[{index, relevance_score}].

The scores are real: BM25 (bm25s, Lucene variant) over the documents of each request, so the
reranked run differs from the first stage and the command's whole path is exercised. No
cross-encoder is loaded: the docs test must stay cheap, and tests/rerank covers the models.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import bm25s


def bm25_scores(query: str, documents: list[str]) -> list[float]:
    if not documents:
        return []
    retriever = bm25s.BM25(method="lucene")
    retriever.index(bm25s.tokenize(documents, stopwords="en", show_progress=False), show_progress=False)
    terms = [t for t in re.findall(r"(?u)\b\w\w+\b", query.lower()) if t in retriever.vocab_dict]
    if not terms:
        return [0.0] * len(documents)
    return [float(s) for s in retriever.get_scores(terms)]


class RerankServer:
    def __init__(self):
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet test output
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                if self.path != "/v1/rerank":
                    return self._send(404, {"error": f"no route {self.path}"})
                scores = bm25_scores(body["query"], body["documents"])
                order = sorted(range(len(scores)), key=lambda i: -scores[i])[:body.get("top_n") or len(scores)]
                self._send(200, {"results": [{"index": i, "relevance_score": scores[i]} for i in order]})

            def _send(self, status: int, payload: dict):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_port}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()
