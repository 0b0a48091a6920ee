"""Search endpoints: the team owns retrieval, irforge sends the queries and scores the answers.

- `HttpSearchRetriever(spec)` (kind search-http): POST {url} with {"query_id", "query", "k"},
  answer {"hits": [{"id", "score"}, ...]}; one request per query, `max_concurrency` in flight.
  In instruction-following evaluation the request also carries "instruction" (the query stays
  without it), and a gRPC request its `instruction` field: the team decides how to use it.
- `GrpcSearchRetriever(spec)` (kind search-grpc): irforge.v1.Retriever at HOST:PORT. Queries
  go in streams of `batch_size` through BatchSearch (a team can batch on its side); a server
  that answers UNIMPLEMENTED there is called query by query through Search.

Both are Retrievers for the eval job: prepare() streams the corpus once (ids only, so answers
can be checked: the team's index is theirs), retrieve() returns the Run. Every answer is checked:
ids the corpus lacks, an id twice, a score that is not a finite number, more than k hits, a
missing or unexpected query id raise EndpointAnswerError naming the query. Nothing is dropped or
scored as zero silently. Calls go through RobustCaller (retries, budget, circuit breaker).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable

from irforge.common.calling import RobustCaller
from irforge.common.progress import ProgressFactory, no_progress
from irforge.data import BeirDataset
from irforge.data.types import Query, Run
from irforge.endpoints.errors import EndpointAnswerError, EndpointSpecError
from irforge.endpoints.spec import EndpointSpec
from irforge.pipeline.latency import PER_REQUEST, LatencyRecorder, batch_basis
from irforge.pipeline.retrievers.base import CorpusTracker, count_lines
from irforge.ranking import Ranking, ranked

PROBE_QUERY_ID = "irforge-probe"
PROBE_QUERY = "what is the effect of vitamin D on bone density?"
PROBE_K = 10
PROBE_DECIMALS = 6  # scores rounded before hashing: float noise should not change the fingerprint


class _SearchRetriever:
    name = "search"
    kind = ""

    def __init__(self, spec: EndpointSpec, progress: ProgressFactory = no_progress, *,
                 caller: RobustCaller | None = None):
        if spec.kind != self.kind:
            raise EndpointSpecError(f"{spec.source or 'endpoint spec'}: {type(self).__name__} needs kind {self.kind}, got {spec.kind}")
        self.spec = spec
        self.progress = progress
        self.host = spec.public()["host"]
        self.key = spec.api_key()
        self.caller = caller or RobustCaller.from_spec(spec, secrets=[self.key])
        self.doc_ids: set[str] = set()
        self.probe_sha256: str | None = None
        self._queries_searched = 0
        self.latency = LatencyRecorder()

    def use_latency(self, recorder: LatencyRecorder) -> None:
        self.latency = recorder

    @property
    def stage(self) -> str:
        return f"{self.kind} requests"

    # -- the Retriever protocol -------------------------------------------------------------
    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        bar = self.progress(f"reading {dataset.name} ids ({self.kind})", count_lines(dataset.corpus_path), "doc")
        try:
            for document in tracker.observe(dataset.corpus()):
                self.doc_ids.add(document.doc_id)
                bar.update(1)
        finally:
            bar.close()
        probe = Query(query_id=PROBE_QUERY_ID, text=PROBE_QUERY)
        hits = self.caller.call(lambda: self._search_one(probe, PROBE_K),
                                what=f"probe query {PROBE_QUERY_ID!r}")
        record = [[doc_id, round(score, PROBE_DECIMALS) + 0.0] for doc_id, score in ranked(hits)]
        self.probe_sha256 = hashlib.sha256(json.dumps(record).encode()).hexdigest()

    def retrieve(self, queries: list[Query], k: int) -> Run:
        if self.probe_sha256 is None:
            raise RuntimeError("prepare() must run before retrieve(): answers are checked against the corpus ids")
        bar = self.progress(f"retrieving ({self.kind})", len(queries), "query")
        try:
            with self.latency.answering(len(queries)):
                run = self._search_all(queries, k, bar)
        finally:
            bar.close()
        self._queries_searched += len(queries)
        return run

    def describe(self) -> dict:
        return {"name": self.name, "endpoint": {**self.spec.public(), "mode": self._mode_description()},
                "probe": {"query_id": PROBE_QUERY_ID, "query": PROBE_QUERY, "k": PROBE_K,
                          "decimals": PROBE_DECIMALS, "sha256": self.probe_sha256},
                "calls": self.caller.counters.as_dict()}

    def counts(self) -> dict:
        return {"documents_read": len(self.doc_ids), "queries_searched": self._queries_searched,
                **{f"endpoint_{name}": value for name, value in self.caller.counters.as_dict().items()}}

    # -- per transport ----------------------------------------------------------------------
    def _search_one(self, query: Query, k: int) -> Ranking:
        raise NotImplementedError

    def _search_all(self, queries: list[Query], k: int, bar) -> Run:
        def one(query: Query) -> Ranking:
            started = time.perf_counter()  # one attempt: a failed one raises before it is recorded
            hits = self._search_one(query, k)
            self.latency.request(self.stage, time.perf_counter() - started, PER_REQUEST, query_id=query.query_id)
            bar.update(1)
            return hits

        with self.latency.section(self.stage, "query", PER_REQUEST):
            answers = self.caller.map(one, queries, self.spec.max_concurrency,
                                      what=lambda q: f"search request for query {q.query_id!r}")
        return {query.query_id: hits for query, hits in zip(queries, answers)}

    def _mode_description(self) -> str:
        return "one request per query"

    # -- checks -----------------------------------------------------------------------------
    def _bad(self, query_id: str, problem: str) -> EndpointAnswerError:
        return EndpointAnswerError(self.caller.redact(
            f"search endpoint {self.host}: answer for query {query_id!r}: {problem}"))

    def check_hits(self, query_id: str, hits: Iterable[tuple[object, object]], k: int) -> Ranking:
        """The Ranking of (id, score) pairs (in any order), or EndpointAnswerError naming the query."""
        scores: dict[str, float] = {}
        for position, (doc_id, score) in enumerate(hits):
            if not isinstance(doc_id, str) or not doc_id:
                raise self._bad(query_id, f"hit {position} has no document id (got {doc_id!r})")
            if type(score) not in (int, float):  # bool and "0.5" are not scores
                raise self._bad(query_id, f"hit {position} ({doc_id!r}) has a non-numeric score {score!r}")
            if not math.isfinite(score):
                raise self._bad(query_id, f"hit {position} ({doc_id!r}) has a non-finite score {score!r}")
            if doc_id in scores:
                raise self._bad(query_id, f"document {doc_id!r} appears twice")
            scores[doc_id] = float(score)
        if len(scores) > k:
            raise self._bad(query_id, f"{len(scores)} hits for k={k}")
        unknown = sorted(set(scores) - self.doc_ids)
        if unknown:
            raise self._bad(query_id, f"{len(unknown)} document id(s) not in the corpus, e.g. {unknown[:3]}")
        return Ranking.of(scores)


class HttpSearchRetriever(_SearchRetriever):
    name = "search-http"
    kind = "search-http"

    def __init__(self, spec: EndpointSpec, progress: ProgressFactory = no_progress, *,
                 caller: RobustCaller | None = None):
        super().__init__(spec, progress, caller=caller)
        from irforge.common.endpoint_tls import http_client

        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        self._client = http_client(spec, EndpointSpecError, headers)

    @staticmethod
    def request_body(query: Query, k: int) -> dict:
        """The JSON a search-http endpoint receives; "instruction" only in instruction evaluation."""
        text, instruction = query.parts
        body = {"query_id": query.query_id, "query": text, "k": k}
        if instruction is not None:
            body["instruction"] = instruction
        return body

    def _search_one(self, query: Query, k: int) -> Ranking:
        query_id = query.query_id
        response = self._client.post(self.spec.url, json=self.request_body(query, k))
        response.raise_for_status()  # HTTPStatusError: RobustCaller retries 429/5xx, refuses other 4xx
        try:
            answer = response.json()
        except ValueError as error:
            raise self._bad(query_id, f"the answer is not valid JSON ({error}); starts {response.text[:80]!r}") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("hits"), list):
            raise self._bad(query_id, f"expected {{\"hits\": [...]}}, got {json.dumps(answer)[:120]}")
        if "query_id" in answer and answer["query_id"] != query_id:
            raise self._bad(query_id, f"the answer is for query {answer['query_id']!r}")
        pairs = []
        for position, hit in enumerate(answer["hits"]):
            if not isinstance(hit, dict):
                raise self._bad(query_id, f"hit {position} is not an object with id and score: {hit!r}")
            pairs.append((hit.get("id"), hit.get("score")))
        return self.check_hits(query_id, pairs, k)

    def close(self) -> None:
        self._client.close()


class _Unimplemented(Exception):
    """The server has no BatchSearch: switch to unary Search (not a failure to retry)."""


class GrpcSearchRetriever(_SearchRetriever):
    name = "search-grpc"
    kind = "search-grpc"

    def __init__(self, spec: EndpointSpec, progress: ProgressFactory = no_progress, *,
                 caller: RobustCaller | None = None):
        super().__init__(spec, progress, caller=caller)
        from irforge.common.grpc_server import open_channel
        from irforge.common.endpoint_tls import grpc_tls
        from irforge.v1 import retriever_pb2_grpc

        self._channel = open_channel(spec.url, tls=grpc_tls(spec))
        self._stub = retriever_pb2_grpc.RetrieverStub(self._channel)
        self._metadata = [("authorization", f"Bearer {self.key}")] if self.key else None
        self.streaming: bool | None = None  # learned from the server: BatchSearch, or Search only

    @staticmethod
    def request(query: Query, k: int):
        """The RetrieverSearchRequest for a query; `instruction` set only in instruction evaluation."""
        from irforge.v1 import retriever_pb2

        text, instruction = query.parts
        return retriever_pb2.RetrieverSearchRequest(query_id=query.query_id, query=text, k=k, instruction=instruction)

    def _search_one(self, query: Query, k: int) -> Ranking:
        query_id = query.query_id
        request = self.request(query, k)
        if self.streaming is not False:
            try:
                return self._batch([request], k)[query_id]
            except _Unimplemented:
                self.streaming = False
        reply = self._stub.Search(request, timeout=self.spec.timeout_s, metadata=self._metadata)
        if reply.query_id and reply.query_id != query_id:
            raise self._bad(query_id, f"the answer is for query {reply.query_id!r}")
        return self.check_hits(query_id, ((hit.doc_id, hit.score) for hit in reply.hits), k)

    def _batch(self, requests: list, k: int) -> dict[str, Ranking]:
        """One BatchSearch stream; every request must get exactly one answer."""
        import grpc

        wanted = {request.query_id for request in requests}
        answers: dict[str, Ranking] = {}
        call = self._stub.BatchSearch(iter(requests), timeout=self.spec.timeout_s, metadata=self._metadata)
        try:
            for reply in call:
                if reply.query_id not in wanted:
                    raise self._bad(reply.query_id, "the stream answered a query that was not asked in it")
                if reply.query_id in answers:
                    raise self._bad(reply.query_id, "the stream answered this query twice")
                answers[reply.query_id] = self.check_hits(reply.query_id, ((h.doc_id, h.score) for h in reply.hits), k)
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.UNIMPLEMENTED and self.streaming is None:
                raise _Unimplemented() from None
            raise
        except EndpointAnswerError:
            call.cancel()  # stop the server's work on a stream whose answers are unusable anyway
            raise
        missing = sorted(wanted - set(answers))
        if missing:
            raise self._bad(missing[0], f"the stream ended without answering {len(missing)} query(ies)")
        self.streaming = True
        return answers

    def _search_all(self, queries: list[Query], k: int, bar) -> Run:
        if self.streaming is False:
            return super()._search_all(queries, k, bar)
        size = self.spec.batch_size
        chunks = [queries[start:start + size] for start in range(0, len(queries), size)]

        basis = batch_basis(size, "BatchSearch streams", "sent to last answer read and checked, network included")

        def stream(chunk: list[Query]) -> dict[str, Ranking]:
            started = time.perf_counter()
            answers = self._batch([self.request(q, k) for q in chunk], k)
            self.latency.batch(self.stage, [q.query_id for q in chunk], time.perf_counter() - started, basis,
                               overlapping=True)
            bar.update(len(chunk))
            return answers

        def what(chunk: list[Query]) -> str:
            return f"BatchSearch stream of {len(chunk)} queries ({chunk[0].query_id!r} to {chunk[-1].query_id!r})"

        try:
            with self.latency.section(self.stage, "query", basis):
                answers = self.caller.map(stream, chunks, self.spec.max_concurrency, what=what)
        except _Unimplemented:
            self.streaming = False
            return super()._search_all(queries, k, bar)
        merged = {query_id: hits for part in answers for query_id, hits in part.items()}
        return {query.query_id: merged[query.query_id] for query in queries}

    def _mode_description(self) -> str:
        if self.streaming is None:
            return "not called yet"
        return (f"BatchSearch streams of {self.spec.batch_size} queries" if self.streaming
                else "unary Search per query (the server has no BatchSearch)")

    def close(self) -> None:
        self._channel.close()
