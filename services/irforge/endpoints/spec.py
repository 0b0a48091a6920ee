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
    ca_bundle: certs/team-ca.pem # https / gRPC TLS: trust this CA (relative to this file); default: system CAs
    client_cert: certs/irforge.pem   # mutual TLS: the certificate irforge presents, with client_key
    client_key: certs/irforge.key
    tls: true                    # gRPC kinds: TLS even without ca_bundle (system CAs); ca_bundle implies it

Command-line flags may override fields (`EndpointSpec.with_overrides`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from irforge.common.allowed_roots import checked
from irforge.common.api_keys import key_from_environment
from irforge.common.files import read_yaml
from irforge.common.redact import host_of, redact_url
from irforge.common.tls import spec_file
from irforge.endpoints.errors import EndpointSpecError

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
    ca_bundle: str | None = None           # PEM CA(s) the endpoint's certificate must chain to (https, gRPC TLS)
    client_cert: str | None = None         # PEM certificate for mutual TLS, with client_key
    client_key: str | None = None
    tls: bool = False                      # gRPC kinds: TLS with the system CAs (ca_bundle / client_cert imply it)
    source: str = ""                       # the file it came from, for messages

    def __post_init__(self):
        where = self.source or "endpoint spec"
        if self.kind not in KINDS:
            raise EndpointSpecError(f"{where}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.kind.endswith("-grpc"):
            if not self.url or "://" in self.url:
                raise EndpointSpecError(f"{where}: url for {self.kind} is HOST:PORT, got {redact_url(self.url)!r}")
        elif urlsplit(self.url).scheme not in ("http", "https"):
            raise EndpointSpecError(f"{where}: url must start with http:// or https://, got {redact_url(self.url)!r}")
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
        if bool(self.client_cert) != bool(self.client_key):
            raise EndpointSpecError(f"{where}: client_cert and client_key go together (mutual TLS)")
        if not self.kind.endswith("-grpc") and self.uses_tls and urlsplit(self.url).scheme != "https":
            raise EndpointSpecError(f"{where}: ca_bundle, client_cert and tls need an https:// url, got {redact_url(self.url)!r}")

    # -- TLS ----------------------------------------------------------------------------------
    @property
    def uses_tls(self) -> bool:
        return bool(self.tls or self.ca_bundle or self.client_cert) or urlsplit(self.url).scheme == "https"

    def tls_file(self, name: str) -> Path | None:
        """The file a TLS field names (relative to the spec's folder), checked when it is opened."""
        return spec_file(getattr(self, name), source=self.source or "endpoint spec", name=name, error=EndpointSpecError)

    def check_files(self) -> None:
        for name in ("ca_bundle", "client_cert", "client_key"):
            self.tls_file(name)

    @classmethod
    def from_file(cls, path: str | Path) -> "EndpointSpec":
        path = checked(path, "endpoint spec")
        if not path.exists():
            raise EndpointSpecError(f"{path}: endpoint spec not found")
        data = read_yaml(path, "endpoint spec", EndpointSpecError)
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
        """What results.json records: everything but secrets (only the variable's name; the URL
        without user:password or secret query values)."""
        record = asdict(self)
        record.pop("source")
        record["url"] = redact_url(self.url)
        record["host"] = host_of(self.url)
        return record
