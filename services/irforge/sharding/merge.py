"""Merge shard outputs into the embedding cache, all or nothing.

Every shard of the plan is checked first (manifest present, same corpus bytes, document count,
encoder and dimension across shards, data file intact, rows covering its range); only when all
pass are vectors written, shard by shard, in bounded chunks, with EmbeddingCache.put_many — the
same (encoder identity key, "passage", sha256 of Document.full_text) keys encode_with_cache reads,
so the dense indexing step afterwards finds every document and encodes none. Sparse shards go in
with EmbeddingCache.put_many_blobs, in the layout CachedSparseEncoding reads (their bytes as written).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from irforge.common.progress import ProgressFactory, no_progress
from irforge.models.cache import EmbeddingCache
from irforge.models.encoder import TextRole
from irforge.sharding.errors import ShardOutputError
from irforge.sharding.output import manifest_problem, open_records, read_manifest, remove_stale_temporaries, terms_path
from irforge.sharding.plan import Shard

MERGE_CHUNK = 4096  # vectors per cache transaction: bounds memory and lock time
SPARSE_TERM_BYTES = 8  # an int32 id and a float32 weight


@dataclass(frozen=True)
class MergeResult:
    encoder_key: str
    dimension: int
    vectors_merged: int
    empty_documents: int


def check_shard_outputs(work_dir: Path, shards: list[Shard], expected: dict,
                        encoder_key: str | None = None) -> dict[int, dict]:
    """Every shard's manifest, verified; raises ShardOutputError naming each missing or bad shard."""
    if not shards:
        raise ShardOutputError("nothing to merge: the plan has no shards")
    count = shards[0].count
    if [shard.index for shard in shards] != list(range(count)):
        raise ShardOutputError(f"the plan must list shards 0..{count - 1} in order")
    if any(a.stop != b.start for a, b in itertools.pairwise(shards)) or shards[0].start != 0:
        raise ShardOutputError("the plan's shards are not contiguous from document 0")
    problems: dict[int, str] = {}
    manifests: dict[int, dict] = {}
    for shard in shards:
        manifest = read_manifest(work_dir, shard)
        if manifest is None:
            problems[shard.index] = "no output (never completed, or failed)"
            continue
        problem = manifest_problem(manifest, shard, expected, work_dir, check_hash=True)
        if problem is None and manifest.get("documents_encoded", 0) + manifest.get("empty_documents", 0) != shard.size:
            problem = f"manifest counts {manifest.get('documents_encoded')} encoded + {manifest.get('empty_documents')} empty documents for {shard.size}"
        if problem is None:
            manifests[shard.index] = manifest
        else:
            problems[shard.index] = problem
    # One encoder for the whole corpus: a shard written by another model must not slip in.
    keys = {(m["encoder_key"], m["dimension"]) for m in manifests.values()}
    if encoder_key is not None:
        for index, manifest in manifests.items():
            if manifest["encoder_key"] != encoder_key:
                problems[index] = f"encoded by encoder {manifest['encoder_key']}, expected {encoder_key}"
    elif len(keys) > 1:
        for index, manifest in manifests.items():
            problems[index] = f"encoders disagree across shards: this one is {manifest['encoder_key']} (dimension {manifest['dimension']})"
    if problems:
        lines = [f"cannot merge {work_dir}: {len(problems)} of {count} shard(s) missing or inconsistent"]
        lines += [f"  {shards[index].describe()}: {problems[index]}" for index in sorted(problems)]
        raise ShardOutputError("\n".join(lines))
    return manifests


def merge_shards(work_dir: Path, shards: list[Shard], expected: dict, cache: EmbeddingCache, *,
                 encoder_key: str | None = None, progress: ProgressFactory = no_progress) -> MergeResult:
    """Verify every shard (check_shard_outputs), then put all their vectors into `cache`."""
    manifests = check_shard_outputs(work_dir, shards, expected, encoder_key)
    key, dimension = manifests[0]["encoder_key"], int(manifests[0]["dimension"])
    sparse = manifests[0].get("kind") == "sparse"
    merged = empty = 0
    bar = progress("merge shards into the embedding cache", shards[-1].stop, "doc")
    try:
        for shard in shards:
            records = open_records(work_dir, shard, dimension, sparse)
            terms = open(terms_path(work_dir, shard), "rb") if sparse else None
            try:
                for start in range(0, shard.size, MERGE_CHUNK):
                    block = records[start:start + MERGE_CHUNK]
                    kept = block[block["encoded"]]
                    hashes = [row.tobytes() for row in kept["text_hash"]]
                    if sparse:
                        cache.put_many_blobs(key, TextRole.PASSAGE, _sparse_rows(shard, terms, hashes, kept["terms"]))
                    else:
                        cache.put_many(key, TextRole.PASSAGE, hashes, kept["vector"])
                    merged += len(kept)
                    empty += len(block) - len(kept)
                    bar.update(len(block))
                if terms is not None and terms.read(1):
                    raise ShardOutputError(f"{shard.describe()}: its sparse vectors file holds more than its records announce")
            finally:
                if terms is not None:
                    terms.close()
            del records
    finally:
        bar.close()
    remove_stale_temporaries(work_dir, shards)
    return MergeResult(key, dimension, merged, empty)


def _sparse_rows(shard: Shard, terms_file, hashes: list[bytes], counts) -> list[tuple[bytes, int, bytes]]:
    """(text hash, terms, bytes) of the next len(hashes) vectors of a sparse shard's .terms file."""
    rows = []
    for text_hash, count in zip(hashes, counts, strict=True):
        blob = terms_file.read(int(count) * SPARSE_TERM_BYTES)
        if len(blob) != int(count) * SPARSE_TERM_BYTES:
            raise ShardOutputError(f"{shard.describe()}: its sparse vectors file ends before the {int(count)} terms "
                                   f"its records announce")
        rows.append((text_hash, int(count), blob))
    return rows
