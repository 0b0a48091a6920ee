"""One SQLite connection per thread, for files several threads and processes share (the embedding
cache, the judgement store); and one connection shared under a lock (SharedConnection), for a
store one process owns (the jobs, the accounts).

sqlite3 connections must not be shared between threads mid-transaction, so each thread opens its
own on first use. A forked child must not reuse its parent's connection (SQLite's locks are per
process): it opens its own too, and leaves the inherited ones for the parent to close.

Connections are autocommit (`isolation_level=None`): callers write in explicit
`BEGIN IMMEDIATE` transactions. `timeout` is SQLite's busy timeout, how long a writer waits for
another process's lock instead of failing. `check_same_thread=False` only so that close() may
close every thread's connection.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class ThreadConnections:
    def __init__(self, path: Path, *, timeout: float, what: str, error: type[Exception],
                 row_factory=None):
        self.path = path
        self.timeout = timeout
        self.what = what                # e.g. "embedding cache", for messages
        self.error = error              # the owner's error type, raised with the path named
        self.row_factory = row_factory
        self._local = threading.local()
        self._opened: list[tuple[int, sqlite3.Connection]] = []   # (pid that opened it, connection)
        self._lock = threading.Lock()
        self.closed = False

    def get(self) -> sqlite3.Connection:
        if self.closed:
            raise self.error(f"{self.what} {self.path} is closed")
        connection = getattr(self._local, "connection", None)
        if connection is not None and self._local.pid == os.getpid():
            return connection
        try:
            connection = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                                         check_same_thread=False)
        except sqlite3.Error as error:
            raise self.error(f"cannot open the {self.what} {self.path}: {error}") from None
        if self.row_factory is not None:
            connection.row_factory = self.row_factory
        self._local.connection, self._local.pid = connection, os.getpid()
        with self._lock:
            self._opened.append((os.getpid(), connection))
        return connection

    def close(self) -> None:
        """Close every thread's connection (idempotent); get() refuses afterwards."""
        with self._lock:
            self.closed = True
            opened, self._opened = self._opened, []
        for pid, connection in opened:
            if pid != os.getpid():
                continue  # inherited across fork: the parent's to close, not ours
            try:
                connection.close()
            except sqlite3.Error:
                pass
        self._local.connection = None


def switch_to_wal(connection: sqlite3.Connection, timeout: float) -> str:
    """PRAGMA journal_mode = WAL, retried while another process holds the lock; returns the mode.

    Changing the journal mode needs an exclusive lock, and SQLite answers "database is locked" at
    once, without its busy handler, when two processes create the same file together: so wait
    here, up to the busy timeout, as every other statement would."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            return str(connection.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


class SharedConnection:
    """One connection shared by a process's threads, serialised by a lock: for a store one process
    owns whose writes are small and few (the orchestrator's jobs, the accounts). WAL, so readers
    in other processes (`irforge jobs` on the state) are not blocked; autocommit, writes in
    explicit BEGIN IMMEDIATE transactions."""

    def __init__(self, path: Path, schema: str):
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(schema)
        self._lock = threading.Lock()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection inside one write transaction (committed when the block ends, rolled back if it raises)."""
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def write(self, statements: list[tuple[str, tuple]]) -> None:
        with self.transaction() as db:
            for sql, params in statements:
                db.execute(sql, params)

    def read(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            return self.db.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self.db.close()
