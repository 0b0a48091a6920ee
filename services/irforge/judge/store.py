"""The judgement store: every judgement ever made, with provenance, in one SQLite file.

    store = JudgementStore(path)              # default_store_path() when None
    found = store.lookup(pairs, judge_id)     # the latest LABELLED judgement per pair, or None
    saved = store.record(judgements, pairs, identity)   # rows written; record_id set on each
    store.get_record(record_id)               # one row back, e.g. behind a judged qrels line

Keyed by (sha256 of the query text, sha256 of the document text, judge_id): the same texts
under other ids reuse the label, and a changed prompt, model or threshold set (a new judge_id)
asks again.

Append-only: each judgement is a new row and its row id is its `record_id`, so a qrels line that
points at a record keeps pointing at the same provenance even after the pair is judged again.
Lookups return the LATEST row of the key.

Only LABELLED judgements are reused. UNPARSED and FAILED ones are recorded for audit (what the
judge said, why it failed, what it cost) but asked again next time: a timeout or a budget spent
yesterday says nothing about the pair, and an unparsed answer may parse on a second try.

Where: --store PATH, else $IRFORGE_JUDGE_STORE, else platformdirs.user_data_dir("irforge")/
judge/judgements.sqlite3 (a data dir, not a cache dir: labels cost money and are evidence).

Bounded (issue 24: an answer claiming 10**30 prompt tokens raised OverflowError here and the 41
answers of its batch, already paid for, were lost): every number is brought within SQLite's range
before it is written (counts clamped to 0..2**63-1, a cost that is not a finite number recorded
as 0, a score that is not finite as none), each with a warning; a row SQLite still refuses is
skipped with a warning (its judgement comes back without a record_id) and the rest of the batch
is written. An answer's raw text is kept up to MAX_RAW_CHARS characters, then its length and
sha256 (5 MB answers grew the store by 5 MB a pair); the same long answer for the same pair and
judge on a re-run points at the record that holds it instead of being stored again.

Concurrency: WAL mode; one connection per thread; several processes may share the file (SQLite
serialises writers, a busy timeout makes them wait). Each record() is one transaction: after it
returns the rows survive a kill; a kill during it leaves none of them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import platformdirs

from irforge.common.sqlite_connections import ThreadConnections, switch_to_wal
from irforge.judge.base import (
    Judgement,
    JudgePair,
    Verdict,
    identity_sha256,
    text_sha256,
)
from irforge.judge.errors import JudgeStoreError

log = logging.getLogger(__name__)

STORE_ENV = "IRFORGE_JUDGE_STORE"
MAX_INTEGER = 2**63 - 1     # SQLite's INTEGER
MAX_RAW_CHARS = 4096        # of an answer's raw text kept in the store (then its length and sha256)
SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 60.0
LOOKUP_CHUNK = 300          # keys per lookup query (3 host parameters each; SQLite allows 32766)

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS judges (
        judge_id  TEXT PRIMARY KEY,
        identity  TEXT NOT NULL            -- JSON: backend, model, template_sha256, ...
    )""",
    """CREATE TABLE IF NOT EXISTS judgements (
        record_id         INTEGER PRIMARY KEY AUTOINCREMENT,
        query_sha256      TEXT    NOT NULL,
        document_sha256   TEXT    NOT NULL,
        judge_id          TEXT    NOT NULL REFERENCES judges (judge_id),
        query_id          TEXT    NOT NULL,
        doc_id            TEXT    NOT NULL,
        verdict           TEXT    NOT NULL CHECK (verdict IN ('labelled', 'unparsed', 'failed')),
        label             INTEGER CHECK (label BETWEEN 0 AND 3),
        score             REAL,
        raw_output        TEXT    NOT NULL,
        backend           TEXT    NOT NULL,
        model             TEXT    NOT NULL,
        template_sha256   TEXT    NOT NULL,
        calls             INTEGER NOT NULL,
        prompt_tokens     INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        cost_usd          REAL    NOT NULL,
        error             TEXT    NOT NULL,
        created_at        TEXT    NOT NULL,
        CHECK ((verdict = 'labelled') = (label IS NOT NULL))
    )""",
    """CREATE INDEX IF NOT EXISTS judgements_key
        ON judgements (query_sha256, document_sha256, judge_id, verdict, record_id)""",
)
_COLUMNS = ("record_id", "query_sha256", "document_sha256", "judge_id", "query_id", "doc_id", "verdict", "label",
            "score", "raw_output", "backend", "model", "template_sha256", "calls", "prompt_tokens",
            "completion_tokens", "cost_usd", "error", "created_at")


def default_store_path() -> Path:
    """$IRFORGE_JUDGE_STORE, else the user data dir: ~/.local/share/irforge/judge/judgements.sqlite3."""
    configured = os.environ.get(STORE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_data_dir("irforge")) / "judge" / "judgements.sqlite3"


def resolve_store_path(path: str | os.PathLike[str] | None) -> Path:
    """--store PATH when given, else default_store_path()."""
    return Path(path).expanduser() if path is not None else default_store_path()


def pair_key(pair: JudgePair) -> tuple[str, str]:
    return text_sha256(pair.query), text_sha256(pair.document)


class JudgementStore:
    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = BUSY_TIMEOUT_S):
        self.path = resolve_store_path(path)
        self.timeout = timeout
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise JudgeStoreError(f"cannot create the judgement store folder {self.path.parent}: {error}") from None
        # One connection per thread and process; writes are explicit BEGIN IMMEDIATE transactions.
        self._connections = ThreadConnections(self.path, timeout=timeout, what="judgement store",
                                              error=JudgeStoreError, row_factory=sqlite3.Row)
        self._setup(self._connection())

    # -- connections ------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        return self._connections.get()

    def _setup(self, connection: sqlite3.Connection) -> None:
        try:
            mode = switch_to_wal(connection, self.timeout)
            if str(mode).lower() != "wal":
                raise JudgeStoreError(f"judgement store {self.path}: cannot switch to WAL mode (got {mode!r})")
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version == SCHEMA_VERSION:
                return
            if version != 0:
                raise JudgeStoreError(f"judgement store {self.path} has schema version {version}; this irforge reads "
                                      f"{SCHEMA_VERSION} (the labels in it are evidence: keep the file, use --store "
                                      f"or ${STORE_ENV} to point elsewhere)")
            connection.execute("BEGIN IMMEDIATE")
            try:
                tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if tables - {"judges", "judgements", "sqlite_sequence"}:
                    raise JudgeStoreError(f"{self.path} is an SQLite file but not an irforge judgement store "
                                          f"(tables: {', '.join(sorted(tables))})")
                for statement in _SCHEMA:
                    connection.execute(statement)
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as error:
            raise JudgeStoreError(f"judgement store {self.path} is unusable: {error}") from None

    def close(self) -> None:
        self._connections.close()

    def __enter__(self) -> JudgementStore:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------------------
    def lookup(self, pairs: Sequence[JudgePair], judge_id: str) -> list[Judgement | None]:
        """Per pair, the latest LABELLED judgement of its texts by this judge (None if there is none),
        carrying the pair's own ids, from_store=True and this call's spend: calls, tokens and cost 0
        (the record keeps what it cost then; get_record shows it)."""
        keys = [pair_key(pair) for pair in pairs]
        latest: dict[tuple[str, str], sqlite3.Row] = {}
        unique = list(dict.fromkeys(keys))
        connection = self._connection()
        try:
            for start in range(0, len(unique), LOOKUP_CHUNK):
                chunk = unique[start:start + LOOKUP_CHUNK]
                wanted = " OR ".join("(query_sha256 = ? AND document_sha256 = ?)" for _ in chunk)
                rows = connection.execute(
                    f"SELECT * FROM judgements WHERE judge_id = ? AND verdict = 'labelled' AND ({wanted}) "
                    f"ORDER BY record_id", [judge_id, *(value for key in chunk for value in key)]).fetchall()
                for row in rows:  # ascending: the last one seen per key is the latest
                    latest[(row["query_sha256"], row["document_sha256"])] = row
        except sqlite3.DatabaseError as error:
            raise JudgeStoreError(f"judgement store {self.path}: lookup failed: {error}") from None
        found: list[Judgement | None] = []
        for pair, key in zip(pairs, keys):
            row = latest.get(key)
            found.append(None if row is None else replace(
                _judgement(row), query_id=pair.query_id, doc_id=pair.doc_id, calls=0, prompt_tokens=0,
                completion_tokens=0, cost_usd=0.0, from_store=True))
        return found

    def get_record(self, record_id: int) -> Judgement | None:
        """The judgement stored as `record_id` exactly as recorded (its own ids, calls and cost)."""
        try:
            row = self._connection().execute("SELECT * FROM judgements WHERE record_id = ?", (int(record_id),)).fetchone()
        except sqlite3.DatabaseError as error:
            raise JudgeStoreError(f"judgement store {self.path}: reading record {record_id} failed: {error}") from None
        return None if row is None else _judgement(row)

    def record_keys(self, record_id: int) -> tuple[str, str] | None:
        """(query_sha256, document_sha256) of a record: which texts it judged."""
        row = self._connection().execute(
            "SELECT query_sha256, document_sha256 FROM judgements WHERE record_id = ?", (int(record_id),)).fetchone()
        return None if row is None else (row[0], row[1])

    def judge_identity(self, judge_id: str) -> dict[str, str] | None:
        row = self._connection().execute("SELECT identity FROM judges WHERE judge_id = ?", (judge_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def count(self, judge_id: str | None = None, verdict: Verdict | None = None) -> int:
        clauses, values = [], []
        if judge_id is not None:
            clauses.append("judge_id = ?")
            values.append(judge_id)
        if verdict is not None:
            clauses.append("verdict = ?")
            values.append(Verdict(verdict).value)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        return self._connection().execute(f"SELECT COUNT(*) FROM judgements{where}", values).fetchone()[0]

    # -- writing ----------------------------------------------------------------------------
    def record(self, judgements: Sequence[Judgement], pairs: Sequence[JudgePair],
               identity: dict[str, str]) -> list[Judgement]:
        """Write one row per judgement (of the pair at the same position) in one transaction;
        return the judgements with their record_id. Judgements from the store are not written again."""
        if len(judgements) != len(pairs):
            raise ValueError(f"record: {len(judgements)} judgements for {len(pairs)} pairs")
        judge_id = identity_sha256(identity)
        for judgement in judgements:
            if judgement.judge_id != judge_id:
                raise JudgeStoreError(f"judgement of ({judgement.query_id}, {judgement.doc_id}) carries judge_id "
                                      f"{judgement.judge_id[:12]}..., not the identity's {judge_id[:12]}...")
        connection = self._connection()
        saved: list[Judgement] = []
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute("INSERT OR IGNORE INTO judges (judge_id, identity) VALUES (?, ?)",
                                   (judge_id, json.dumps(identity, sort_keys=True)))
                for judgement, pair in zip(judgements, pairs):
                    saved.append(judgement if judgement.from_store else self._insert(connection, judgement, pair, judge_id))
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        except sqlite3.IntegrityError as error:
            raise JudgeStoreError(f"judgement store {self.path}: a judgement breaks the store's rules ({error}); "
                                  f"nothing of this batch was written") from None
        except sqlite3.DatabaseError as error:
            raise JudgeStoreError(f"judgement store {self.path}: writing failed ({error}); nothing of this batch "
                                  f"was written") from None
        return saved

    def _insert(self, connection: sqlite3.Connection, judgement: Judgement, pair: JudgePair, judge_id: str) -> Judgement:
        """One row in its own savepoint: a row SQLite refuses is skipped (warned, no record_id), the
        batch goes on."""
        query_sha256, document_sha256 = pair_key(pair)
        where = f"judgement of (query {judgement.query_id}, document {judgement.doc_id})"
        connection.execute("SAVEPOINT one_row")
        try:
            raw = self._raw_to_store(connection, judgement.raw_output, (query_sha256, document_sha256, judge_id))
            cursor = connection.execute(
                f"INSERT INTO judgements ({', '.join(_COLUMNS[1:])}) VALUES ({', '.join('?' * (len(_COLUMNS) - 1))})",
                (query_sha256, document_sha256, judge_id, judgement.query_id, judgement.doc_id,
                 judgement.verdict.value, judgement.label, _finite_or_none(judgement.score, "score", where), raw,
                 judgement.backend, judgement.model, judgement.template_sha256, _count(judgement.calls, "calls", where),
                 _count(judgement.prompt_tokens, "prompt_tokens", where),
                 _count(judgement.completion_tokens, "completion_tokens", where),
                 _cost(judgement.cost_usd, where), judgement.error, judgement.created_at))
        except (sqlite3.IntegrityError, sqlite3.InterfaceError, OverflowError, ValueError, TypeError) as error:
            connection.execute("ROLLBACK TO one_row")
            connection.execute("RELEASE one_row")
            log.warning("judgement store %s: %s not recorded (%s: %s); the other judgements of the batch are",
                        self.path, where, type(error).__name__, error)
            return judgement
        connection.execute("RELEASE one_row")
        # The answer as stored goes on too: a 5 MB raw text need not travel in a gRPC reply or a report.
        return replace(judgement, record_id=cursor.lastrowid, raw_output=raw)

    @staticmethod
    def _raw_to_store(connection: sqlite3.Connection, raw: str, key: tuple[str, str, str]) -> str:
        """The answer as stored: whole when short; else its start, length and sha256, or (the same
        long answer already stored for this pair and judge) a pointer to that record."""
        if len(raw) <= MAX_RAW_CHARS:
            return raw
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()
        marker = f"{len(raw):,} characters in all, sha256 {digest}]"
        row = connection.execute(
            "SELECT record_id FROM judgements WHERE query_sha256 = ? AND document_sha256 = ? AND judge_id = ? "
            "AND raw_output LIKE ? ORDER BY record_id LIMIT 1", (*key, "%" + marker)).fetchone()
        if row is not None:
            return f"[the same answer as record {row[0]}: {marker}"
        return f"{raw[:MAX_RAW_CHARS]}\n[... cut by the judgement store: {marker}"


def _count(value, name: str, where: str) -> int:
    """A whole number SQLite can hold: clamped to 0..MAX_INTEGER, with a warning."""
    if isinstance(value, bool) or not isinstance(value, int):
        log.warning("judgement store: %s has %s = %r, not a whole number; recorded as 0", where, name, value)
        return 0
    if 0 <= value <= MAX_INTEGER:
        return value
    bounded = min(max(value, 0), MAX_INTEGER)
    log.warning("judgement store: %s has %s = %s, outside 0..2**63-1; recorded as %d", where, name,
                f"{value:.3g}" if abs(value) < 10**300 else "a huge number", bounded)
    return bounded


def _cost(value, where: str) -> float:
    try:
        amount = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:
        amount = math.inf
    if math.isfinite(amount) and amount >= 0:
        return amount
    log.warning("judgement store: %s has cost_usd = %r, not a finite amount; recorded as 0", where, value)
    return 0.0


def _finite_or_none(value, name: str, where: str) -> float | None:
    if value is None or (isinstance(value, (int, float)) and math.isfinite(value)):
        return value
    log.warning("judgement store: %s has %s = %r, not a finite number; recorded as none", where, name, value)
    return None


def _judgement(row: sqlite3.Row) -> Judgement:
    return Judgement(
        query_id=row["query_id"], doc_id=row["doc_id"], verdict=Verdict(row["verdict"]), label=row["label"],
        raw_output=row["raw_output"], backend=row["backend"], model=row["model"],
        template_sha256=row["template_sha256"], judge_id=row["judge_id"], calls=row["calls"],
        prompt_tokens=row["prompt_tokens"], completion_tokens=row["completion_tokens"], cost_usd=row["cost_usd"],
        score=row["score"], error=row["error"], created_at=row["created_at"], record_id=row["record_id"],
        from_store=True)
