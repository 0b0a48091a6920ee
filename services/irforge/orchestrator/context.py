"""What a step works with: the spec, the job folder, the outputs of earlier steps, and clients of
the services (opened on first use, each call under a deadline), built the way `irforge eval`
builds its pipeline so the two produce the same runs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from irforge.common.progress import ProgressFactory
from irforge.corpus.client import RemoteCorpus
from irforge.corpus.settings import Bm25Settings
from irforge.corpus.vectors.base import HnswSettings
from irforge.data import BeirDataset
from irforge.data.types import Query
from irforge.orchestrator.errors import JobSpecError
from irforge.orchestrator.spec import JobSpec
from irforge.pipeline.retrievers.hybrid import FusionSettings


@dataclass(frozen=True)
class ServiceAddresses:
    """Where the services are (HOST:PORT; None = not configured) and how long a call may take."""

    corpus: str | None = None
    evaluator: str | None = None
    encoder: str | None = None
    judge: str | None = None
    call_timeout_s: float = 600.0           # every call (a search or vector batch, an evaluation, a model call)
    long_call_timeout_s: float = 6 * 3600.0  # the calls whose work grows with the corpus: Ingest, a judge batch
    shard_runner: str = "local"             # big-corpus encoding: "local" processes or "kubernetes" Jobs
    shard_options: dict = field(default_factory=dict)

    def required(self, role: str) -> str:
        address = getattr(self, role)
        if not address:
            raise JobSpecError(f"this job needs the {role} service, and the orchestrator has no --{role}-server "
                               f"(or IRFORGE_{role.upper()}_SERVER) configured")
        return address

    def describe(self) -> str:
        return " ".join(f"{role}={getattr(self, role)}" for role in ("corpus", "evaluator", "encoder", "judge")
                        if getattr(self, role))


class DeadlineCorpus(RemoteCorpus):
    """RemoteCorpus whose Ingest stream has a deadline: a job must never wait forever on a silent
    service (the stock client leaves it open-ended for interactive use)."""

    def __init__(self, address: str, timeout: float, ingest_timeout: float):
        super().__init__(address, timeout=timeout, ingest_timeout=ingest_timeout)


@dataclass
class StepContext:
    job_id: str
    spec: JobSpec
    job_dir: Path
    services: ServiceAddresses
    progress: ProgressFactory
    lock: Callable[[str], AbstractContextManager]
    outputs: dict[str, dict]                 # outputs of the steps already done
    durations: dict[str, float]              # their run times
    cache_path: Path                         # the embedding cache shared by every job
    cancel_event: threading.Event = field(default_factory=threading.Event)  # set when the job is cancelled or stopped
    stack: ExitStack = field(default_factory=ExitStack)
    results_dir: Path | None = None          # where the evaluate step writes its set (default job_dir/results)
    members: dict = field(default_factory=dict)   # a suite job's contexts, one per dataset label

    def __post_init__(self):
        if self.results_dir is None:
            self.results_dir = self.job_dir / "results"

    def for_member(self, label: str) -> StepContext:
        """A suite job's context for one dataset: that dataset's spec, its own work folder and
        results folder (results/<label>), the outputs of its own steps under their plain names.
        Kept per label, so its dataset is fingerprinted and its clients opened once; the clients
        close with the job's."""
        if label not in self.members:
            member = next(m for m in self.spec.datasets if m.label == label)
            self.members[label] = StepContext(
                job_id=self.job_id, spec=self.spec.member_spec(member), job_dir=self.job_dir / "datasets" / label,
                services=self.services, progress=self.progress, lock=self.lock, outputs={}, durations={},
                cache_path=self.cache_path, cancel_event=self.cancel_event, stack=self.stack,
                results_dir=self.results_dir / label)
            self.members[label].job_dir.mkdir(parents=True, exist_ok=True)
        context = self.members[label]
        prefix = f"{label}/"
        context.outputs = {name[len(prefix):]: output for name, output in self.outputs.items() if name.startswith(prefix)}
        context.durations = {name[len(prefix):]: value for name, value in self.durations.items() if name.startswith(prefix)}
        return context

    # -- the data -----------------------------------------------------------------------------
    @cached_property
    def dataset(self) -> BeirDataset:
        return BeirDataset.open(Path(self.spec.dataset))

    @cached_property
    def fingerprint(self) -> str:
        return self.dataset.corpus_fingerprint()

    @cached_property
    def qrels(self):
        return self.dataset.qrels(self.spec.split)

    @cached_property
    def queries(self) -> list[Query]:
        return [q for q in self.dataset.queries() if q.query_id in self.qrels]

    @cached_property
    def judged(self) -> set[str]:
        return {doc_id for judged in self.qrels.values() for doc_id in judged}

    @property
    def mode(self) -> str:
        return f"orchestrator job {self.job_id}: {self.services.describe()}"

    # -- clients ------------------------------------------------------------------------------
    def _closing(self, client):
        self.stack.callback(client.close)
        return client

    @cached_property
    def corpus(self) -> DeadlineCorpus:
        return self._closing(DeadlineCorpus(self.services.required("corpus"), timeout=self.services.call_timeout_s,
                                            ingest_timeout=self.services.long_call_timeout_s))

    def evaluator(self):
        from irforge.evaluator.client import RemoteEvaluator

        return self._closing(RemoteEvaluator(self.services.required("evaluator"), timeout=self.services.call_timeout_s))

    @cached_property
    def endpoint(self):
        if not self.spec.endpoint:
            return None
        from irforge.endpoints.spec import EndpointSpec

        return EndpointSpec.from_file(Path(self.spec.endpoint))

    @cached_property
    def cache(self):
        from irforge.models.cache import EmbeddingCache

        return self._closing(EmbeddingCache(self.cache_path))

    @property
    def sparse(self) -> bool:
        """A learned sparse first stage (or hybrid with one), as `irforge eval` decides it."""
        return not self.endpoint and (self.spec.retriever == "sparse"
                                      or (self.spec.retriever == "hybrid" and self.spec.hybrid_with == "sparse"))

    def _encoder(self):
        endpoint = self.endpoint
        if endpoint is not None and endpoint.kind == "openai-embeddings":
            from irforge.endpoints.embeddings import EndpointEncoder

            return EndpointEncoder(endpoint), f"endpoint {endpoint.public()['host']}"
        from irforge.models.client import remote_encoder

        address = self.services.required("encoder")
        encoder = self._closing(remote_encoder(address, self.sparse, model=self.spec.model, timeout=self.services.call_timeout_s))
        return encoder, f"grpc {address}"

    # -- retrievers, as build.build_pipeline makes them ---------------------------------------
    def lexical(self):
        from irforge.pipeline.retrievers.bm25 import Bm25Retriever

        return Bm25Retriever(self.corpus, Bm25Settings(k1=self.spec.k1, b=self.spec.b), self.progress)

    def dense(self):
        """The vector retriever: dense, or learned sparse (SparseRetriever) when the spec asks for it."""
        from irforge.pipeline.retrievers.dense import DenseRetriever

        encoder, location = self._encoder()
        if self.sparse:
            from irforge.pipeline.retrievers.sparse import SparseRetriever

            return SparseRetriever(self.corpus, encoder, self.cache, self.progress, encoder_location=location)
        hnsw = HnswSettings(m=self.spec.hnsw_m, ef_construct=self.spec.hnsw_ef_construct, ef_search=self.spec.hnsw_ef)
        return DenseRetriever(self.corpus, encoder, self.cache, self.progress, exact=self.spec.search == "exact",
                              hnsw=hnsw, encoder_location=location)

    def first_stage(self):
        endpoint = self.endpoint
        if endpoint is not None and endpoint.kind.startswith("search-"):
            from irforge.endpoints.search import (
                GrpcSearchRetriever,
                HttpSearchRetriever,
            )

            return {"search-http": HttpSearchRetriever, "search-grpc": GrpcSearchRetriever}[endpoint.kind](endpoint, self.progress)
        if endpoint is not None and endpoint.kind != "openai-embeddings":
            raise JobSpecError(f"job spec field 'endpoint': {endpoint.source} is a {endpoint.kind} endpoint; "
                               "rerank endpoints go in reranker.endpoint")
        if self.spec.retriever == "bm25" and endpoint is None:
            return self.lexical()
        if self.spec.retriever == "hybrid":
            from irforge.pipeline.retrievers.hybrid import HybridRetriever

            fusion = FusionSettings(method=self.spec.fusion, rrf_k=self.spec.rrf_k, weights=tuple(self.spec.fusion_weights))
            return HybridRetriever(self.lexical(), self.dense(), fusion)
        return self.dense()

    def reranker(self):
        if self.spec.reranker_model:
            from irforge.models.reranker import CrossEncoderReranker, RerankerSpec

            return CrossEncoderReranker(RerankerSpec(model=self.spec.reranker_model))
        from irforge.endpoints.rerank import GrpcReranker, HttpReranker
        from irforge.endpoints.spec import EndpointSpec

        spec = EndpointSpec.from_file(Path(self.spec.reranker_endpoint))
        kinds = {"rerank-http": HttpReranker, "rerank-grpc": GrpcReranker}
        if spec.kind not in kinds:
            raise JobSpecError(f"job spec field 'reranker.endpoint': needs kind rerank-http or rerank-grpc, {spec.source} has {spec.kind}")
        return self._closing(kinds[spec.kind](spec))

    # -- big corpora and hole filling ---------------------------------------------------------
    def encode_in_shards(self, dense, collection_id: str) -> dict:
        """Fill the embedding cache shard by shard (local processes, or a Kubernetes Indexed Job),
        so the dense indexing after it encodes nothing.

        The shards' work folder sits beside the embedding cache, on the volume shard pods mount
        (the chart's cache claim), one per (corpus, encoder): a resumed or later job on the same
        corpus and model reuses finished shards."""
        from irforge.sharding import encode_corpus_in_shards, make_shard_runner

        described = dense.encoder.describe()
        encoder_spec = worker_encoder_spec(described)
        runner = make_shard_runner(self.services.shard_runner, **self.services.shard_options)
        report = encode_corpus_in_shards(Path(self.spec.dataset), encoder_spec, self.cache_path, self.spec.shards, runner,
                                         self.cache_path.parent / "shards" / collection_id, progress=self.progress,
                                         encoder_key=dense.encoder.identity_key, cancel=self.cancel_event,
                                         sparse=described.get("kind") == "sparse",
                                         max_active_dims=described.get("max_active_dims"))
        return report.as_dict()

    def judge(self):
        """The judge of the job: its own judge spec file (run here, keys from this process'
        environment), else the judge service."""
        if self.spec.judge:
            from irforge.judge.factory import open_judge

            return self._closing(open_judge(Path(self.spec.judge))), "in the orchestrator"
        from irforge.judge.client import RemoteJudge

        address = self.services.required("judge")
        return self._closing(RemoteJudge(address, timeout=self.services.long_call_timeout_s)), f"judge service {address}"

    def close(self) -> None:
        self.stack.close()


def worker_encoder_spec(described: dict):
    """The EncoderSpec shard workers load: the model the encoder service serves, configured as it
    is (the sharding code refuses their vectors if the identity key still differs)."""
    from irforge.models.encoder import EncoderSpec

    revision = described.get("revision")
    return EncoderSpec(model=described["model"],
                       # "sha256:..." is a folder's weights digest the worker recomputes, not a hub revision
                       revision=None if str(revision).startswith("sha256:") else revision,
                       query_prefix=described.get("query_prefix", ""), passage_prefix=described.get("passage_prefix", ""),
                       normalize=bool(described.get("normalize", True)), max_seq_length=described.get("max_seq_length"))
