"""Endpoint specs: a small YAML file per endpoint, portable between teams.

    kind: openai-embeddings      # or: search-http, search-grpc, rerank-http, rerank-grpc
    url: http://127.0.0.1:8080/v1
    model: multilingual-e5-small
    api_key_env: TEAM_API_KEY    # optional; unset: no key is sent. The key never appears in files, logs or results
    query_prefix: "query: "
    passage_prefix: "passage: "
    query_params: {input_type: query}
    passage_params: {input_type: passage}
    batch_size: 64
    max_concurrency: 4

Command-line flags may override fields (`EndpointSpec.with_overrides`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from irforge.endpoints.errors import EndpointSpecError
from irforge.endpoints.keys import key_from_environment

KINDS = ("openai-embeddings", "search-http", "search-grpc", "rerank-http", "rerank-grpc")


@dataclass(frozen=True)
class EndpointSpec:
    kind: str
    url: str
    model: str = ""
    api_key_env: str | None = None
    query_prefix: str = ""
    passage_prefix: str = ""
    query_params: dict[str, Any] = field(default_factory=dict)
    passage_params: dict[str, Any] = field(default_factory=dict)
    dimensions: int | None = None          # openai-embeddings: ask for (and expect) this dimension
    batch_size: int = 64                   # texts per embeddings request / documents per rerank request
    max_concurrency: int = 4               # requests in flight
    timeout_s: float = 60.0                # per request at least; scaled to the work in flight once measured
    max_retries: int = 5                   # per request, on 429 / 5xx / timeouts
    backoff_initial_s: float = 0.5         # exponential backoff with full jitter, capped below
    backoff_max_s: float = 30.0
    request_budget: int | None = None      # at most this many requests per run (None: unlimited)
    circuit_breaker_failures: int = 5      # consecutive failed attempts (429s aside) that stop the run
    source: str = ""                       # the file it came from, for messages

    def __post_init__(self):
        where = self.source or "endpoint spec"
        if self.kind not in KINDS:
            raise EndpointSpecError(f"{where}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.kind.endswith("-grpc"):
            if not self.url or "://" in self.url:
                raise EndpointSpecError(f"{where}: url for {self.kind} is HOST:PORT, got {self.url!r}")
        elif urlsplit(self.url).scheme not in ("http", "https"):
            raise EndpointSpecError(f"{where}: url must start with http:// or https://, got {self.url!r}")
        for name in ("batch_size", "max_concurrency", "circuit_breaker_failures"):
            if getattr(self, name) < 1:
                raise EndpointSpecError(f"{where}: {name} must be at least 1, got {getattr(self, name)}")
        if self.max_retries < 0 or self.timeout_s <= 0 or self.backoff_initial_s < 0 or self.backoff_max_s < 0:
            raise EndpointSpecError(f"{where}: max_retries, timeout_s and backoff times must be non-negative (timeout_s > 0)")
        if self.request_budget is not None and self.request_budget < 1:
            raise EndpointSpecError(f"{where}: request_budget must be at least 1 when set")
        if self.dimensions is not None and self.dimensions < 1:
            raise EndpointSpecError(f"{where}: dimensions must be positive when set")
        if self.kind == "openai-embeddings" and not self.model:
            raise EndpointSpecError(f"{where}: openai-embeddings needs `model`")

    @classmethod
    def from_file(cls, path: str | Path) -> "EndpointSpec":
        path = Path(path)
        if not path.is_file():
            raise EndpointSpecError(f"{path}: endpoint spec not found")
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as error:
            raise EndpointSpecError(f"{path}: not valid YAML ({error})") from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "endpoint spec") -> "EndpointSpec":
        if not isinstance(data, dict):
            raise EndpointSpecError(f"{source}: expected a mapping of keys, got {type(data).__name__}")
        known = {f.name for f in fields(cls)} - {"source"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise EndpointSpecError(f"{source}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        for required in ("kind", "url"):
            if not data.get(required):
                raise EndpointSpecError(f"{source}: `{required}` is required")
        for name in ("query_params", "passage_params"):
            if name in data and not isinstance(data[name], dict):
                raise EndpointSpecError(f"{source}: `{name}` must be a mapping")
        try:
            return cls(**data, source=source)
        except TypeError as error:
            raise EndpointSpecError(f"{source}: {error}") from None

    def with_overrides(self, **overrides: Any) -> "EndpointSpec":
        """Flags override file values; None means "not given"."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def api_key(self) -> str | None:
        """The key from the environment; None (send no key, said once) when the variable is unset."""
        return key_from_environment(self.api_key_env, self.source or "endpoint spec")

    def public(self) -> dict[str, Any]:
        """What results.json records: everything but secrets (only the variable's name)."""
        record = asdict(self)
        record.pop("source")
        record["host"] = urlsplit(self.url if "://" in self.url else f"grpc://{self.url}").netloc
        return record
