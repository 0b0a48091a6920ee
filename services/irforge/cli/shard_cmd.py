"""`irforge shard-worker`: encode one shard (a local process or a Kubernetes pod);
`irforge encode-shards`: plan, run every shard (local processes), merge into the embedding cache."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from irforge.cli.options import add_config_options, section_from_args
from irforge.config import PipelineConfig
from irforge.data.errors import DataFormatError
from irforge.models.errors import ModelError

INDEX_VARIABLE = "JOB_COMPLETION_INDEX"  # set by Kubernetes in every pod of an Indexed Job
SPARSE_HELP = "--model is a sentence-transformers SparseEncoder (SPLADE): sparse vectors, for --retriever sparse"


def add_parser(subparsers) -> None:
    worker = subparsers.add_parser(
        "shard-worker", help="encode one shard of a corpus into a work folder (one process or pod per shard)",
        description="Encode documents of shard I of N of the corpus (contiguous, sizes differing by at most one) "
        "into WORKDIR/shard-I-of-N.npy + .json, atomically. A complete output for the same corpus and encoder is "
        "kept (exit 0 at once). Exit status 2: bad input or configuration (retrying cannot help).")
    worker.add_argument("--dataset", type=Path, required=True, help="BEIR folder (corpus.jsonl)")
    worker.add_argument("--shard-count", type=int, required=True, help="N: the number of shards the corpus is split into")
    worker.add_argument("--shard-index", type=int, help=f"this worker's shard (default ${INDEX_VARIABLE}, set by Kubernetes)")
    worker.add_argument("--out", type=Path, required=True, help="work folder shared with the coordinator")
    worker.add_argument("--total-documents", type=int, help="documents in the corpus (default: counted)")
    worker.add_argument("--fingerprint", help="expected sha256 of the corpus file: refuse to encode other bytes")
    worker.add_argument("--force", action="store_true", help="re-encode even if a complete output exists")
    add_config_options(worker, PipelineConfig, sections=("encoder",))
    worker.add_argument("--sparse", action="store_true", help=SPARSE_HELP)
    worker.set_defaults(handler=run_worker)

    encode = subparsers.add_parser(
        "encode-shards", help="encode a corpus into the embedding cache in shards (local processes)",
        description="Split the corpus into N shards, run `irforge shard-worker` for each (at most --parallel at "
        "once, failed shards retried), merge every shard into the embedding cache. `irforge eval --retriever dense` "
        "with the same encoder flags then encodes no document.")
    encode.add_argument("--dataset", type=Path, required=True, help="BEIR folder (corpus.jsonl)")
    encode.add_argument("--shards", type=int, required=True, help="number of shards")
    encode.add_argument("--work-dir", type=Path, required=True, help="folder for shard outputs and worker logs")
    encode.add_argument("--parallel", type=int, default=1, help="workers at once (default 1)")
    encode.add_argument("--retries", type=int, default=1, help="reruns of a failed shard (default 1)")
    encode.add_argument("--embedding-cache", type=Path, help="embedding cache file (default $IRFORGE_CACHE_DIR or the user cache dir)")
    add_config_options(encode, PipelineConfig, sections=("encoder",))
    encode.add_argument("--sparse", action="store_true", help=SPARSE_HELP)
    encode.set_defaults(handler=run_encode_shards)


def _fail(command: str, error: Exception) -> int:
    print(f"irforge {command}: error: {error}", file=sys.stderr, flush=True)
    return 2


def shard_index_from(args: argparse.Namespace) -> int:
    if args.shard_index is not None:
        return args.shard_index
    value = os.environ.get(INDEX_VARIABLE)
    if value is None:
        raise ValueError(f"--shard-index is required (or ${INDEX_VARIABLE}, which Kubernetes Indexed Jobs set)")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"${INDEX_VARIABLE} must be an integer, got {value!r}") from None


def worker_corpus_facts(args: argparse.Namespace):
    """The corpus facts, checked against the plan's. A matching fingerprint vouches for the
    plan's document count (same bytes): no second pass to count them."""
    from irforge.data import BeirDataset
    from irforge.sharding.corpus_facts import CorpusFacts, count_documents
    from irforge.sharding.errors import ShardingError

    dataset = BeirDataset.open(args.dataset)
    fingerprint = dataset.corpus_fingerprint()
    if args.fingerprint and fingerprint != args.fingerprint:
        raise ShardingError(f"corpus {args.dataset} has sha256 {fingerprint}, the plan expects {args.fingerprint}: "
                            f"the dataset changed since the shards were planned")
    if args.fingerprint and args.total_documents is not None:
        total = args.total_documents
    else:
        total = count_documents(dataset)
        if args.total_documents is not None and args.total_documents != total:
            raise ShardingError(f"corpus {args.dataset} has {total} documents, the plan counted {args.total_documents}")
    return CorpusFacts(dataset.name, dataset.corpus_path.name, fingerprint, total)


def encoder_settings(args: argparse.Namespace, command: str):
    """(the encoder section the flags give, its EncoderSpec), checked before any work."""
    from irforge.builder.pipeline import encoder_spec
    from irforge.config.pipeline import EncoderConfig

    encoder = section_from_args(args, EncoderConfig)
    if encoder.ray:
        raise ValueError(f"--ray is not for {command}: each worker loads its own model")
    if encoder.max_active_dims is not None and not args.sparse:
        raise ValueError("--max-active-dims applies to a sparse model: add --sparse")
    return encoder, encoder_spec(encoder)


def worker_encoder(args: argparse.Namespace, spec, max_active_dims: int | None = None):
    """The shard worker's encoder: dense (EncoderCore) or, with --sparse, a SparseEncoderCore."""
    if args.sparse:
        from irforge.models.sparse_encoder import SparseEncoderCore

        return SparseEncoderCore(spec, max_active_dims)
    from irforge.models.encoder import EncoderCore

    return EncoderCore(spec)


def run_worker(args: argparse.Namespace) -> int:
    from irforge.common.progress import tqdm_progress
    from irforge.sharding.errors import ShardingError
    from irforge.sharding.plan import shard_for
    from irforge.sharding.worker import encode_shard, log

    try:
        encoder, spec = encoder_settings(args, "shard workers")
        index = shard_index_from(args)
        facts = worker_corpus_facts(args)     # before the model: a wrong corpus fails in a second
        shard = shard_for(facts.total_documents, args.shard_count, index)
        log(f"{shard.describe()} of {facts.dataset} ({facts.total_documents} documents) -> {args.out}")
        result = encode_shard(args.dataset, shard, facts, spec, worker_encoder(args, spec, encoder.max_active_dims), args.out, force=args.force,
                              progress=tqdm_progress)
    except (ShardingError, ValueError, DataFormatError, ModelError) as error:
        return _fail("shard-worker", error)
    if result.skipped:
        log(f"{shard.describe()}: complete output already there; nothing to do")
    else:
        rate = result.documents_encoded / result.seconds if result.seconds else 0.0
        log(f"{shard.describe()}: encoded {result.documents_encoded} documents ({result.empty_documents} empty, "
            f"not encoded) in {result.seconds:.1f} s, {rate:.1f} documents/s")
    return 0


def run_encode_shards(args: argparse.Namespace) -> int:
    from irforge.common.progress import tqdm_progress
    from irforge.models.cache import default_cache_path
    from irforge.sharding import ShardingError, encode_corpus_in_shards, make_shard_runner

    try:
        encoder, spec = encoder_settings(args, "sharded encoding")
        runner = make_shard_runner("local", max_parallel=args.parallel, retries=args.retries)
        report = encode_corpus_in_shards(args.dataset, spec, args.embedding_cache or default_cache_path(), args.shards,
                                         runner, args.work_dir, progress=tqdm_progress, sparse=args.sparse,
                                         max_active_dims=encoder.max_active_dims)
    except (ShardingError, ValueError, DataFormatError, ModelError) as error:
        return _fail("encode-shards", error)
    print(json.dumps(report.as_dict(), indent=2))
    return 0
