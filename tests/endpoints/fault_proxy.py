"""A small HTTP proxy for tests: forwards to a real server and injects scripted faults.

    proxy = FaultProxy("http://127.0.0.1:8000").start()
    proxy.script("429:1", "500", "ok", "nan")    # one fault per POST, in order; then forward
    proxy.default = "500"                        # what every POST gets once the script is used up
    ... point the client at proxy.url ...
    proxy.posts                                  # every POST seen: time, path, JSON body, fault
    proxy.stop()

Faults (a POST consumes one):
    ok                  forward unchanged
    <status>[:<s>]      answer that HTTP status, with Retry-After: <s> when given (e.g. 429:1, 503)
    timeout:<s>         wait <s> seconds, then drop the connection without answering
    malformed           200 with a truncated JSON body
    wrong-dimension     forward, then cut the first embedding short by one value
    fewer               forward, then drop the last embedding
    nan                 forward, then put NaN in the first embedding
    duplicate-index     forward, then give the last embedding the first one's index
    echo-auth           401 whose message echoes the Authorization header it received

The proxy listens on 127.0.0.1 only. It is test code: irforge never ships it.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Post:
    at: float             # time.monotonic() when the request arrived
    path: str
    body: dict
    fault: str
    authorization: str | None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a handler sleeping in a `timeout` fault must not hold up stop()


class FaultProxy:
    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")
        self.default = "ok"
        self.posts: list[Post] = []
        self._script: list[str] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                proxy._forward(self, "GET", None)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy._lock:
                    fault = proxy._script.pop(0) if proxy._script else proxy.default
                    try:
                        body = json.loads(raw or b"{}")
                    except ValueError:
                        body = {"_raw": raw.decode(errors="replace")}
                    proxy.posts.append(Post(time.monotonic(), self.path, body, fault, self.headers.get("Authorization")))
                proxy._post(self, raw, fault)

        self._server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True, name="fault-proxy").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def script(self, *faults: str) -> None:
        with self._lock:
            self._script = list(faults)

    def reset(self) -> None:
        with self._lock:
            self._script, self.posts, self.default = [], [], "ok"

    # -- handling ---------------------------------------------------------------------------
    def _post(self, handler: BaseHTTPRequestHandler, raw: bytes, fault: str) -> None:
        name, _, argument = fault.partition(":")
        if name.isdigit():
            message = {"error": {"message": f"injected HTTP {name}", "type": "injected", "code": None}}
            headers = {"Retry-After": argument} if argument else {}
            return self._answer(handler, int(name), json.dumps(message).encode(), headers)
        if name == "timeout":
            time.sleep(float(argument or 5))
            handler.close_connection = True
            return None
        if name == "malformed":
            return self._answer(handler, 200, b'{"object": "list", "data": [{"index": 0, "embedd')
        if name == "echo-auth":
            message = {"error": {"message": f"invalid key in {handler.headers.get('Authorization')}", "type": "auth"}}
            return self._answer(handler, 401, json.dumps(message).encode())
        status, body = self._upstream("POST", handler.path, raw, handler.headers.get("Content-Type"))
        if name != "ok" and status == 200:
            body = self._tamper(name, body)
        return self._answer(handler, status, body)

    @staticmethod
    def _tamper(name: str, body: bytes) -> bytes:
        answer = json.loads(body)
        data = answer["data"]
        if name == "wrong-dimension":
            data[0]["embedding"] = data[0]["embedding"][:-1]
        elif name == "fewer":
            data.pop()
        elif name == "nan":
            data[0]["embedding"][0] = float("nan")
        elif name == "duplicate-index":
            data[-1]["index"] = data[0]["index"]
        else:
            raise ValueError(f"unknown fault {name!r}")
        return json.dumps(answer).encode()  # json writes NaN as the bare literal, as a buggy server would

    def _forward(self, handler: BaseHTTPRequestHandler, method: str, raw: bytes | None) -> None:
        status, body = self._upstream(method, handler.path, raw, handler.headers.get("Content-Type"))
        self._answer(handler, status, body)

    def _upstream(self, method: str, path: str, raw: bytes | None, content_type: str | None) -> tuple[int, bytes]:
        request = urllib.request.Request(self.upstream + path, data=raw, method=method,
                                         headers={"Content-Type": content_type or "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    @staticmethod
    def _answer(handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict | None = None) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)
