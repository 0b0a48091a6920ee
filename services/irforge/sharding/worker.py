"""Encode one shard: skip the corpus to the shard's first document, encode its documents,
commit `shard-<i>-of-<n>` in the work folder (see output.py). Run by `irforge shard-worker`,
one process (or Kubernetes pod) per shard.

A worker whose shard already has a complete output for the same corpus bytes and encoder skips
it, so a retried pod or a rerun job redoes nothing; `force` re-encodes and replaces it atomically.
Memory is bounded by one chunk of documents: nothing of the corpus is accumulated.
A sparse encoder (SparseEncoderCore, `kind == "sparse"`) writes a sparse shard (see output.py).
"""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from irforge.common.iterables import chunked
from irforge.common.progress import ProgressFactory, no_progress
from irforge.data import BeirDataset
from irforge.models.cache import text_hash
from irforge.models.cached_encoding import Encoder
from irforge.models.encoder import EncoderSpec, TextRole, check_vectors
from irforge.models.sparse_encoder import check_sparse_vectors
from irforge.models.sparse_encoding import pack
from irforge.sharding.corpus_facts import CorpusFacts
from irforge.sharding.corpus_range import DocumentRange
from irforge.sharding.errors import ShardingError, ShardOutputError
from irforge.sharding.output import manifest_problem, read_manifest, shard_data_writer, sparse_terms_writer, write_manifest
from irforge.sharding.plan import Shard

ENCODE_CHUNK = 256          # documents per encoder call: bounds the worker's memory
EMPTY_IDS_RECORDED = 100    # manifests list at most this many empty documents by id


def spec_identity(spec: EncoderSpec, sparse: bool = False, max_active_dims: int | None = None) -> dict:
    """The EncoderSpec fields that change a vector (device and batch size do not); for a sparse
    encoder also its kind and max_active_dims.

    Recorded in manifests so a coordinator can tell a reusable output without loading the model.
    """
    fields = asdict(spec)
    identity = {key: fields[key] for key in ("model", "revision", "query_prefix", "passage_prefix", "normalize",
                                             "max_seq_length")}
    return {**identity, "kind": "sparse", "max_active_dims": max_active_dims} if sparse else identity


def expected_manifest(facts: CorpusFacts, spec: EncoderSpec, sparse: bool = False, max_active_dims: int | None = None) -> dict:
    """Manifest keys every shard of one run must share."""
    expected = {**facts.as_dict(), "role": TextRole.PASSAGE.value,
                "encoder_spec": spec_identity(spec, sparse, max_active_dims)}
    return {**expected, "kind": "sparse"} if sparse else expected


@dataclass(frozen=True)
class ShardResult:
    shard: Shard
    skipped: bool               # a complete output already existed
    documents_encoded: int
    empty_documents: int
    seconds: float


def encode_shard(dataset_dir: Path, shard: Shard, facts: CorpusFacts, spec: EncoderSpec, encoder: Encoder,
                 work_dir: Path, *, force: bool = False, progress: ProgressFactory = no_progress) -> ShardResult:
    """Encode `shard` of the corpus with `encoder` (built from `spec`) into `work_dir`."""
    started = time.monotonic()
    sparse = getattr(encoder, "kind", "dense") == "sparse"
    expected = {**expected_manifest(facts, spec, sparse, getattr(encoder, "max_active_dims", None)),
                "encoder_key": str(encoder.identity_key), "dimension": int(encoder.dimension)}
    try:
        existing = read_manifest(work_dir, shard)
    except ShardOutputError:
        existing = None  # unreadable: encode again and replace it, rather than fail the shard for good
    if existing is not None and not force and manifest_problem(existing, shard, expected, work_dir, check_hash=True) is None:
        return ShardResult(shard, True, existing["documents_encoded"], existing["empty_documents"],
                           time.monotonic() - started)

    dataset = BeirDataset.open(dataset_dir)
    documents = DocumentRange(dataset, shard.start, shard.stop)
    encoded, empty_ids, row = 0, [], 0
    bar = progress(f"encode {shard.name}", shard.size, "doc")
    try:
        with ExitStack() as files:
            records = files.enter_context(shard_data_writer(work_dir, shard, int(encoder.dimension), sparse))
            terms_file = files.enter_context(sparse_terms_writer(work_dir, shard)) if sparse else None
            for chunk in chunked(documents, ENCODE_CHUNK):
                block = np.zeros(len(chunk), dtype=records.dtype)
                texts = [document.full_text for document in chunk]
                block["text_hash"] = np.frombuffer(b"".join(text_hash(text) for text in texts),
                                                   dtype=np.uint8).reshape(len(chunk), -1)
                # An empty text has no meaning to encode (DenseRetriever skips it too): recorded, not encoded.
                wanted = [i for i, text in enumerate(texts) if text]
                empty_ids.extend(chunk[i].doc_id for i, text in enumerate(texts) if not text)
                if wanted and sparse:
                    answer = check_sparse_vectors(encoder.encode([texts[i] for i in wanted], TextRole.PASSAGE),
                                                  len(wanted), int(encoder.dimension), f"encoder {encoder.identity_key}")
                    for i, vector in zip(wanted, answer, strict=True):
                        block["terms"][i], blob = pack(vector)
                        terms_file.write(blob)
                    block["encoded"][wanted] = True
                elif wanted:
                    answer = np.asarray(encoder.encode([texts[i] for i in wanted], TextRole.PASSAGE))
                    check_vectors(answer, len(wanted), int(encoder.dimension), f"encoder {encoder.identity_key}")
                    block["vector"][wanted] = answer
                    block["encoded"][wanted] = True
                records[row:row + len(chunk)] = block
                encoded += len(wanted)
                row += len(chunk)
                bar.update(len(chunk))
            if row != shard.size:
                raise ShardingError(f"{shard.describe()}: the corpus {dataset.corpus_path} ended after "
                                    f"{shard.start + row} documents; the plan counted {facts.total_documents}")
            if shard.index == shard.count - 1 and not documents.rest_is_empty():
                raise ShardingError(f"{shard.describe()}: the corpus {dataset.corpus_path} has more than the "
                                    f"{facts.total_documents} documents the plan counted")
    finally:
        bar.close()
    seconds = time.monotonic() - started
    write_manifest(work_dir, shard, {
        **expected, "encoder": getattr(encoder, "identity", None), "documents": shard.size,
        "documents_encoded": encoded, "empty_documents": len(empty_ids),
        "empty_document_ids": empty_ids[:EMPTY_IDS_RECORDED], "seconds": round(seconds, 3),
    })
    return ShardResult(shard, False, encoded, len(empty_ids), seconds)


def log(message: str) -> None:
    # Pods' logs are the operator's view of a shard; one line per event, flushed at once.
    print(f"irforge shard-worker: {message}", file=sys.stderr, flush=True)
