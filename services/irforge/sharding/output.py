"""One shard's output in the work folder: `shard-<i>-of-<n>.npy` (vectors) + `.json` (manifest).

The .npy holds one record per document of the shard, in ordinal order (row r is document
start + r), so its length is known before encoding and it can be filled chunk by chunk through a
memory map and read back the same way (bounded memory on both sides, whatever the shard size):

    text_hash  32 bytes  sha256 of Document.full_text (irforge.models.cache.text_hash)
    encoded    bool      False for a document with neither title nor text (not encoded, like DenseRetriever)
    vector     float32[dimension]

A sparse encoder's shard (manifest "kind": "sparse") holds `terms` (uint32, the vector's active
terms) in place of `vector`, and the vectors themselves in `shard-<i>-of-<n>.terms`: for each
encoded document in row order, its ids (int32 LE) then its weights (float32 LE), the embedding
cache's own sparse layout (irforge.models.sparse_encoding.pack), so merging copies bytes. Their
sizes are unknown before encoding, hence a second file, written and renamed before the .npy.

Commit protocol (a shard is complete exactly when its manifest exists and matches its data):
remove any old manifest, write the data to a temporary file and rename it into place, then
write the manifest the same way. A worker killed at any point leaves either the previous
complete output, or no manifest (the shard reruns): never a manifest over partial data.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from irforge.common.files import atomic_write, file_sha256
from irforge.sharding.errors import ShardOutputError
from irforge.sharding.plan import Shard

FORMAT = "irforge-shard/1"
HASH_BYTES = 32


def record_dtype(dimension: int, sparse: bool = False) -> np.dtype:
    if sparse:
        return np.dtype([("text_hash", "u1", (HASH_BYTES,)), ("encoded", "?"), ("terms", "<u4")])
    return np.dtype([("text_hash", "u1", (HASH_BYTES,)), ("encoded", "?"), ("vector", "<f4", (dimension,))])


def terms_path(work_dir: Path, shard: Shard) -> Path:
    """A sparse shard's vectors (see the module notes)."""
    return Path(work_dir) / f"{shard.name}.terms"


def data_path(work_dir: Path, shard: Shard) -> Path:
    return Path(work_dir) / f"{shard.name}.npy"


def manifest_path(work_dir: Path, shard: Shard) -> Path:
    return Path(work_dir) / f"{shard.name}.json"


def _fsync_dir(folder: Path) -> None:
    # The rename is durable only once the folder's entry is on disk (matters on a shared volume).
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def sparse_terms_writer(work_dir: Path, shard: Shard):
    """Yield a binary file for a sparse shard's vectors; on success it is renamed into place.
    Used inside shard_data_writer (which removed the manifest first), so it lands before the .npy."""
    final = terms_path(work_dir, shard)
    temporary = Path(work_dir) / f".{final.name}.{socket.gethostname()}-{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, final)
    finally:
        temporary.unlink(missing_ok=True)


@contextmanager
def shard_data_writer(work_dir: Path, shard: Shard, dimension: int, sparse: bool = False) -> Iterator[np.ndarray]:
    """Yield a writable record array of shard.size rows; on success it is renamed into place.

    Any old manifest of this shard is removed first, so a kill from here on leaves the shard
    incomplete (rerun), never described by a manifest of other data.
    """
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    manifest_path(work_dir, shard).unlink(missing_ok=True)
    final = data_path(work_dir, shard)
    # Unique per writer: two pods of the same index (Kubernetes may start one early) never share it.
    temporary = work_dir / f".{final.name}.{socket.gethostname()}-{os.getpid()}.tmp"
    dtype = record_dtype(dimension, sparse)
    try:
        if shard.size == 0:
            records = np.zeros(0, dtype=dtype)
            yield records
            with open(temporary, "wb") as handle:
                np.save(handle, records)
        else:
            records = np.lib.format.open_memmap(temporary, mode="w+", dtype=dtype, shape=(shard.size,))
            yield records
            records.flush()
            del records
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, final)
        _fsync_dir(work_dir)
    finally:
        temporary.unlink(missing_ok=True)


def write_manifest(work_dir: Path, shard: Shard, manifest: dict) -> Path:
    """Commit the shard: the manifest records the data file's size and sha256."""
    path = manifest_path(work_dir, shard)
    data = data_path(work_dir, shard)
    if manifest.get("kind") == "sparse":
        terms = terms_path(work_dir, shard)
        manifest = {**manifest, "terms_file": terms.name, "terms_bytes": terms.stat().st_size,
                    "terms_sha256": file_sha256(terms)}
    manifest = {**manifest, "format": FORMAT, "shard": shard.as_dict(), "data_file": data.name,
                "data_bytes": data.stat().st_size, "data_sha256": file_sha256(data),
                "written_by": {"host": socket.gethostname(), "pid": os.getpid()},
                "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with atomic_write(path) as handle:
        json.dump(manifest, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    _fsync_dir(Path(work_dir))
    return path


def read_manifest(work_dir: Path, shard: Shard) -> dict | None:
    """The shard's manifest, or None when the shard has none (never completed)."""
    path = manifest_path(work_dir, shard)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as error:
        raise ShardOutputError(f"{shard.describe()}: manifest {path} is not valid JSON ({error.msg})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ShardOutputError(f"{shard.describe()}: {path} is not an {FORMAT} manifest")
    return manifest


def manifest_problem(manifest: dict, shard: Shard, expected: dict, work_dir: Path, check_hash: bool) -> str | None:
    """Why this manifest does not describe a complete output of `shard` for `expected`; None if it does.

    `expected` holds the manifest keys that must match exactly (fingerprint, total, encoder, ...).
    """
    if manifest.get("shard") != shard.as_dict():
        return f"manifest is for {manifest.get('shard')}, the plan says {shard.as_dict()}"
    for key, value in expected.items():
        if manifest.get(key) != value:
            return f"manifest {key} is {manifest.get(key)!r}, expected {value!r}"
    data = data_path(work_dir, shard)
    if not data.is_file():
        return f"data file {data} is missing"
    if data.stat().st_size != manifest.get("data_bytes"):
        return f"data file {data} has {data.stat().st_size} bytes, the manifest says {manifest.get('data_bytes')}"
    if check_hash and file_sha256(data) != manifest.get("data_sha256"):
        return f"data file {data} does not match the manifest's sha256 (corrupted or overwritten)"
    if manifest.get("kind") == "sparse":
        terms = terms_path(work_dir, shard)
        if not terms.is_file():
            return f"sparse vectors file {terms} is missing"
        if terms.stat().st_size != manifest.get("terms_bytes"):
            return f"sparse vectors file {terms} has {terms.stat().st_size} bytes, the manifest says {manifest.get('terms_bytes')}"
        if check_hash and file_sha256(terms) != manifest.get("terms_sha256"):
            return f"sparse vectors file {terms} does not match the manifest's sha256 (corrupted or overwritten)"
    return None


def open_records(work_dir: Path, shard: Shard, dimension: int, sparse: bool = False) -> np.ndarray:
    """The shard's records, memory-mapped read-only; checked against the plan and dimension."""
    path = data_path(work_dir, shard)
    try:
        records = np.load(path, mmap_mode="r", allow_pickle=False) if shard.size else np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise ShardOutputError(f"{shard.describe()}: cannot read {path}: {error}") from None
    if records.dtype != record_dtype(dimension, sparse) or records.shape != (shard.size,):
        raise ShardOutputError(f"{shard.describe()}: {path} holds {records.shape} records of {records.dtype}, "
                               f"expected ({shard.size},) of dimension {dimension}")
    return records


def remove_stale_temporaries(work_dir: Path, shards: list[Shard]) -> int:
    """Delete temporaries left by killed writers of these shards; how many were removed."""
    removed = 0
    for shard in shards:
        for final in (data_path(work_dir, shard), terms_path(work_dir, shard)):
            for path in Path(work_dir).glob(f".{final.name}.*.tmp"):
                path.unlink(missing_ok=True)
                removed += 1
    return removed
