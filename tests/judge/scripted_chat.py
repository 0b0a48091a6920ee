"""A local OpenAI-compatible chat server for tests: scripted answers, scripted faults, every request kept.

    server = ScriptedChat().start()            # 127.0.0.1, a free port
    server.url                                 # "http://127.0.0.1:PORT/v1": a judge spec's `url`
    server.script("2", status(429, retry_after=1), "garbage", slow(3, "1"))   # one per request, in order
    server.responder = lambda prompt: "3"      # answers once the script is used up (default: by hash)
    server.structured = lambda prompt, body: ...   # answers requests asking for structured outputs
                                               # (response_format json_schema; default: answer_by_schema)
    server.requests                            # every request: time, body, prompt, Authorization, action
    server.max_in_flight                       # the most requests it was handling at once
    server.stop()

An action is a plain string (the assistant's answer, sent as a 200 with usage) or one of:
    answer(text, prompt_tokens=None, completion_tokens=None)   explicit usage (None: counted from words)
    status(code, retry_after=None, body=None)                  an error status (429, 500, 401...)
    slow(seconds, text)                                        answer after a delay (beyond a timeout)
    drop(seconds=0)                                            wait, then close the connection unanswered
    malformed()                                                200 with a truncated JSON body
    bad_usage(text, usage)                                     200 whose `usage` is `usage` verbatim
    no_choices()                                               200 with an empty `choices` list
    echo_auth()                                                401 whose message echoes the Authorization header

A request with `response_format: {"type": "json_schema", ...}` (irforge generate's stages) is
answered by `structured` once the script is used up: by default `answer_by_schema`, a valid
instance of the request's schema built deterministically from the prompt's words (objects with
their required keys, arrays of minItems or 2 items, strings of prompt words), so every stage of
every recipe gets an answer in its format with no per-stage scripting.

Usage, unless scripted: prompt_tokens = words in all messages, completion_tokens = words in the
answer (at least 1), so tests can compute the expected token and cost figures exactly.

Test code only: listens on 127.0.0.1, never ships. J2/J3 tests outside tests/judge load it the way
tests/endpoints/conftest.py loads fault_proxy.py (importlib.util.spec_from_file_location).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Action:
    kind: str                               # answer, status, slow, drop, malformed, bad_usage, no_choices, echo_auth
    text: str = ""
    code: int = 200
    retry_after: str | None = None
    seconds: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    usage: object = None
    body: str | None = None


def answer(text: str, prompt_tokens: int | None = None, completion_tokens: int | None = None) -> Action:
    return Action("answer", text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def status(code: int, retry_after: float | str | None = None, body: str | None = None) -> Action:
    return Action("status", code=code, retry_after=None if retry_after is None else str(retry_after), body=body)


def slow(seconds: float, text: str) -> Action:
    return Action("slow", text, seconds=seconds)


def drop(seconds: float = 0.0) -> Action:
    return Action("drop", seconds=seconds)


def malformed() -> Action:
    return Action("malformed")


def bad_usage(text: str, usage: object) -> Action:
    return Action("bad_usage", text, usage=usage)


def no_choices() -> Action:
    return Action("no_choices")


def echo_auth() -> Action:
    return Action("echo_auth")


def label_by_hash(prompt: str) -> str:
    """A deterministic 'judge': the same prompt always gets the same label 0-3."""
    return str(int(hashlib.sha256(prompt.encode("utf-8")).hexdigest(), 16) % 4)


def answer_by_schema(prompt: str, body: dict) -> str:
    """A JSON instance of the request's json_schema, the same for the same prompt and schema."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    seed = hashlib.sha256((prompt + json.dumps(schema, sort_keys=True)).encode("utf-8")).hexdigest()
    pool = [w.strip(".,;:!?()[]{}\"'") for w in prompt.split()]
    pool = [w for w in pool if w.isalpha() and len(w) > 2] or ["text"]
    counter = iter(range(1_000_000))

    def text(size: int) -> str:
        start = int(seed[:8], 16) + next(counter) * 7919
        return " ".join(pool[(start + i * 31) % len(pool)] for i in range(size))

    def instance(node: dict, key: str = ""):
        kind = node.get("type")
        if "enum" in node:
            return node["enum"][0]
        if kind == "object":
            return {name: instance(sub, name) for name, sub in (node.get("properties") or {}).items()}
        if kind == "array":
            count = node.get("minItems", 2)
            count = min(count, node.get("maxItems", count))
            return [instance(node.get("items") or {"type": "string"}, key) for _ in range(count)]
        if kind == "integer":
            return node.get("minimum", 1)
        if kind == "boolean":
            return True
        return text(40 if key in ("text", "documents") else 6)

    return json.dumps(instance(schema))


def wants_structured(body: dict) -> bool:
    return ((body.get("response_format") or {}).get("type")) == "json_schema"


def words(text: str) -> int:
    return len(text.split())


@dataclass
class Request:
    at: float                   # time.monotonic() on arrival
    path: str
    body: dict
    authorization: str | None
    action: Action
    prompt: str = ""            # the first user message: the judging prompt
    conversation: str = ""      # every message's content (a re-ask is a follow-up turn)

    @property
    def model(self) -> str:
        return self.body.get("model", "")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False      # a handler sleeping in slow/drop must not hold up stop()


@dataclass
class ScriptedChat:
    responder: Callable[[str], str | Action] = label_by_hash
    structured: Callable[[str, dict], str | Action] = answer_by_schema
    requests: list[Request] = field(default_factory=list)
    max_in_flight: int = 0
    hold_s: float = 0.0         # every answer waits this long (to measure concurrency)

    def __post_init__(self):
        self._script: list[str | Action] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self._server: _Server | None = None

    @property
    def port(self) -> int:
        return self._server.server_port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *actions: str | Action) -> None:
        """Answers for the next requests, in arrival order; then `responder` takes over."""
        with self._lock:
            self._script = list(actions)

    def reset(self) -> None:
        with self._lock:
            self._script, self.requests, self.max_in_flight = [], [], 0
            self.responder, self.hold_s, self.structured = label_by_hash, 0.0, answer_by_schema

    @property
    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def start(self) -> ScriptedChat:
        chat = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                chat._handle(self, raw)

        self._server = _Server(("127.0.0.1", 0), Handler)
        # A short poll interval: stop() waits for it, once per test.
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
                         name="scripted-chat").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # -- handling ---------------------------------------------------------------------------
    def _next_action(self, prompt: str, body: dict) -> Action:
        with self._lock:
            scripted = self._script.pop(0) if self._script else None
        if scripted is not None:
            action = scripted
        else:
            action = self.structured(prompt, body) if wants_structured(body) else self.responder(prompt)
        return answer(action) if isinstance(action, str) else action

    def _handle(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode(errors="replace")}
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        # The judging prompt is the first user message (a re-ask adds the answer and a follow-up);
        # usage counts the words of every message, as a real endpoint counts the whole conversation.
        prompt = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
        conversation = " ".join(str(m.get("content") or "") for m in messages)
        action = self._next_action(prompt, body)
        with self._lock:
            self.requests.append(Request(time.monotonic(), handler.path, body, handler.headers.get("Authorization"),
                                         action, prompt, conversation))
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self.hold_s:
                time.sleep(self.hold_s)
            self._respond(handler, action, conversation, body.get("model", ""))
        finally:
            with self._lock:
                self._in_flight -= 1

    def _respond(self, handler: BaseHTTPRequestHandler, action: Action, conversation: str, model: str) -> None:
        if action.kind == "status":
            message = action.body or json.dumps({"error": {"message": f"scripted HTTP {action.code}",
                                                           "type": "scripted", "code": None}})
            headers = {"Retry-After": action.retry_after} if action.retry_after is not None else {}
            return _send(handler, action.code, message.encode(), headers)
        if action.kind == "echo_auth":
            message = {"error": {"message": f"invalid key in {handler.headers.get('Authorization')}", "type": "auth"}}
            return _send(handler, 401, json.dumps(message).encode())
        if action.kind == "drop":
            time.sleep(action.seconds)
            handler.close_connection = True
            return None
        if action.kind == "malformed":
            return _send(handler, 200, b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "mess')
        if action.kind == "slow":
            time.sleep(action.seconds)
        usage = {"prompt_tokens": action.prompt_tokens if action.prompt_tokens is not None else words(conversation),
                 "completion_tokens": (action.completion_tokens if action.completion_tokens is not None
                                       else max(1, words(action.text)))}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if action.kind == "bad_usage":
            usage = action.usage
        choices = [] if action.kind == "no_choices" else [
            {"index": 0, "message": {"role": "assistant", "content": action.text}, "finish_reason": "stop"}]
        completion = {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
                      "model": model, "choices": choices}
        if usage is not None:
            completion["usage"] = usage
        try:
            _send(handler, 200, json.dumps(completion).encode())
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before a slow answer came: what a real server sees too


def _send(handler: BaseHTTPRequestHandler, code: int, body: bytes, headers: dict | None = None) -> None:
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)
