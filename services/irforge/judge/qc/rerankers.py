"""The rerankers quality control votes with, from `--reranker SPEC` strings.

    bm25[?k1=0.9&b=0.4]          BM25 score of each candidate (irforge's corpus service, embedded BM25)
    dense:MODEL[?options]        bi-encoder similarity (cosine; dot product with normalize=false);
                                 options: query_prefix, passage_prefix, max_seq_length, normalize
    dense:grpc://HOST:PORT       the encoder of a running `irforge service models`
    cross-encoder:MODEL[?max_length=N]   a sentence-transformers CrossEncoder (folder or hub cache)
    endpoint:SPEC.yaml           a rerank-http / rerank-grpc endpoint spec (irforge.endpoints.rerank;
                                 rerank-grpc reaches irforge's own Reranker service)
    listwise:URL?model=NAME[&api_key_env=VAR]   RankGPT sliding-window LLM reranking

Every scorer gives one score per (query, candidate); ranks follow irforge.ranking's tie rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np

from irforge.common.iterables import chunked
from irforge.common.progress import ProgressFactory
from irforge.corpus.settings import Bm25Settings
from irforge.data.types import Query
from irforge.models.cached_encoding import encode_with_cache
from irforge.models.encoder import EncoderSpec, TextRole

Scores = dict[str, dict[str, float]]   # query id -> candidate doc id -> score
QUERIES_PER_CHUNK = 64                 # bounds the candidate vectors held at once
DEFAULT_BM25_DEPTH = 1000


@dataclass(frozen=True)
class RerankerSpec:
    text: str                     # as given on the command line: the reranker's name everywhere
    kind: str                     # bm25, dense, cross-encoder, endpoint, listwise
    target: str                   # model, address, spec file or URL ("" for bm25)
    options: dict[str, str]


KINDS = {"bm25": set(), "dense": {"query_prefix", "passage_prefix", "max_seq_length", "normalize"},
         "cross-encoder": {"max_length"}, "endpoint": set(), "listwise": {"model", "api_key_env", "window", "step"}}
BM25_OPTIONS = {"k1", "b"}


def parse_reranker_spec(text: str) -> RerankerSpec:
    """Raises ValueError naming the spec and what is wrong with it."""
    head, _, query = text.partition("?")
    kind, _, target = head.partition(":")
    if kind not in KINDS:
        raise ValueError(f"--reranker {text!r}: unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    allowed = BM25_OPTIONS if kind == "bm25" else KINDS[kind]
    if kind == "bm25" and target:
        raise ValueError(f"--reranker {text!r}: bm25 takes options (bm25?k1=1.2&b=0.75), not a target")
    if kind != "bm25" and not target:
        raise ValueError(f"--reranker {text!r}: {kind} needs a target, e.g. {kind}:NAME")
    options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=False))
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"--reranker {text!r}: unknown option(s) {', '.join(unknown)}; "
                         f"{kind} takes {', '.join(sorted(allowed)) or 'none'}")
    if kind == "listwise" and "model" not in options:
        raise ValueError(f"--reranker {text!r}: listwise needs ?model=NAME")
    return RerankerSpec(text, kind, target, options)


def _number(spec: RerankerSpec, name: str, kind=float, default=None):
    if name not in spec.options:
        return default
    try:
        return kind(spec.options[name])
    except ValueError:
        raise ValueError(f"--reranker {spec.text!r}: {name}={spec.options[name]!r} is not a number") from None


def _flag(spec: RerankerSpec, name: str, default: bool) -> bool:
    value = spec.options.get(name)
    if value is None:
        return default
    if value.lower() not in ("true", "false", "1", "0"):
        raise ValueError(f"--reranker {spec.text!r}: {name}={value!r} must be true or false")
    return value.lower() in ("true", "1")


def dense_encoder_spec(spec: RerankerSpec, base: EncoderSpec) -> EncoderSpec:
    """The reranker's encoder: its model and options, the recall encoder's device settings."""
    return EncoderSpec(model=spec.target, query_prefix=spec.options.get("query_prefix"),
                       passage_prefix=spec.options.get("passage_prefix"), normalize=_flag(spec, "normalize", True),
                       max_seq_length=_number(spec, "max_seq_length", int), batch_size=base.batch_size,
                       device=base.device, precision=base.precision)


class Bm25Scorer:
    """BM25 scores of the candidates. The index returns top-k lists, so the candidates' scores come
    from a search `depth` deep; a candidate it does not return scores 0. That is BM25's own score
    when the search covered the whole corpus (no shared term), and otherwise below every returned
    candidate: a query with fewer than `needed` candidates returned is searched again over the
    whole corpus, so every rank within the thresholds is exact."""

    def __init__(self, spec: RerankerSpec, corpus, progress: ProgressFactory, needed: int, first_k: int = DEFAULT_BM25_DEPTH):
        from irforge.pipeline.retrievers.bm25 import Bm25Retriever

        self.spec = spec
        settings = Bm25Settings(k1=_number(spec, "k1", default=Bm25Settings.k1), b=_number(spec, "b", default=Bm25Settings.b))
        self.retriever = Bm25Retriever(corpus, settings, progress)
        self.needed = needed
        self.first_k = first_k
        self.researched = 0

    def prepare(self, dataset, fingerprint: str, tracker) -> None:
        self.retriever.prepare(dataset, fingerprint, tracker)

    def score(self, queries: list[Query], candidates: Mapping[str, list[str]], texts: Mapping[str, str]) -> Scores:
        total = self.retriever.info.document_count
        depth = max((len(docs) for docs in candidates.values()), default=0)
        k = min(total, max(4 * depth, self.first_k))
        run = self.retriever.retrieve(queries, k)

        def found(query_id: str) -> int:
            return sum(1 for doc_id in candidates.get(query_id, []) if doc_id in run.get(query_id, {}))

        short = [q for q in queries if k < total and found(q.query_id) < min(self.needed, len(candidates.get(q.query_id, [])))]
        if short:
            self.researched += len(short)
            run.update(self.retriever.retrieve(short, total))
        return {q.query_id: {doc_id: float(run.get(q.query_id, {}).get(doc_id, 0.0)) for doc_id in candidates.get(q.query_id, [])}
                for q in queries}

    def describe(self) -> dict:
        return {"spec": self.spec.text, "kind": "bm25", **self.retriever.describe(),
                "queries_searched_whole_corpus": self.researched}


class DenseScorer:
    """Similarity of query and candidate vectors, through the embedding cache (a candidate already
    encoded by any earlier run with the same encoder costs nothing)."""

    def __init__(self, spec: RerankerSpec, encoder, cache, progress: ProgressFactory, location: str):
        self.spec, self.encoder, self.cache, self.progress, self.location = spec, encoder, cache, progress, location

    def prepare(self, dataset, fingerprint: str, tracker) -> None:
        pass

    def _vectors(self, role: TextRole, items: list[tuple[str, str]]) -> dict[str, np.ndarray]:
        vectors = {}
        for ids, block in encode_with_cache(self.encoder, self.cache, role, items, progress=self.progress):
            vectors.update(zip(ids, block))
        return vectors

    def score(self, queries: list[Query], candidates: Mapping[str, list[str]], texts: Mapping[str, str]) -> Scores:
        scores: Scores = {}
        for chunk in chunked(queries, QUERIES_PER_CHUNK):
            wanted = sorted({doc_id for q in chunk for doc_id in candidates.get(q.query_id, [])})
            documents = self._vectors(TextRole.PASSAGE, [(doc_id, texts[doc_id]) for doc_id in wanted])
            query_vectors = self._vectors(TextRole.QUERY, [(q.query_id, q.text) for q in chunk])
            for query in chunk:
                doc_ids = candidates.get(query.query_id, [])
                matrix = np.stack([documents[d] for d in doc_ids]) if doc_ids else np.zeros((0, 1), np.float32)
                similarity = matrix @ query_vectors[query.query_id] if doc_ids else []
                scores[query.query_id] = {d: float(s) for d, s in zip(doc_ids, similarity)}
        return scores

    def describe(self) -> dict:
        return {"spec": self.spec.text, "kind": "dense", "encoder": {**self.encoder.describe(), "location": self.location}}


class PairwiseScorer:
    """Anything with RerankingRetriever's surface: CrossEncoderReranker, endpoint clients, the
    listwise LLM reranker (`score_batch([(query, documents)])`)."""

    def __init__(self, spec: RerankerSpec, reranker, progress: ProgressFactory, queries_per_call: int = 8):
        self.spec, self.reranker, self.progress, self.queries_per_call = spec, reranker, progress, queries_per_call

    def prepare(self, dataset, fingerprint: str, tracker) -> None:
        pass

    def score(self, queries: list[Query], candidates: Mapping[str, list[str]], texts: Mapping[str, str]) -> Scores:
        from irforge.models.reranker import check_scores

        scores: Scores = {}
        bar = self.progress(f"reranking ({self.spec.text})", len(queries), "query")
        try:
            for chunk in chunked(queries, self.queries_per_call):
                batch = [(q.text, [texts[d] for d in candidates.get(q.query_id, [])]) for q in chunk]
                for query, answer in zip(chunk, self.reranker.score_batch(batch)):
                    doc_ids = candidates.get(query.query_id, [])
                    answer = check_scores(answer, len(doc_ids), f"reranker {self.spec.text}")
                    scores[query.query_id] = {d: float(s) for d, s in zip(doc_ids, answer)}
                bar.update(len(chunk))
        finally:
            bar.close()
        return scores

    def describe(self) -> dict:
        describe = self.reranker.describe() if hasattr(self.reranker, "describe") else {"type": type(self.reranker).__name__}
        return {"spec": self.spec.text, "kind": self.spec.kind, "reranker": describe}


class ScorerFactory:
    """Builds scorers, sharing one loaded encoder per encoder spec (a `dense:` reranker with the
    recall model's settings reuses the recall encoder)."""

    def __init__(self, *, corpus, cache, progress: ProgressFactory, base_encoder: EncoderSpec, stack: ExitStack,
                 needed: int):
        self.corpus, self.cache, self.progress, self.base, self.stack = corpus, cache, progress, base_encoder, stack
        self.needed = needed
        self._encoders: dict[str, tuple[object, str]] = {}

    def encoder(self, spec: EncoderSpec, address: str | None = None):
        """(encoder, where it runs), loaded once per spec."""
        from irforge.models.registry import canonical_name

        key = f"grpc:{address}" if address else repr((canonical_name(spec.model), spec.query_prefix, spec.passage_prefix,
                                                      spec.normalize, spec.max_seq_length, spec.revision))
        if key not in self._encoders:
            if address:
                from irforge.models.client import RemoteEncoder

                encoder = RemoteEncoder(address)
                self.stack.callback(encoder.close)
                self._encoders[key] = encoder, f"grpc {address}"
            else:
                from irforge.models.encoder import EncoderCore

                self._encoders[key] = EncoderCore(spec), "in-process"
        return self._encoders[key]

    def build(self, spec: RerankerSpec):
        if spec.kind == "bm25":
            return Bm25Scorer(spec, self.corpus, self.progress, self.needed)
        if spec.kind == "dense":
            if spec.target.startswith("grpc://"):
                encoder, location = self.encoder(self.base, address=spec.target.removeprefix("grpc://"))
            else:
                encoder, location = self.encoder(dense_encoder_spec(spec, self.base))
            return DenseScorer(spec, encoder, self.cache, self.progress, location)
        if spec.kind == "cross-encoder":
            from irforge.models.reranker import CrossEncoderReranker
            from irforge.models.reranker import RerankerSpec as CrossEncoderSpec

            return PairwiseScorer(spec, CrossEncoderReranker(CrossEncoderSpec(
                model=spec.target, max_length=_number(spec, "max_length", int), device=self.base.device,
                precision=self.base.precision)), self.progress)
        if spec.kind == "endpoint":
            from irforge.endpoints.rerank import GrpcReranker, HttpReranker
            from irforge.endpoints.spec import EndpointSpec

            endpoint = EndpointSpec.from_file(Path(spec.target))
            kinds = {"rerank-http": HttpReranker, "rerank-grpc": GrpcReranker}
            if endpoint.kind not in kinds:
                raise ValueError(f"--reranker {spec.text!r}: needs a rerank-http or rerank-grpc spec, {endpoint.source} has {endpoint.kind}")
            reranker = kinds[endpoint.kind](endpoint)
            self.stack.callback(reranker.close)
            return PairwiseScorer(spec, reranker, self.progress)
        from irforge.models.listwise import ListwiseLLMReranker

        return PairwiseScorer(spec, ListwiseLLMReranker(
            spec.target, spec.options["model"], api_key_env=spec.options.get("api_key_env"),
            window=_number(spec, "window", int, 20), step=_number(spec, "step", int, 10)), self.progress)
