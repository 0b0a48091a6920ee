"""Team rerank endpoints, with CrossEncoderReranker's surface (identity, describe, score,
score_batch, counts), so RerankingRetriever evaluates a team's reranker like our own.

- `HttpReranker` (kind rerank-http): the Cohere/Jina API. `url` is the API base *including* its
  version, like the OpenAI client's base_url (`https://api.cohere.com/v2`, `https://api.jina.ai/v1`,
  `http://127.0.0.1:8080/v1`); irforge appends `/rerank`:
      POST {url}/rerank  {"model", "query", "documents": [str], "top_n": len(documents)}
      -> {"results": [{"index": int, "relevance_score": float}, ...]}
- `GrpcReranker` (kind rerank-grpc): irforge.v1.Reranker/Rerank at HOST:PORT (protos/irforge/v1/
  reranker.proto); `irforge.models.reranker_server` serves our CrossEncoder that way.

Documents go `batch_size` per request (pointwise scores from separate requests are comparable),
up to `max_concurrency` requests in flight. top_n always asks for every document, and an answer
is checked before use: indices in range and unique, every document scored, scores finite numbers;
anything else is an EndpointAnswerError naming the endpoint and the request, never a silent zero.

Calls go through irforge.common.calling.RobustCaller, like every endpoint kind: retries of
429 / 5xx / timeouts (gRPC: UNAVAILABLE, RESOURCE_EXHAUSTED, ...) with backoff honouring
Retry-After, the per-run request budget, the circuit breaker, and keys redacted from messages.
An irforge Reranker server's typed errors (ModelNotFound, ...) come back as themselves.
"""

from __future__ import annotations

import math
import time

import grpc
import numpy as np

from irforge.common.call_failures import RETRYABLE_GRPC
from irforge.common.calling import RobustCaller
from irforge.common.endpoint_tls import grpc_tls
from irforge.common.grpc_errors import RemoteError, raise_from_rpc
from irforge.common.grpc_server import open_channel
from irforge.endpoints.errors import EndpointAnswerError, EndpointSpecError
from irforge.endpoints.spec import EndpointSpec
from irforge.models import errors as _model_errors  # noqa: F401 - registers ModelNotFound, RerankError... to rebuild them
from irforge.pipeline.latency import LatencyRecorder


def parse_results(results, count: int, what: str) -> np.ndarray:
    """float64 (count,) scores by request position from a results list, or EndpointAnswerError."""
    if not isinstance(results, list):
        raise EndpointAnswerError(f"{what}: `results` is not a list")
    scores = np.full(count, np.nan)
    seen: set[int] = set()
    for n, result in enumerate(results):
        index = result.get("index") if isinstance(result, dict) else None
        score = result.get("relevance_score") if isinstance(result, dict) else None
        if not isinstance(index, int) or isinstance(index, bool):
            raise EndpointAnswerError(f"{what}: result {n} has no integer `index` (got {index!r})")
        if not 0 <= index < count:
            raise EndpointAnswerError(f"{what}: result {n} has index {index}, outside 0..{count - 1}")
        if index in seen:
            raise EndpointAnswerError(f"{what}: index {index} appears more than once")
        if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
            raise EndpointAnswerError(f"{what}: document {index} has relevance_score {score!r}, not a finite number")
        seen.add(index)
        scores[index] = float(score)
    if len(seen) != count:
        missing = sorted(set(range(count)) - seen)
        raise EndpointAnswerError(f"{what}: {len(missing)} of {count} documents not scored (indices {missing[:10]})")
    return scores


REQUEST_BASIS = ("per request of one query and up to batch_size documents: the answered attempt's time (sent to "
                 "answer parsed and checked, network included); retries and backoff are counted in the calls")


class _EndpointReranker:
    kind = ""

    def __init__(self, spec: EndpointSpec, *, caller: RobustCaller | None = None):
        if spec.kind != self.kind:
            raise EndpointSpecError(f"{spec.source or 'endpoint spec'}: {type(self).__name__} needs kind {self.kind}, got {spec.kind}")
        self.spec = spec
        self.host = spec.public()["host"]
        self._api_key = spec.api_key()
        self.caller = caller or RobustCaller.from_spec(spec, secrets=[self._api_key])
        self.latency = LatencyRecorder()

    def use_latency(self, recorder: LatencyRecorder) -> None:
        self.latency = recorder
    @property
    def identity(self) -> dict:
        return {"kind": self.kind, "endpoint": self.host, "model": self.spec.model}

    def describe(self) -> dict:
        return {**self.identity, "spec": self.spec.public()}

    def counts(self) -> dict:
        return self.caller.counters.as_dict()

    def score(self, query: str, documents: list[str]) -> np.ndarray:
        return self.score_batch([(query, documents)])[0]

    def score_batch(self, items: list[tuple[str, list[str]]]) -> list[np.ndarray]:
        """Scores per item, in order: every item's documents in requests of batch_size, at most
        max_concurrency in flight."""
        size = self.spec.batch_size
        slices = [(n, query, documents[start:start + size], start, len(documents))
                  for n, (query, documents) in enumerate(items) for start in range(0, len(documents), size)]
        jobs = [(n, query, list(part), (f"rerank request {number}/{len(slices)} (query {query[:80]!r}, "
                                        f"documents {start}..{start + len(part) - 1} of {total})"))
                for number, (n, query, part, start, total) in enumerate(slices, 1)]
        prefix = f"rerank endpoint {self.host} (model {self.spec.model!r}), "
        stage = f"{self.kind} requests"

        def send(job) -> np.ndarray:
            started = time.perf_counter()  # one attempt: a failed one raises before it is recorded
            scores = self._request(job[1], job[2], prefix + job[3])
            self.latency.request(stage, time.perf_counter() - started, REQUEST_BASIS, texts=len(job[2]))
            return scores

        with self.latency.section(stage, "request", REQUEST_BASIS):
            parts = self.caller.map(send, jobs, self.spec.max_concurrency, what=lambda job: job[3])
        out: list[list[np.ndarray]] = [[] for _ in items]
        for (n, *_), part in zip(jobs, parts, strict=True):
            out[n].append(part)
        return [np.concatenate(chunks) if chunks else np.zeros(0) for chunks in out]

    def _request(self, query: str, documents: list[str], what: str) -> np.ndarray:
        """One attempt; transport errors propagate for the caller to classify and retry."""
        raise NotImplementedError


class HttpReranker(_EndpointReranker):
    kind = "rerank-http"

    def __init__(self, spec: EndpointSpec, **options):
        from irforge.common.endpoint_tls import http_client

        super().__init__(spec, **options)
        self.url = spec.url.rstrip("/") + "/rerank"
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        self._client = http_client(spec, EndpointSpecError, headers)

    def _request(self, query: str, documents: list[str], what: str) -> np.ndarray:
        body = {"model": self.spec.model, "query": query, "documents": documents, "top_n": len(documents)}
        response = self._client.post(self.url, json=body)
        response.raise_for_status()  # HTTPStatusError: the caller retries 429/5xx, refuses other 4xx
        try:
            answer = response.json()
        except ValueError:
            raise EndpointAnswerError(self.caller.redact(f"{what}: the answer is not JSON: {response.text[:200]!r}")) from None
        if not isinstance(answer, dict) or "results" not in answer:
            raise EndpointAnswerError(f"{what}: the answer has no `results`")
        return parse_results(answer["results"], len(documents), what)

    def close(self) -> None:
        self._client.close()


class GrpcReranker(_EndpointReranker):
    kind = "rerank-grpc"

    def __init__(self, spec: EndpointSpec, **options):
        from irforge.v1 import reranker_pb2, reranker_pb2_grpc

        super().__init__(spec, **options)
        self._pb2 = reranker_pb2
        self._channel = open_channel(spec.url, tls=grpc_tls(spec))
        self._stub = reranker_pb2_grpc.RerankerStub(self._channel)
        self._metadata = (("authorization", f"Bearer {self._api_key}"),) if self._api_key else None

    def _request(self, query: str, documents: list[str], what: str) -> np.ndarray:
        request = self._pb2.RerankRequest(model=self.spec.model, query=query, documents=documents, top_n=len(documents))
        try:
            reply = self._stub.Rerank(request, timeout=self.spec.timeout_s, metadata=self._metadata)
        except grpc.RpcError as error:
            if error.code().name not in RETRYABLE_GRPC:
                try:
                    raise_from_rpc(error, self.spec.url)  # an irforge server's typed errors come back as themselves
                except RemoteError:
                    pass  # a team server's own status: the caller refuses the request, naming it
            raise
        results = [{"index": r.index, "relevance_score": r.relevance_score} for r in reply.results]
        return parse_results(results, len(documents), what)

    def close(self) -> None:
        self._channel.close()
