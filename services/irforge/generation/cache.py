"""Every answered generation call, content-addressed, in one SQLite file.

The key is the sha256 of what decides the answer: the template's hash, the model, the
temperature, the token limit, the answer's schema and the inputs rendered into the prompt. An
interrupted run finds every answer it already paid for; a re-run costs nothing. Only answered
calls are kept (an answer that parsed, or one that still did not after the re-ask: it was paid
for); a call that failed or was never sent is asked again next time.
Rows are written one call at a time, in autocommit (a kill loses at most the calls in flight).
Default file: $IRFORGE_CACHE_DIR/generation.sqlite3, else the user cache dir, as the embedding cache.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


from irforge.common.memo import cache_folder
from irforge.common.sqlite_connections import ThreadConnections, switch_to_wal

CACHE_FILE_NAME = "generation.sqlite3"
BUSY_TIMEOUT_S = 30.0


class GenerationCacheError(RuntimeError):
    pass


def default_cache_path() -> Path:
    return cache_folder() / CACHE_FILE_NAME


def call_key(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


class GenerationCache:
    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._connections = ThreadConnections(self.path, timeout=BUSY_TIMEOUT_S, what="generation cache",
                                              error=GenerationCacheError)
        connection = self._connections.get()
        switch_to_wal(connection, BUSY_TIMEOUT_S)
        connection.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, stage TEXT NOT NULL, "
                           "model TEXT NOT NULL, template_sha256 TEXT NOT NULL, record TEXT NOT NULL)")

    def get(self, key: str) -> dict | None:
        row = self._connections.get().execute("SELECT record FROM calls WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, stage: str, model: str, template_sha256: str, record: dict) -> None:
        self._connections.get().execute("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?)",
                                        (key, stage, model, template_sha256, json.dumps(record, ensure_ascii=False)))

    def count(self) -> int:
        return self._connections.get().execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        self._connections.close()
