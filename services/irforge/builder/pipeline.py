"""The one builder: a validated PipelineConfig to retrievers, a reranker and an evaluator, in
process or over the services. `irforge eval`, `eval-instructions`, `bench`, the Python API and
every orchestrator step build through it, so they cannot drift.

Where the parts run is a `Placement`: from the configuration's `services` section (the command
line), or the orchestrator's own services with deadlines on every call (a job). Each part is made
once per builder and closed with the caller's ExitStack.
"""

from __future__ import annotations

import dataclasses
from contextlib import ExitStack
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from irforge.common.progress import ProgressFactory, tqdm_progress
from irforge.config import ConfigError, PipelineConfig, validate
from irforge.config.pipeline import DEFAULT_MODEL, EncoderConfig, StoresConfig
from irforge.config.rules import sparse_only


def missing_service(role: str) -> str:
    """What a job is told when the orchestrator has no address for a service it needs."""
    return (f"this job needs the {role} service, and the orchestrator has no --{role}-server "
            f"(or IRFORGE_{role.upper()}_SERVER) configured")


@dataclass(frozen=True)
class Placement:
    """Where the services are (HOST:PORT; None = in this process) and the deadlines of their calls
    (None: the clients' own). `remote_only`: a part with no address is an error naming `role`'s
    setting, not an in-process one (an orchestrator's jobs run on its services)."""
    corpus: str | None = None
    evaluator: str | None = None
    encoder: str | None = None
    call_timeout_s: float | None = None
    long_call_timeout_s: float | None = None
    remote_only: bool = False

    @classmethod
    def of(cls, config: PipelineConfig) -> Placement:
        services = config.services
        return cls(corpus=services.corpus, evaluator=services.evaluator, encoder=services.encoder)

    def address(self, role: str) -> str | None:
        address = getattr(self, role)
        if not address and self.remote_only:
            raise ConfigError(missing_service(role))
        return address

    def timeouts(self, long: bool = False) -> dict:
        value = self.long_call_timeout_s if long else self.call_timeout_s
        return {} if value is None else {"timeout": value}


class PipelineBuilder:
    """The parts of the pipeline a configuration asks for (see the module docstring)."""

    def __init__(self, config: PipelineConfig, stack: ExitStack, *, placement: Placement | None = None,
                 progress: ProgressFactory = tqdm_progress, embedding_cache: Path | None = None):
        self.config = config
        self.stack = stack
        self.placement = placement if placement is not None else Placement.of(config)
        self.progress = progress
        self._cache_path = embedding_cache

    def _closing(self, client):
        self.stack.callback(client.close)
        return client

    # -- settings -----------------------------------------------------------------------------
    def bm25_settings(self):
        from irforge.corpus.settings import Bm25Settings

        return Bm25Settings(k1=self.config.bm25.k1, b=self.config.bm25.b)

    def encoder_spec(self):
        return encoder_spec(self.config.encoder)

    def hnsw_settings(self):
        from irforge.corpus.vectors.base import HnswSettings

        vectors = self.config.vectors
        return HnswSettings(m=vectors.hnsw_m, ef_construct=vectors.hnsw_ef_construct, ef_search=vectors.hnsw_ef)

    def fusion_settings(self, runs: int = 2):
        """The fusion of `runs` runs: the configuration's weights, or (left at their default) 1 for each."""
        from irforge.config.pipeline import FusionConfig
        from irforge.pipeline.retrievers.fused import FusionSettings

        fusion = self.config.fusion
        weights = tuple(fusion.weights) if runs == 2 or fusion.weights != FusionConfig().weights else None
        return FusionSettings(method=fusion.method, rrf_k=fusion.rrf_k, weights=weights, depth=fusion.depth,
                              norm=fusion.norm)

    def weight_tuning(self):
        """The weight search --fusion-optimize-on asks for, scored by this builder's evaluator; None without it."""
        fusion = self.config.fusion
        if fusion.optimize_on is None:
            return None
        from irforge.fusion.optimise import WeightSearch
        from irforge.pipeline.retrievers.fused import WeightTuning

        return WeightTuning(WeightSearch(fusion.optimize_on, fusion.optimize_measure, fusion.grid_step), self.evaluator,
                            drop_identical_ids=not self.config.evaluation.keep_identical_ids)

    # -- what the endpoint is -----------------------------------------------------------------
    def _endpoint_spec(self, path: str):
        """An endpoint spec file with the configuration's --endpoint-* overrides applied (to the
        first-stage endpoint and to a reranker endpoint alike, as the flags always did)."""
        from irforge.endpoints.spec import EndpointSpec

        overrides = self.config.endpoint
        return EndpointSpec.from_file(Path(path)).with_overrides(
            url=overrides.url, model=overrides.model, batch_size=overrides.batch_size,
            max_concurrency=overrides.max_concurrency, request_budget=overrides.request_budget)

    @cached_property
    def endpoint(self):
        """The team endpoint's spec with the configuration's overrides, or None."""
        if self.config.endpoint.spec is None:
            return None
        spec = self._endpoint_spec(self.config.endpoint.spec)
        if spec.kind.startswith("rerank-"):
            raise ConfigError(f"{spec.source} is a {spec.kind} endpoint: pass it with --reranker-endpoint")
        return spec

    @property
    def embeddings_endpoint(self) -> bool:
        return self.endpoint is not None and self.endpoint.kind == "openai-embeddings"

    @property
    def search_endpoint(self) -> bool:
        return self.endpoint is not None and self.endpoint.kind.startswith("search-")

    @property
    def needs_vectors(self) -> bool:
        if self.config.given_run:
            return False
        return (self.config.retriever in ("dense", "hybrid", "sparse") and self.endpoint is None) or self.embeddings_endpoint

    # -- services -----------------------------------------------------------------------------
    @cached_property
    def corpus(self):
        address = self.placement.address("corpus")
        if address:
            from irforge.corpus.client import RemoteCorpus

            # Ingest's deadline: the placement's long one (None: the client's, open-ended).
            client = RemoteCorpus(address, **self.placement.timeouts(), ingest_timeout=self.placement.long_call_timeout_s)
        else:
            from irforge.corpus.core import CorpusService
            from irforge.corpus.lexical import make_backend

            stores = self.config.stores
            vectors = None
            if self.needs_vectors:
                from irforge.corpus.vectors import SPARSE_ONLY

                if self.config.vectors.backend in SPARSE_ONLY and not self.config.sparse:
                    raise ConfigError(sparse_only(self.config.vectors.backend))   # an embeddings endpoint's vectors too
                vectors = vector_backend(self.config.vectors.backend, stores, self.config.vectors.exact_precision)
            client = CorpusService(make_backend(self.config.bm25.backend, index_dir=stores.index_dir,
                                                elasticsearch_url=stores.elasticsearch_url), vectors)
        return self._closing(client)

    @cached_property
    def evaluator(self):
        address = self.placement.address("evaluator")
        if address:
            from irforge.evaluator.client import RemoteEvaluator

            return self._closing(RemoteEvaluator(address, **self.placement.timeouts()))
        from irforge.evaluator.core import Evaluator

        return Evaluator()

    @cached_property
    def cache(self):
        from irforge.models.cache import EmbeddingCache, default_cache_path

        stored = self.config.stores.embedding_cache
        path = self._cache_path or (Path(stored) if stored else default_cache_path())
        return self._closing(EmbeddingCache(path))

    def encoder(self):
        """(encoder, where it runs): the team's embeddings endpoint, a remote gRPC Encoder, a Ray
        Serve deployment on loopback, or in-process; a SparseEncoder for a learned sparse stage."""
        if self.embeddings_endpoint:
            from irforge.endpoints.embeddings import EndpointEncoder

            return EndpointEncoder(self.endpoint), f"endpoint {self.endpoint.public()['host']}"
        sparse = self.config.sparse
        address = self.placement.address("encoder")
        if address:
            return self._remote_encoder(address, sparse)
        return local_encoder(self.encoder_spec(), self.config.encoder.ray, self.stack, sparse,
                             self.config.encoder.max_active_dims)

    def _remote_encoder(self, address: str, sparse: bool):
        from irforge.models.client import remote_encoder

        wanted = self.config.encoder.max_active_dims
        encoder = self._closing(remote_encoder(address, sparse, model=self.config.encoder.model or "",
                                               **self.placement.timeouts()))
        if sparse and wanted is not None and encoder.identity["max_active_dims"] != wanted:
            raise ConfigError(f"--max-active-dims {wanted}: the encoder server {address} serves {encoder.name} with "
                              f"max_active_dims {encoder.identity['max_active_dims']} (set it where the server starts: "
                              "irforge service models --sparse --max-active-dims N)")
        return encoder, f"grpc {address}"

    # -- retrievers ---------------------------------------------------------------------------
    def lexical(self):
        from irforge.pipeline.retrievers.bm25 import Bm25Retriever

        return Bm25Retriever(self.corpus, self.bm25_settings(), self.progress, language=self.config.bm25.language)

    def vector(self):
        """The vector retriever: dense, or learned sparse (SparseRetriever) when the configuration asks for it."""
        encoder, location = self.encoder()
        if self.config.sparse:
            from irforge.pipeline.retrievers.sparse import SparseRetriever

            return SparseRetriever(self.corpus, encoder, self.cache, self.progress, encoder_location=location)
        from irforge.pipeline.retrievers.dense import DenseRetriever

        vectors = self.config.vectors
        return DenseRetriever(self.corpus, encoder, self.cache, self.progress, exact=vectors.search == "exact",
                              hnsw=self.hnsw_settings(), encoder_location=location, recall_queries=vectors.recall_queries,
                              target_recall=vectors.target_recall)

    def given_run(self):
        """The run file of --run as the system, read (and checked line by line) now, before any work;
        several --run files fused (irforge.fusion) into one system, weighted in their order."""
        from irforge.pipeline.retrievers.given import GivenRunRetriever
        from irforge.runs import read_run_file, run_labels

        given = self.config.given
        retrievers = [GivenRunRetriever(read_run_file(path, given.run_format)) for path in given.runs]
        if len(retrievers) == 1:
            return retrievers[0]
        from irforge.pipeline.retrievers.fused import FusedRetriever

        return FusedRetriever(list(zip(run_labels(given.runs), retrievers)), self.fusion_settings(len(retrievers)),
                              self.weight_tuning())

    def first_stage(self):
        """Retrieval before any reranking: given candidates, a run file, a search endpoint, BM25, dense/sparse, or
        their fusion."""
        rerank = self.config.rerank
        if rerank.candidates is not None:
            from irforge.pipeline.retrievers.candidates import CandidatesRetriever

            return CandidatesRetriever(rerank.candidates, rerank.candidates_format)
        if self.config.given_run:
            return self.given_run()
        if self.search_endpoint:
            from irforge.endpoints.search import GrpcSearchRetriever, HttpSearchRetriever

            kinds = {"search-http": HttpSearchRetriever, "search-grpc": GrpcSearchRetriever}
            return kinds[self.endpoint.kind](self.endpoint, self.progress)
        if self.endpoint is None and self.config.retriever == "bm25":
            return self.lexical()
        if self.config.retriever == "hybrid":
            from irforge.pipeline.retrievers.hybrid import HybridRetriever

            return HybridRetriever(self.lexical(), self.vector(), self.fusion_settings(), self.weight_tuning())
        return self.vector()

    def reranker(self):
        """The reranker the configuration asks for, or None."""
        rerank = self.config.rerank
        if rerank.model:
            from irforge.models.reranker import CrossEncoderReranker, RerankerSpec

            spec = RerankerSpec(model=rerank.model, device=self.config.encoder.device, precision=self.config.encoder.precision)
            if self.config.encoder.ray:
                from irforge.models.reranker_serve import (DEFAULT_APP_NAME, RayReranker, RerankerDeploymentConfig,
                                                           start_reranker_app)
                from irforge.models.serve import release_local_ray, start_local_ray

                self.stack.callback(release_local_ray, start_local_ray(), DEFAULT_APP_NAME)
                return RayReranker(start_reranker_app(spec, RerankerDeploymentConfig()))
            return CrossEncoderReranker(spec)
        if rerank.endpoint:
            from irforge.endpoints.rerank import GrpcReranker, HttpReranker

            spec = self._endpoint_spec(rerank.endpoint)
            kinds = {"rerank-http": HttpReranker, "rerank-grpc": GrpcReranker}
            if spec.kind not in kinds:
                raise ConfigError(f"--reranker-endpoint needs kind rerank-http or rerank-grpc, {spec.source} has {spec.kind}")
            return self._closing(kinds[spec.kind](spec))
        if rerank.listwise_llm:
            from irforge.models.listwise import ListwiseLLMReranker

            return ListwiseLLMReranker(rerank.listwise_llm, rerank.listwise_model, api_key_env=rerank.listwise_api_key_env)
        return None

    def retriever(self):
        """The whole retriever: the first stage, reranked when the configuration asks."""
        first = self.first_stage()
        reranker = self.reranker()
        if reranker is None:
            return first
        from irforge.pipeline.retrievers.rerank import RerankingRetriever

        return RerankingRetriever(first, reranker, depth=self.config.rerank.depth, progress=self.progress)

    def instruction_retriever(self, collections, use: str = "eval-instructions"):
        """eval-instructions' retriever: FollowIR's protocol when the collections bring their own
        candidates (collection_candidates), those reranked in every mode; else retriever()."""
        if not collection_candidates(self.config, collections, use):
            return self.retriever()
        from irforge.pipeline.retrievers.candidates import CandidatesRetriever
        from irforge.pipeline.retrievers.rerank import RerankingRetriever

        return RerankingRetriever(CandidatesRetriever(), self.reranker(), depth=self.config.rerank.depth,
                                  progress=self.progress)

    def mode(self) -> str:
        """Where the parts ran, as results.json records it."""
        addresses = {"corpus": self.placement.corpus, "evaluator": self.placement.evaluator}
        if self.needs_vectors:
            addresses["encoder"] = self.placement.encoder
        if not any(addresses.values()):
            return "in-process"
        return " ".join(f"{role}={address or 'in-process'}" for role, address in addresses.items())


def collection_candidates(config: PipelineConfig, collections, use: str = "eval-instructions") -> bool:
    """Whether instruction-following collections are evaluated as FollowIR publishes them: a reranker,
    no --candidates, and a top_ranked.jsonl in every dimension, whose candidates are reranked per
    mode instead of retrieving over the full corpus. The options of a retrieving first stage are
    then refused as with --candidates; top_ranked in some dimensions only is refused."""
    if not config.has_reranker or config.rerank.candidates is not None:
        return False
    having = [collection.dimension for collection in collections if collection.top_ranked_path is not None]
    if not having:
        return False
    if len(having) < len(collections):
        lacking = [collection.dimension for collection in collections if collection.top_ranked_path is None]
        raise ConfigError(f"top_ranked.jsonl in {', '.join(having)} but not in {', '.join(lacking)}: with a reranker, "
                          "FollowIR's protocol reranks every dimension's own candidates; give every dimension one, or "
                          "--candidates FILE for all")
    validate(dataclasses.replace(config, rerank=dataclasses.replace(config.rerank, candidates="top_ranked.jsonl")), use)
    return True


def encoder_spec(encoder: EncoderConfig):
    """The EncoderSpec an encoder section asks for (the default model when it names none)."""
    from irforge.models.encoder import EncoderSpec

    return EncoderSpec(model=encoder.model_name, revision=encoder.revision, query_prefix=encoder.query_prefix,
                       passage_prefix=encoder.passage_prefix, normalize=encoder.normalize,
                       max_seq_length=encoder.max_seq_length, batch_size=encoder.batch_size, device=encoder.device,
                       precision=encoder.precision, backend=encoder.backend, backend_precision=encoder.backend_precision)


def vector_backend(backend: str, stores: StoresConfig, exact_precision: str = "float32"):
    """The vector backend named `backend` (embedded, qdrant, elasticsearch) at the stores' locations."""
    from irforge.corpus.vectors import make_vector_backend

    return make_vector_backend(backend, vector_dir=stores.vector_dir, qdrant_url=stores.qdrant_url,
                               elasticsearch_url=stores.elasticsearch_url, exact_precision=exact_precision)


def local_encoder(spec, use_ray: bool, stack: ExitStack, sparse: bool = False, max_active_dims: int | None = None):
    """(encoder, where it runs): a Ray Serve deployment on loopback, or the core in-process; a
    SparseEncoder (SPLADE) when `sparse`, keeping `max_active_dims` weights per vector."""
    if use_ray:
        from irforge.common.extras import require_extra

        require_extra("platform", "ray", "--ray (models on Ray Serve)")
        from irforge.models.serve import (DEFAULT_APP_NAME, EncoderDeploymentConfig, release_local_ray,
                                          start_encoder_app, start_local_ray)
        from irforge.models.serve_client import RayEncoder, RaySparseEncoder

        # A Ray this process already runs (a notebook's, a test session's) keeps running afterwards.
        stack.callback(release_local_ray, start_local_ray(), DEFAULT_APP_NAME)
        handle = start_encoder_app(spec, EncoderDeploymentConfig(), kind="sparse" if sparse else "dense",
                                   max_active_dims=max_active_dims)
        return (RaySparseEncoder if sparse else RayEncoder)(handle), "ray-serve (local, loopback)"
    if sparse:
        from irforge.models.sparse_encoder import SparseEncoderCore

        return SparseEncoderCore(spec, max_active_dims), "in-process"
    from irforge.models.encoder import EncoderCore

    return EncoderCore(spec), "in-process"


__all__ = ["DEFAULT_MODEL", "Placement", "missing_service", "PipelineBuilder", "collection_candidates", "encoder_spec",
           "local_encoder", "vector_backend"]
