"""The embedding cache: vectors computed once per (encoder identity, role, text) and reused.

One SQLite file (stdlib sqlite3, WAL mode), one table keyed by

    encoder_key  EncoderCore.identity_key: model, revision, prefixes, normalisation, max length, dimension
    role         "query" or "passage"
    text_hash    sha256 of the exact text, UTF-8, before any prefix (32 bytes)

holding the vector as float32 little-endian bytes and its dimension. A second `irforge eval` of
the same model on the same corpus finds every document here and encodes none; an encode killed
half way keeps every chunk it committed and resumes from there.

Concurrency: one connection per thread (opened on first use), so several threads may read and
write at once; several processes may share the file, SQLite's locking serialises their writes
(readers never block under WAL) and a busy timeout makes a writer wait instead of failing.
Each `put_many` is one transaction: after it returns, the vectors survive a kill of the process.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable, Sequence
from enum import Enum
from pathlib import Path

import numpy as np

from irforge.common.files import NoSpaceLeft
from irforge.common.memo import cache_folder
from irforge.common.sqlite_connections import ThreadConnections, switch_to_wal
from irforge.models.errors import ModelError

CACHE_FILE_NAME = "embeddings.sqlite3"
SCHEMA_VERSION = 1
HASH_BYTES = 32
LOOKUP_CHUNK = 500          # host parameters per IN (...) query
BUSY_TIMEOUT_S = 60.0       # how long a writer waits for another process's transaction

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    encoder_key TEXT    NOT NULL,
    role        TEXT    NOT NULL,
    text_hash   BLOB    NOT NULL,
    dimension   INTEGER NOT NULL,
    vector      BLOB    NOT NULL,
    PRIMARY KEY (encoder_key, role, text_hash)
) WITHOUT ROWID
"""

_VECTOR_DTYPE = np.dtype("<f4")


class EmbeddingCacheError(ModelError):
    """The cache file is unusable or holds something inconsistent with what was asked."""


def default_cache_path() -> Path:
    """$IRFORGE_CACHE_DIR/embeddings.sqlite3, else the user's cache dir (e.g. ~/.cache/irforge)."""
    return cache_folder() / CACHE_FILE_NAME


def text_hash(text: str) -> bytes:
    """sha256 (32 bytes) of the exact text as UTF-8; lone surrogates (legal in JSON) pass through."""
    if not isinstance(text, str):
        raise TypeError(f"text to hash must be str, got {type(text).__name__}")
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _role_name(role: str | Enum) -> str:
    # TextRole is a str Enum whose str() is "TextRole.PASSAGE" on 3.11+: use its value.
    name = role.value if isinstance(role, Enum) else role
    if not isinstance(name, str) or not name:
        raise ValueError(f"role must be a non-empty string or TextRole, got {role!r}")
    return name


class EmbeddingCache:
    """Vectors by (encoder_key, role, text_hash). Thread-safe; several processes may share the file."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = BUSY_TIMEOUT_S):
        self.path = Path(path) if path is not None else default_cache_path()
        self.timeout = timeout
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise EmbeddingCacheError(f"cannot create the embedding cache folder {self.path.parent}: {error}") from None
        self._connections = ThreadConnections(self.path, timeout=timeout, what="embedding cache",
                                              error=EmbeddingCacheError)
        self._setup(self._connection())

    def _connection(self) -> sqlite3.Connection:
        return self._connections.get()

    def _setup(self, connection: sqlite3.Connection) -> None:
        try:
            mode = switch_to_wal(connection, self.timeout)
            if str(mode).lower() != "wal":
                raise EmbeddingCacheError(f"embedding cache {self.path}: cannot switch to WAL mode (got {mode!r})")
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise EmbeddingCacheError(
                    f"embedding cache {self.path} has schema version {version}, this irforge reads "
                    f"{SCHEMA_VERSION}; delete the file (it is only a cache) or point IRFORGE_CACHE_DIR elsewhere")
            if version == SCHEMA_VERSION:
                return  # set up already: opening takes no write lock
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute(_SCHEMA)
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as error:
            if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
                raise NoSpaceLeft(self.path) from None
            raise EmbeddingCacheError(f"embedding cache {self.path} is unusable: {error}") from None

    # --- API ---------------------------------------------------------------------------------

    def get_many(self, encoder_key: str, role: str | Enum, hashes: Iterable[bytes],
                 dimension: int | None = None) -> dict[bytes, np.ndarray]:
        """The stored vectors (float32, 1-D, writable copies) of those `hashes` the cache holds.

        Hashes not found are absent from the answer. With `dimension`, a stored vector of another
        dimension raises EmbeddingCacheError instead of being returned.
        """
        found: dict[bytes, np.ndarray] = {}
        for key, (stored_dimension, blob) in self.get_many_blobs(encoder_key, role, hashes).items():
            if dimension is not None and stored_dimension != dimension:
                raise EmbeddingCacheError(
                    f"embedding cache {self.path}: encoder {encoder_key} ({_role_name(role)}) holds vectors "
                    f"of dimension {stored_dimension}, asked for {dimension}; the cache is inconsistent "
                    f"with this encoder — delete the file (it is only a cache)")
            if len(blob) != stored_dimension * _VECTOR_DTYPE.itemsize:
                raise EmbeddingCacheError(
                    f"embedding cache {self.path}: encoder {encoder_key} ({_role_name(role)}) holds a vector of "
                    f"{len(blob)} bytes recorded as dimension {stored_dimension}; delete the file")
            found[key] = np.frombuffer(blob, dtype=_VECTOR_DTYPE).astype(np.float32)
        return found

    def get_many_blobs(self, encoder_key: str, role: str | Enum, hashes: Iterable[bytes]) -> dict[bytes, tuple[int, bytes]]:
        """The stored (dimension, bytes) of those `hashes` the cache holds, undecoded: for encodings
        that are not one dense float32 vector (sparse vectors: see irforge.models.sparse_encoding)."""
        role_name = _role_name(role)
        wanted = list(dict.fromkeys(hashes))
        found: dict[bytes, tuple[int, bytes]] = {}
        if not wanted:
            return found
        connection = self._connection()
        for start in range(0, len(wanted), LOOKUP_CHUNK):
            part = wanted[start:start + LOOKUP_CHUNK]
            query = ("SELECT text_hash, dimension, vector FROM embeddings "
                     f"WHERE encoder_key = ? AND role = ? AND text_hash IN ({','.join('?' * len(part))})")
            try:
                rows = connection.execute(query, (encoder_key, role_name, *part)).fetchall()
            except sqlite3.Error as error:
                raise EmbeddingCacheError(f"embedding cache {self.path}: lookup failed: {error}") from None
            for key, stored_dimension, blob in rows:
                found[bytes(key)] = (int(stored_dimension), bytes(blob))
        return found

    def put_many(self, encoder_key: str, role: str | Enum, hashes: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store vectors[i] under hashes[i], replacing what was there; one transaction (all or nothing)."""
        _role_name(role)  # a bad role fails even when there is nothing to store
        hashes = list(hashes)
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or vectors.shape[0] != len(hashes):
            raise ValueError(f"put_many needs one vector per hash: {len(hashes)} hashes, vectors of shape {vectors.shape}")
        if not hashes:
            return
        for key in hashes:
            if not isinstance(key, bytes | bytearray) or len(key) != HASH_BYTES:
                raise ValueError(f"text hashes are {HASH_BYTES} bytes (text_hash()), got {key!r}")
        if not np.isfinite(vectors).all():
            raise ValueError(f"refusing to cache NaN or infinite values for encoder {encoder_key}")
        dimension = int(vectors.shape[1])
        rows = vectors.astype(_VECTOR_DTYPE, copy=False)
        self.put_many_blobs(encoder_key, role, [(bytes(key), dimension, rows[i].tobytes()) for i, key in enumerate(hashes)])

    def put_many_blobs(self, encoder_key: str, role: str | Enum, records: Sequence[tuple[bytes, int, bytes]]) -> None:
        """Store (text hash, dimension, bytes) records, replacing what was there; one transaction.
        The caller has checked the hashes (put_many) or encodes its own format (sparse vectors)."""
        role_name = _role_name(role)
        rows = [(encoder_key, role_name, bytes(key), int(dimension), bytes(blob)) for key, dimension, blob in records]
        if not rows:
            return
        for _, _, key, _, _ in rows:
            if len(key) != HASH_BYTES:
                raise ValueError(f"text hashes are {HASH_BYTES} bytes (text_hash()), got {key!r}")
        connection = self._connection()
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.executemany(
                    "INSERT OR REPLACE INTO embeddings (encoder_key, role, text_hash, dimension, vector) "
                    "VALUES (?, ?, ?, ?, ?)", rows)
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
        except sqlite3.Error as error:
            if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:   # rolled back: nothing half-written
                raise NoSpaceLeft(self.path) from None
            raise EmbeddingCacheError(f"embedding cache {self.path}: write failed: {error}") from None

    def count(self, encoder_key: str | None = None, role: str | Enum | None = None) -> int:
        """How many vectors are stored for this encoder and role (None: any)."""
        clauses, parameters = [], []
        if encoder_key is not None:
            clauses.append("encoder_key = ?")
            parameters.append(encoder_key)
        if role is not None:
            clauses.append("role = ?")
            parameters.append(_role_name(role))
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        try:
            return int(self._connection().execute(f"SELECT COUNT(*) FROM embeddings{where}", parameters).fetchone()[0])
        except sqlite3.Error as error:
            raise EmbeddingCacheError(f"embedding cache {self.path}: count failed: {error}") from None

    def close(self) -> None:
        """Close every thread's connection (idempotent). The cache is unusable afterwards."""
        self._connections.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.path)!r})"
