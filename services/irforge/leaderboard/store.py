"""The leaderboard's records in one SQLite file (STATE_DIR/leaderboard.sqlite3): the registered
datasets and every submission, refused ones included. One connection, one writer at a time
(as orchestrator/store.py), WAL; every text field is bounded before it is stored."""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path

from irforge.common.sqlite_connections import SharedConnection
from irforge.leaderboard.errors import DatasetExists, DatasetNotFound, LimitReached, SubmissionNotFound

SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    name TEXT PRIMARY KEY, split TEXT NOT NULL, task TEXT NOT NULL, main_metric TEXT NOT NULL, language TEXT NOT NULL,
    closed INTEGER NOT NULL, per_query TEXT NOT NULL, created TEXT NOT NULL, queries INTEGER NOT NULL,
    documents INTEGER NOT NULL, corpus_sha256 TEXT NOT NULL, candidates_sha256 TEXT NOT NULL, candidates_depth INTEGER NOT NULL,
    bm25_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS submissions (
    submission_id TEXT PRIMARY KEY, team TEXT NOT NULL, system TEXT NOT NULL, category TEXT NOT NULL,
    dataset TEXT NOT NULL, kind TEXT NOT NULL, fingerprint TEXT NOT NULL, size INTEGER NOT NULL, file TEXT NOT NULL,
    created TEXT NOT NULL, job_id TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS submissions_by_team ON submissions (team, created);
"""
MAX_FIELD_CHARS = 2000   # a refusal's reason, bounded like the orchestrator's fields


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class DatasetRecord:
    name: str
    split: str
    task: str
    main_metric: str
    language: str
    closed: bool
    per_query: str              # withheld | coarsened | shown
    created: str
    queries: int
    documents: int
    corpus_sha256: str
    candidates_sha256: str
    candidates_depth: int
    bm25: dict                  # the configuration the candidates were retrieved with


@dataclass(frozen=True)
class SubmissionRecord:
    submission_id: str
    team: str
    system: str
    category: str               # retrieval | reranking
    dataset: str
    kind: str                   # run | endpoint | config
    fingerprint: str            # SHA-256 of the submitted bytes
    size: int
    file: str                   # the stored copy's name in the submission's folder
    created: str                # ISO UTC
    job_id: str                 # the orchestrator job; "" when refused before one existed
    state: str                  # received | refused | submitted
    reason: str                 # why it was refused


class LeaderboardStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._sql = SharedConnection(self.path, SCHEMA)
        self._read = self._sql.read

    def _write(self, sql: str, params: tuple) -> None:
        self._sql.write([(sql, params)])

    # -- datasets -----------------------------------------------------------------------------
    def add_dataset(self, record: DatasetRecord) -> None:
        values = [getattr(record, f.name) for f in fields(DatasetRecord)]
        values[-1] = json.dumps(record.bm25)
        try:
            self._write(f"INSERT INTO datasets VALUES ({', '.join('?' * len(values))})", tuple(values))
        except sqlite3.IntegrityError:
            raise DatasetExists(f"a dataset named {record.name!r} is registered already") from None

    def dataset(self, name: str) -> DatasetRecord:
        rows = self._read("SELECT * FROM datasets WHERE name = ?", (name,))
        if not rows:
            raise DatasetNotFound(name)
        return _dataset(rows[0])

    def has_dataset(self, name: str) -> bool:
        return bool(self._read("SELECT 1 FROM datasets WHERE name = ?", (name,)))

    def datasets(self) -> list[DatasetRecord]:
        return [_dataset(row) for row in self._read("SELECT * FROM datasets ORDER BY name")]

    # -- submissions --------------------------------------------------------------------------
    def reserve(self, *, team: str, limit: int | None, day_start: datetime, day_end: datetime, refusal,
                **values) -> SubmissionRecord:
        """Count the team's submissions of the UTC day and, below `limit` (None: no limit), record
        this one as received, in one transaction: two submissions at once cannot both take the
        last place. At the limit, raise LimitReached(refusal(used)) and record nothing."""
        created = utc_now()
        record = SubmissionRecord(submission_id=uuid.uuid4().hex[:16], team=team, created=stamp(created), job_id="",
                                  state="received", reason="", **values)
        with self._sql.transaction() as db:
            (used,) = db.execute("SELECT COUNT(*) FROM submissions WHERE team = ? AND created >= ? AND created < ?",
                                 (team, stamp(day_start), stamp(day_end))).fetchone()
            if limit is not None and used >= limit:
                raise LimitReached(refusal(used))
            db.execute(f"INSERT INTO submissions VALUES ({', '.join('?' * len(fields(SubmissionRecord)))})",
                       tuple(getattr(record, f.name) for f in fields(SubmissionRecord)))
        return record

    def used(self, team: str, day_start: datetime, day_end: datetime) -> int:
        (count,), = self._read("SELECT COUNT(*) FROM submissions WHERE team = ? AND created >= ? AND created < ?",
                               (team, stamp(day_start), stamp(day_end)))
        return count

    def update(self, submission_id: str, *, state: str, job_id: str = "", reason: str = "") -> None:
        self._write("UPDATE submissions SET state = ?, job_id = ?, reason = ? WHERE submission_id = ?",
                    (state, job_id, reason[:MAX_FIELD_CHARS], submission_id))

    def submission(self, submission_id: str) -> SubmissionRecord:
        rows = self._read("SELECT * FROM submissions WHERE submission_id = ?", (submission_id,))
        if not rows:
            raise SubmissionNotFound(submission_id)
        return SubmissionRecord(*rows[0])

    def submissions(self, team: str | None = None, limit: int = 1000) -> list[SubmissionRecord]:
        """Newest first; a team's only, or everyone's (team None)."""
        where, params = ("WHERE team = ?", (team,)) if team is not None else ("", ())
        rows = self._read(f"SELECT * FROM submissions {where} ORDER BY created DESC, rowid DESC LIMIT ?", (*params, limit))
        return [SubmissionRecord(*row) for row in rows]

    def close(self) -> None:
        self._sql.close()


def _dataset(row: tuple) -> DatasetRecord:
    values = list(row)
    values[5] = bool(values[5])
    values[-1] = json.loads(values[-1])
    return DatasetRecord(*values)
