"""Judge specs: a small YAML file naming an LLM behind an OpenAI-compatible chat endpoint.

    kind: openai-chat                 # required (the only kind so far)
    url: http://127.0.0.1:8000/v1     # the OpenAI-compatible base URL (required)
    model: gpt-4o-mini                # required
    api_key_env: JUDGE_API_KEY        # optional, the variable's NAME (unset: no key is sent); the key never appears in files, logs or results
    template: prompts/judge.txt       # optional: inline text with {query} and {document}, or a file
                                      # (relative to this spec's folder); default: the AIR-Bench 0-3 prompt
    max_concurrency: 4                # requests in flight
    max_retries: 5                    # per request, on 429 / 5xx / timeouts (Retry-After honoured)
    timeout_s: 60
    backoff_initial_s: 0.5
    backoff_max_s: 30
    circuit_breaker_failures: 5       # consecutive failed attempts that stop a judge() call
    request_budget: 10000             # at most this many requests (retries and re-asks included)
    token_budget: 5000000             # at most this many prompt + completion tokens
    max_unparsed_retries: 2           # re-ask an answer that is not a label 0-3 this many times
    temperature: 0
    max_tokens: 5                     # the answer is one number
    price_per_million_prompt_tokens: 0.15        # USD, for cost accounting (default 0)
    price_per_million_completion_tokens: 0.60
    ca_bundle: certs/llm-ca.pem       # https: trust this CA (relative to this spec's folder); default: system CAs
    client_cert: certs/irforge.pem    # mutual TLS: the certificate presented, with client_key
    client_key: certs/irforge.key

Field names follow irforge.endpoints.spec.EndpointSpec where they mean the same thing, so the
RobustCaller that calls endpoints governs the judge's retries too.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from irforge.common.allowed_roots import checked
from irforge.common.api_keys import key_from_environment
from irforge.common.files import read_yaml
from irforge.common.redact import host_of, redact_url
from irforge.common.tls import spec_file
from irforge.judge.errors import JudgeSpecError
from irforge.judge.template import Template, load_template

KINDS = ("openai-chat",)
REQUIRED = ("kind", "url", "model")
_INTS = ("max_concurrency", "max_retries", "circuit_breaker_failures", "request_budget", "token_budget",
         "max_unparsed_retries", "max_tokens")
_NUMBERS = ("timeout_s", "backoff_initial_s", "backoff_max_s", "temperature",
            "price_per_million_prompt_tokens", "price_per_million_completion_tokens")
_TEXTS = ("kind", "url", "model", "api_key_env", "template", "token_limit_field", "ca_bundle", "client_cert", "client_key")
# OpenAI's reasoning models refuse `max_tokens` and take `max_completion_tokens`; most
# OpenAI-compatible servers (vLLM, TGI, llama.cpp) take `max_tokens`.
TOKEN_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")


@dataclass(frozen=True)
class JudgeSpec:
    kind: str
    url: str
    model: str
    api_key_env: str | None = None
    template: str | None = None             # as written in the spec: inline text, a path, or None
    max_concurrency: int = 4
    max_retries: int = 5
    timeout_s: float = 60.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    circuit_breaker_failures: int = 5
    request_budget: int | None = None
    token_budget: int | None = None
    max_unparsed_retries: int = 2
    temperature: float = 0.0
    max_tokens: int = 5
    token_limit_field: str = "max_tokens"   # the request field max_tokens is sent as (TOKEN_LIMIT_FIELDS)
    price_per_million_prompt_tokens: float = 0.0
    price_per_million_completion_tokens: float = 0.0
    ca_bundle: str | None = None            # https: PEM CA(s) the server's certificate must chain to
    client_cert: str | None = None          # mutual TLS, with client_key
    client_key: str | None = None
    source: str = ""                        # the file it came from, for messages
    prompt: Template = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        where = self.source or "judge spec"
        for name in _TEXTS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise JudgeSpecError(f"{where}: `{name}` must be text, got {type(value).__name__} {value!r}")
        for name in _INTS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise JudgeSpecError(f"{where}: `{name}` must be a whole number, got {value!r}")
        for name in _NUMBERS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise JudgeSpecError(f"{where}: `{name}` must be a number, got {value!r}")
        if self.kind not in KINDS:
            raise JudgeSpecError(f"{where}: `kind` {self.kind!r} is not one of {', '.join(KINDS)}")
        if urlsplit(self.url).scheme not in ("http", "https") or not urlsplit(self.url).netloc:
            raise JudgeSpecError(f"{where}: `url` must be an http:// or https:// base URL (e.g. http://127.0.0.1:8000/v1), "
                                 f"got {redact_url(self.url)!r}")
        if not self.model.strip():
            raise JudgeSpecError(f"{where}: `model` is empty")
        if self.token_limit_field not in TOKEN_LIMIT_FIELDS:
            raise JudgeSpecError(f"{where}: `token_limit_field` {self.token_limit_field!r} is not one of "
                                 f"{', '.join(TOKEN_LIMIT_FIELDS)}")
        for name in ("max_concurrency", "circuit_breaker_failures", "max_tokens"):
            if getattr(self, name) < 1:
                raise JudgeSpecError(f"{where}: `{name}` must be at least 1, got {getattr(self, name)}")
        for name in ("request_budget", "token_budget"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise JudgeSpecError(f"{where}: `{name}` must be at least 1 when set, got {getattr(self, name)}")
        for name in ("max_retries", "max_unparsed_retries", "backoff_initial_s", "backoff_max_s", "temperature",
                     "price_per_million_prompt_tokens", "price_per_million_completion_tokens"):
            if getattr(self, name) < 0:
                raise JudgeSpecError(f"{where}: `{name}` must not be negative, got {getattr(self, name)}")
        if self.timeout_s <= 0:
            raise JudgeSpecError(f"{where}: `timeout_s` must be positive, got {self.timeout_s}")
        if bool(self.client_cert) != bool(self.client_key):
            raise JudgeSpecError(f"{where}: `client_cert` and `client_key` go together (mutual TLS)")
        if (self.ca_bundle or self.client_cert) and urlsplit(self.url).scheme != "https":
            raise JudgeSpecError(f"{where}: `ca_bundle` and `client_cert` need an https:// url")
        for name in ("ca_bundle", "client_cert", "client_key"):
            self.tls_file(name)   # missing, or outside the allowed roots: said now, not at the first request
        base_dir = Path(self.source).parent if self.source and Path(self.source).is_file() else None
        object.__setattr__(self, "prompt", load_template(self.template, base_dir=base_dir, where=f"{where}: `template`"))

    @classmethod
    def from_file(cls, path: str | Path) -> JudgeSpec:
        path = checked(path, "judge spec")
        if not path.exists():
            raise JudgeSpecError(f"{path}: judge spec not found")
        data = read_yaml(path, "judge spec", JudgeSpecError)
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "judge spec") -> JudgeSpec:
        if not isinstance(data, dict):
            raise JudgeSpecError(f"{source}: expected a mapping of keys, got {type(data).__name__}")
        known = {f.name for f in fields(cls) if f.init} - {"source"}
        unknown = sorted(str(key) for key in set(data) - known)
        if unknown:
            raise JudgeSpecError(f"{source}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        for required in REQUIRED:
            if data.get(required) in (None, ""):
                raise JudgeSpecError(f"{source}: `{required}` is required")
        # YAML reads "timeout_s: 5" as an int; the float fields accept it.
        return cls(**data, source=source)

    def api_key(self) -> str | None:
        """The key from the environment; None (send no key, said once) when the variable is unset,
        as for endpoint specs (irforge.common.api_keys)."""
        return key_from_environment(self.api_key_env, self.source or "judge spec")

    def tls_file(self, name: str) -> Path | None:
        return spec_file(getattr(self, name), source=self.source or "judge spec", name=name, error=JudgeSpecError)

    @property
    def host(self) -> str:
        return host_of(self.url)

    def identity(self) -> dict[str, str]:
        """What changes the answers, so what keys the judgement store. The URL's host is left out
        on purpose: the same model and prompt moved to another address gives the same labels, and
        the store should keep serving them."""
        return {
            "backend": self.kind, "model": self.model, "template_sha256": self.prompt.sha256,
            "temperature": repr(float(self.temperature)), "max_tokens": str(self.max_tokens),
        }

    def public(self) -> dict[str, Any]:
        """What results record: everything but secrets (only the variable's name), the template by hash."""
        record = asdict(self)
        for name in ("source", "prompt"):
            record.pop(name, None)
        record["url"] = redact_url(self.url)
        record["host"] = self.host
        record["template_source"] = self.prompt.source
        record["template_sha256"] = self.prompt.sha256
        if self.prompt.source == "inline":
            record["template"] = "inline"
        return record
