"""A team's OpenAI-compatible embeddings API (POST {url}/embeddings) as an irforge encoder.

`EndpointEncoder(spec)` has the surface DenseRetriever and the embedding cache use (identity,
identity_key, dimension, describe()["distance"], encode(texts, role)), so an endpoint is
evaluated exactly like an in-process model: corpus and queries encoded once through the cache,
vectors stored in the vector backend, exact search, scoring.

Calls go through the official `openai` client (its own retries off: RobustCaller retries, with a
budget and a circuit breaker) in batches of at most `batch_size` texts, `max_concurrency` at a
time (batching.map_batches: one at a time until the first answer, halved on a timeout, each
request's timeout scaled to the work in flight; progress moves as each request is answered).
Every answer is checked before use: as many embeddings as inputs, indices exactly 0..n-1, the
probe's dimension, finite numbers, no zero vector. A bad answer raises EndpointAnswerError naming
the request; nothing is ever scored as zero.

Identity: besides the spec's settings, a probe (one fixed query and one fixed passage, encoded
once per run) is hashed into it, so the embedding cache is keyed by what the endpoint actually
answers: a redeployed model with new weights gets new cache entries even under the same name.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time

import numpy as np

from irforge.common.api_keys import openai_auth_headers
from irforge.common.calling import RobustCaller
from irforge.endpoints.batching import map_batches
from irforge.endpoints.errors import EndpointAnswerError, EndpointSpecError
from irforge.endpoints.spec import EndpointSpec
from irforge.models.encoder import TextRole
from irforge.pipeline.latency import LatencyRecorder

PROBE_QUERY = "what is the effect of vitamin D on bone density?"
PROBE_PASSAGE = ("Vitamin D increases the absorption of calcium in the intestine and supports the "
                 "mineralisation of bone.")
# Rounded before hashing: float noise between two runs of the same deployment should not change
# the identity (it would only cost a re-encode, never a wrong vector, if it did).
PROBE_DECIMALS = 4
REQUEST_BASIS = ("per request of up to batch_size texts: the answered attempt's time (sent to answer decoded and "
                 "checked, network included); retries and backoff are counted in the endpoint's calls")


class EndpointEncoder:
    def __init__(self, spec: EndpointSpec, *, caller: RobustCaller | None = None):
        if spec.kind != "openai-embeddings":
            raise EndpointSpecError(f"{spec.source or 'endpoint spec'}: EndpointEncoder needs kind openai-embeddings, got {spec.kind}")
        import openai

        from irforge.common.endpoint_tls import openai_http_client

        self.spec = spec
        self.name = spec.model
        self.host = spec.public()["host"]
        key = spec.api_key()
        self.caller = caller or RobustCaller.from_spec(spec, secrets=[key])
        self._auth = openai_auth_headers(key)
        # max_retries=0: retries belong to RobustCaller (budget, breaker, Retry-After in one place).
        self._client = openai.OpenAI(base_url=spec.url, api_key=key or "none", max_retries=0, timeout=spec.timeout_s,
                                     http_client=openai_http_client(spec, EndpointSpecError))
        self._lock = threading.Lock()
        self._dimension: int | None = None
        self._probe_sha256: str | None = None
        self.latency = LatencyRecorder()

    def use_latency(self, recorder: LatencyRecorder) -> None:
        self.latency = recorder

    # -- identity ---------------------------------------------------------------------------
    def _probe(self) -> None:
        """Encode the two probe texts (2 requests): learn the dimension and fingerprint the answers."""
        with self._lock:
            if self._probe_sha256 is not None:
                return
            query = self._request([PROBE_QUERY], TextRole.QUERY, "probe request (query)", expected_dimension=None)
            passage = self._request([PROBE_PASSAGE], TextRole.PASSAGE, "probe request (passage)",
                                    expected_dimension=query.shape[1])
            dimension = int(query.shape[1])
            if self.spec.dimensions is not None and dimension != self.spec.dimensions:
                raise EndpointAnswerError(
                    f"endpoint {self.host} ({self.spec.model}): asked for dimensions={self.spec.dimensions} but the "
                    f"probe answer has {dimension} values (does the endpoint support `dimensions`?)"
                )
            rounded = np.round(np.concatenate([query, passage]).astype(np.float64), PROBE_DECIMALS) + 0.0  # no -0.0
            self._probe_sha256 = hashlib.sha256(rounded.astype("<f8").tobytes()).hexdigest()
            self._dimension = dimension

    @property
    def dimension(self) -> int:
        self._probe()
        return self._dimension

    @property
    def probe_sha256(self) -> str:
        self._probe()
        return self._probe_sha256

    @property
    def identity(self) -> dict:
        """Everything that changes a vector; keys the embedding cache and vector collections."""
        spec = self.spec
        return {
            "kind": spec.kind, "host": self.host, "model": spec.model, "dimensions": spec.dimensions,
            "dimension": self.dimension, "query_prefix": spec.query_prefix, "passage_prefix": spec.passage_prefix,
            "query_params": spec.query_params, "passage_params": spec.passage_params,
            "probe_sha256": self.probe_sha256,
        }

    @property
    def identity_key(self) -> str:
        return hashlib.sha256(json.dumps(self.identity, sort_keys=True, default=str).encode()).hexdigest()[:24]

    def describe(self) -> dict:
        """What results.json records: the spec without secrets, the probe, the call counters."""
        return {
            **self.spec.public(),
            "dimension": self.dimension,
            # The vector backends score cosine on raw vectors; what the endpoint returned is kept.
            "distance": "cosine",
            "normalization": "none: vectors kept as the endpoint returned them; cosine similarity in the vector backend",
            "probe": {"query": PROBE_QUERY, "passage": PROBE_PASSAGE, "decimals": PROBE_DECIMALS,
                      "sha256": self.probe_sha256},
            "identity_key": self.identity_key,
            "calls": self.caller.counters.as_dict(),
        }

    # -- encoding ---------------------------------------------------------------------------
    # Callers that pass `progress` (CachedEncoding) see it move per answered request, not per chunk.
    reports_progress = True

    def encode(self, texts: list[str], role: TextRole, progress=None) -> np.ndarray:
        """float32 (len(texts), dimension), in input order; prefixes and role params added here.
        `progress(n)` is called as each request's n texts are answered."""
        role = TextRole(role)
        dimension = self.dimension
        if not texts:
            return np.zeros((0, dimension), dtype=np.float32)

        def what(number: int, total: int, start: int, end: int) -> str:
            first = " ".join(texts[start].split())[:40]
            return (f"embeddings request {number}/{total} ({end - start} {role.value} texts "
                    f"from {start + 1}, first {first!r})")

        stage = f"{self.spec.kind} requests ({role.value} texts)"

        def send(start: int, end: int, name: str, timeout: float) -> np.ndarray:
            started = time.perf_counter()  # one attempt: a failed one raises before it is recorded
            vectors = self._send(texts[start:end], role, name, dimension, timeout)
            self.latency.request(stage, time.perf_counter() - started, REQUEST_BASIS, texts=end - start)
            return vectors

        with self.latency.section(stage, "request", REQUEST_BASIS):
            answers = map_batches(self.caller, send, len(texts), batch_size=self.spec.batch_size,
                                  max_concurrency=self.spec.max_concurrency, what=what, on_answer=progress)
        return np.concatenate(answers)

    def _request(self, texts: list[str], role: TextRole, what: str, expected_dimension: int | None) -> np.ndarray:
        return self.caller.call(lambda: self._send(texts, role, what, expected_dimension), what=what)

    def _send(self, texts: list[str], role: TextRole, what: str, expected_dimension: int | None,
              timeout: float | None = None) -> np.ndarray:
        """One POST /embeddings; the checked vectors. Transport errors propagate to the caller."""
        spec = self.spec
        prefix, params = ((spec.query_prefix, spec.query_params) if role == TextRole.QUERY
                          else (spec.passage_prefix, spec.passage_params))
        options = {"dimensions": spec.dimensions} if spec.dimensions is not None else {}
        if timeout is not None:
            options["timeout"] = timeout
        try:
            response = self._client.embeddings.create(
                model=spec.model, input=[prefix + text for text in texts], encoding_format="float",
                extra_body=dict(params) or None, extra_headers=self._auth, **options,
            )
        except json.JSONDecodeError as error:
            raise self._bad(what, f"the answer is not valid JSON ({error})") from None
        return self._check(response, len(texts), what, expected_dimension)

    def _bad(self, what: str, problem: str) -> EndpointAnswerError:
        return EndpointAnswerError(self.caller.redact(f"endpoint {self.host} ({self.spec.model}): {what}: {problem}"))

    def _check(self, response, count: int, what: str, dimension: int | None) -> np.ndarray:
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            preview = " ".join(str(response).split())[:120]
            raise self._bad(what, f"the answer has no `data` list of embeddings (got {preview!r})")
        if len(data) != count:
            raise self._bad(what, f"sent {count} texts, got {len(data)} embeddings")
        indices = [getattr(item, "index", None) for item in data]
        if sorted(i for i in indices if isinstance(i, int)) != list(range(count)):
            raise self._bad(what, f"embedding indices must be exactly 0..{count - 1}, got {sorted(indices, key=str)[:10]}")
        rows: list[list[float]] = [[]] * count
        for item in data:
            embedding = getattr(item, "embedding", None)
            if not isinstance(embedding, list) or not all(type(x) in (float, int) for x in embedding):
                raise self._bad(what, f"embedding {item.index} is not a list of numbers")
            rows[item.index] = embedding
        lengths = {len(row) for row in rows}
        expected = dimension if dimension is not None else len(rows[0])
        if lengths != {expected} or expected == 0:
            wrong = next(i for i, row in enumerate(rows) if len(row) != expected) if lengths != {expected} else 0
            raise self._bad(what, f"embedding {wrong} has {len(rows[wrong])} values, expected {expected}"
                                  + (" (the probe's dimension)" if dimension is not None else ""))
        with np.errstate(over="ignore"):  # values beyond float32's range become inf: caught below
            vectors = np.asarray(rows, dtype=np.float64).astype(np.float32)
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():
            raise self._bad(what, f"embedding {int(np.argmin(finite))} has NaN or infinite values")
        nonzero = np.linalg.norm(vectors, axis=1) > 0
        if not nonzero.all():
            raise self._bad(what, f"embedding {int(np.argmin(nonzero))} is a zero vector (no cosine similarity)")
        return vectors

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> EndpointEncoder:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
