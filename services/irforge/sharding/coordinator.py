"""encode_corpus_in_shards: plan, run the shard workers (local processes or a Kubernetes Indexed
Job), merge their outputs into the embedding cache. Afterwards the normal dense indexing step
(DenseRetriever / encode_with_cache with the same encoder) finds every document's vector in the
cache and encodes none.

Reuse, cheapest first: with `encoder_key` given and every document already cached, nothing runs;
shards whose complete output is already in `work_dir` (same corpus bytes, encoder settings,
plan) are not rerun; a worker finding its output complete skips it (a retried pod).
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from irforge.common.iterables import chunked
from irforge.common.progress import ProgressFactory, no_progress
from irforge.data import BeirDataset
from irforge.models.cache import EmbeddingCache, text_hash
from irforge.models.encoder import EncoderSpec, TextRole
from irforge.sharding.corpus_facts import CorpusFacts, corpus_facts
from irforge.sharding.errors import ShardingConfigError, ShardOutputError
from irforge.sharding.job import ShardJob, ShardRunner
from irforge.sharding.merge import merge_shards
from irforge.sharding.output import manifest_problem, read_manifest
from irforge.sharding.plan import Shard, plan_shards
from irforge.sharding.worker import expected_manifest

CACHE_CHECK_CHUNK = 2000


@dataclass
class ShardingReport:
    dataset: str
    corpus_fingerprint: str
    total_documents: int
    shard_count: int
    encoder_key: str | None         # identity key the vectors are cached under (None if nothing merged)
    vectors_merged: int = 0         # vectors put into the cache (documents with text, every shard)
    empty_documents: int = 0        # documents with neither title nor text: not encoded
    shards_run: list[int] = field(default_factory=list)      # shards whose workers ran
    shards_reused: list[int] = field(default_factory=list)   # complete outputs found in work_dir
    all_cached: bool = False        # every document was in the cache already: nothing ran
    runner: dict = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def _complete(work_dir: Path, shard: Shard, expected: dict) -> bool:
    try:
        manifest = read_manifest(work_dir, shard)
    except (ShardOutputError, OSError, UnicodeDecodeError):  # damaged: the shard reruns and replaces it
        return False
    # The data's hash is checked at merge; size and metadata suffice to decide not to rerun.
    return manifest is not None and manifest_problem(manifest, shard, expected, work_dir, check_hash=False) is None


def _all_cached(dataset: BeirDataset, cache: EmbeddingCache, encoder_key: str) -> bool:
    texts = (document.full_text for document in dataset.corpus())
    for chunk in chunked((text for text in texts if text), CACHE_CHECK_CHUNK):
        hashes = [text_hash(text) for text in chunk]
        if len(cache.get_many_blobs(encoder_key, TextRole.PASSAGE, hashes)) < len(set(hashes)):
            return False
    return True


def encode_corpus_in_shards(dataset_dir: Path, encoder_spec: EncoderSpec, cache_path: Path, shard_count: int,
                            runner: ShardRunner, work_dir: Path, progress: ProgressFactory | None = None, *,
                            encoder_key: str | None = None, cancel: threading.Event | None = None,
                            sparse: bool = False, max_active_dims: int | None = None) -> ShardingReport:
    """Encode every document of the corpus at `dataset_dir` into the embedding cache at `cache_path`.

    `work_dir` holds the shard outputs; with the Kubernetes runner it and `dataset_dir` must be
    on the volume the pods mount, at the same path. `encoder_key`: the identity key of the
    encoder the caller will index with (EncoderCore.identity_key / RemoteEncoder.identity_key);
    when given, a fully cached corpus runs nothing and a shard encoded under another key is
    refused. `sparse`: `encoder_spec` names a SparseEncoder (SPLADE), keeping `max_active_dims`
    weights; its vectors go into the cache as CachedSparseEncoding reads them.
    Raises ShardFailed, ShardOutputError, ShardingCancelled, DataFormatError.
    """
    progress = progress or no_progress
    started = time.monotonic()
    if isinstance(shard_count, bool) or not isinstance(shard_count, int) or shard_count < 1:
        raise ShardingConfigError(f"shard_count must be a positive integer, got {shard_count!r}")
    dataset_dir, work_dir = Path(dataset_dir), Path(work_dir)
    facts: CorpusFacts = corpus_facts(dataset_dir)
    shards = plan_shards(facts.total_documents, shard_count)
    report = ShardingReport(facts.dataset, facts.fingerprint, facts.total_documents, shard_count, encoder_key)
    with EmbeddingCache(cache_path) as cache:
        if encoder_key is not None and _all_cached(BeirDataset.open(dataset_dir), cache, encoder_key):
            report.all_cached = True
            report.seconds = {"total": round(time.monotonic() - started, 3)}
            return report
        expected = expected_manifest(facts, encoder_spec, sparse, max_active_dims)
        pending = [shard for shard in shards if not _complete(work_dir, shard, expected)]
        report.shards_reused = [shard.index for shard in shards if shard not in pending]
        report.seconds["plan"] = round(time.monotonic() - started, 3)
        if pending:
            job = ShardJob(dataset_dir, work_dir, facts, tuple(shards), encoder_spec, sparse, max_active_dims)
            outcome = runner.run(job, pending, progress=progress, cancel=cancel)
            report.runner, report.attempts = outcome.runner, outcome.attempts
            report.shards_run = [shard.index for shard in pending]
        report.seconds["run"] = round(time.monotonic() - started - report.seconds["plan"], 3)
        merging = time.monotonic()
        merged = merge_shards(work_dir, shards, expected, cache, encoder_key=encoder_key, progress=progress)
        report.seconds["merge"] = round(time.monotonic() - merging, 3)
    report.encoder_key = merged.encoder_key
    report.vectors_merged = merged.vectors_merged
    report.empty_documents = merged.empty_documents
    report.seconds["total"] = round(time.monotonic() - started, 3)
    return report
