"""The job store: jobs, their steps (state, executions, outputs) and events, in one SQLite file.

Every change is one committed transaction, so a crash leaves each job at a step boundary the
next orchestrator can resume from: a step is DONE only once its output is committed here (its
files were written atomically before that), and anything not DONE runs again.
"""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from irforge.common.locks import ExclusiveLock, LockHeld
from irforge.common.sqlite_connections import SharedConnection
from irforge.orchestrator.errors import JobNotFound

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, spec_json TEXT NOT NULL, state TEXT NOT NULL, error TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, metrics_json TEXT NOT NULL DEFAULT '{}',
    owner TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS steps (
    job_id TEXT NOT NULL, name TEXT NOT NULL, position INTEGER NOT NULL, state TEXT NOT NULL,
    executions INTEGER NOT NULL DEFAULT 0, started_at TEXT NOT NULL DEFAULT '', finished_at TEXT NOT NULL DEFAULT '',
    duration_s REAL NOT NULL DEFAULT 0, output_json TEXT NOT NULL DEFAULT '{}', PRIMARY KEY (job_id, name));
CREATE TABLE IF NOT EXISTS events (
    job_id TEXT NOT NULL, sequence INTEGER NOT NULL, time TEXT NOT NULL, step TEXT NOT NULL, state TEXT NOT NULL,
    done INTEGER NOT NULL, total INTEGER NOT NULL, rate REAL NOT NULL, eta_seconds REAL NOT NULL,
    message TEXT NOT NULL, unit TEXT NOT NULL, PRIMARY KEY (job_id, sequence));
"""


_JOB_COLUMNS = "job_id, spec_json, state, error, created_at, updated_at, metrics_json, owner"


class JobState(str, enum.Enum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def ended(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True)
class StepRecord:
    name: str
    state: str                      # pending, running, done, failed
    executions: int
    started_at: str
    finished_at: str
    duration_s: float
    output: dict


@dataclass(frozen=True)
class JobRecord:
    job_id: str
    spec: dict                      # JobSpec.as_dict()
    state: JobState
    error: str
    created_at: str
    updated_at: str
    metrics: dict
    steps: list[StepRecord] = field(default_factory=list)
    # What the job could not do although it SUCCEEDED (orchestrator.steps.job_warnings); filled by
    # the orchestrator from its steps' outputs, carried over the wire.
    warnings: tuple[str, ...] = ()
    # Who submitted it ("team:NAME" or "operator:NAME", core.owner_of); "" for a job from before
    # jobs had owners, which only operators see.
    owner: str = ""


@dataclass(frozen=True)
class JobEvent:
    job_id: str
    sequence: int
    time: str
    step: str                       # "" for the job itself
    state: str
    done: int = 0
    total: int = 0
    rate: float = 0.0
    eta_seconds: float = -1.0
    message: str = ""
    unit: str = ""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class StoreInUse(RuntimeError):
    """The jobs database belongs to another running orchestrator."""


class JobStore:
    def __init__(self, path: Path, *, owner: bool = True):
        """`owner`: this process runs jobs from the store (the orchestrator); False only reads."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One orchestrator per jobs database: two would both pick up and run the same jobs (a
        # cancelled job ran to SUCCEEDED under the other). Held until close(); a killed holder's
        # lock goes with its process.
        self._owner = ExclusiveLock(self.path.with_name(self.path.name + ".lock"))
        try:
            if owner:
                self._owner.acquire()
        except LockHeld as held:
            raise StoreInUse(
                f"another orchestrator (pid {held.holder or 'unknown'}) uses the jobs database {self.path}; "
                "stop it, or give this one another --state-dir"
            ) from None
        # One connection shared by the worker and server threads, serialised by a lock: writes
        # are small and few (progress events are throttled by the caller).
        self._sql = SharedConnection(self.path, SCHEMA)
        self._migrate()
        self._write, self._read = self._sql.write, self._sql.read

    def _migrate(self) -> None:
        """Bring a jobs database an older irforge made up to SCHEMA (CREATE TABLE IF NOT EXISTS
        leaves an existing table as it was)."""
        columns = {row[1] for row in self._sql.read("PRAGMA table_info(jobs)")}
        if "owner" not in columns:   # before issue 27: no owners; those jobs stay the operators'
            self._sql.write([("ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT ''", ())])

    # -- jobs ---------------------------------------------------------------------------------
    def create_job(self, spec: dict, steps: list[str], owner: str = "") -> str:
        job_id = uuid.uuid4().hex[:12]
        stamp = now()
        self._write([("INSERT INTO jobs (job_id, spec_json, state, created_at, updated_at, owner) VALUES (?, ?, ?, ?, ?, ?)",
                      (job_id, json.dumps(spec), JobState.QUEUED.value, stamp, stamp, owner)),
                     *[("INSERT INTO steps (job_id, name, position, state) VALUES (?, ?, ?, 'pending')",
                        (job_id, name, position)) for position, name in enumerate(steps)]])
        return job_id

    def set_state(self, job_id: str, state: JobState, error: str = "", metrics: dict | None = None) -> None:
        sql = "UPDATE jobs SET state = ?, error = ?, updated_at = ?" + (", metrics_json = ?" if metrics is not None else "")
        params = (state.value, error, now(), *([json.dumps(metrics)] if metrics is not None else []), job_id)
        self._write([(sql + " WHERE job_id = ?", params)])

    def job(self, job_id: str) -> JobRecord:
        rows = self._read(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE job_id = ?", (job_id,))
        if not rows:
            raise JobNotFound(job_id)
        return self._record(rows[0])

    def jobs(self, limit: int = 100, states: tuple[JobState, ...] = (), owner: str | None = None) -> list[JobRecord]:
        """The newest `limit` jobs (in `states`, of `owner` when given: the limit counts only those)."""
        conditions, params = [], [s.value for s in states]
        if states:
            conditions.append(f"state IN ({', '.join('?' * len(states))})")
        if owner is not None:
            conditions.append("owner = ?")
            params.append(owner)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        rows = self._read(f"SELECT {_JOB_COLUMNS} FROM jobs {where} ORDER BY created_at DESC, rowid DESC LIMIT ?",
                          (*params, limit))
        return [self._record(row) for row in rows]

    def count_by_state(self) -> dict[JobState, int]:
        return {JobState(state): count for state, count in self._read("SELECT state, COUNT(*) FROM jobs GROUP BY state")}

    def _record(self, row) -> JobRecord:
        job_id, spec, state, error, created, updated, metrics, owner = row
        return JobRecord(job_id, json.loads(spec), JobState(state), error, created, updated, json.loads(metrics),
                         self.steps(job_id), owner=owner)

    # -- steps --------------------------------------------------------------------------------
    def steps(self, job_id: str) -> list[StepRecord]:
        rows = self._read("SELECT name, state, executions, started_at, finished_at, duration_s, output_json FROM steps "
                          "WHERE job_id = ? ORDER BY position", (job_id,))
        return [StepRecord(name, state, executions, started, finished, duration, json.loads(output))
                for name, state, executions, started, finished, duration, output in rows]

    def start_step(self, job_id: str, name: str) -> None:
        sql = ("UPDATE steps SET state = 'running', executions = executions + 1, started_at = ?, finished_at = '' "
               "WHERE job_id = ? AND name = ?")
        self._write([(sql, (now(), job_id, name))])

    def finish_step(self, job_id: str, name: str, output: dict, duration_s: float) -> None:
        sql = "UPDATE steps SET state = 'done', finished_at = ?, duration_s = ?, output_json = ? WHERE job_id = ? AND name = ?"
        self._write([(sql, (now(), round(duration_s, 3), json.dumps(output), job_id, name))])

    def fail_step(self, job_id: str, name: str, state: str = "failed") -> None:
        self._write([("UPDATE steps SET state = ?, finished_at = ? WHERE job_id = ? AND name = ?", (state, now(), job_id, name))])

    # -- events -------------------------------------------------------------------------------
    def add_event(self, job_id: str, step: str, state: str, *, done: int = 0, total: int = 0, rate: float = 0.0,
                  eta_seconds: float = -1.0, message: str = "", unit: str = "") -> JobEvent:
        with self._sql.transaction() as db:
            (last,) = db.execute("SELECT COALESCE(MAX(sequence), 0) FROM events WHERE job_id = ?", (job_id,)).fetchone()
            event = JobEvent(job_id, last + 1, now(), step, state, int(done), int(total), float(rate),
                             float(eta_seconds), message, unit)
            db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (
                job_id, event.sequence, event.time, step, state, event.done, event.total, event.rate,
                event.eta_seconds, message, unit))
        return event

    def events(self, job_id: str, after: int = 0) -> list[JobEvent]:
        rows = self._read("SELECT job_id, sequence, time, step, state, done, total, rate, eta_seconds, message, unit "
                          "FROM events WHERE job_id = ? AND sequence > ? ORDER BY sequence", (job_id, after))
        return [JobEvent(*row) for row in rows]

    def close(self) -> None:
        self._sql.close()
        self._owner.release()
