"""The accounts store: teams, operators, their tokens, the client-certificate names mapped to
teams, and the audit log, in one SQLite file (STATE_DIR/accounts.sqlite3) that the orchestrator's
process alone writes (WAL, one connection behind a lock, as orchestrator/store.py).

A token is 32 random bytes, shown once when issued; only its SHA-256 is kept, so the file (a
backup, a copied volume) never holds a usable credential. A token's id is the start of that hash:
safe to show and to name when revoking it. Every text field is bounded; the audit log never holds
a token (a token-shaped string in a detail is cut to its prefix before it is written)."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from irforge.accounts.errors import AccountsError, TeamExists, TeamNotFound, TokenNotFound
from irforge.accounts.identity import OPERATOR, TEAM
from irforge.common.sqlite_connections import SharedConnection

STATE_FILE = "accounts.sqlite3"
TOKEN_PREFIX = "irf_"          # tells a secret scanner (and a person) what the string is
TOKEN_ID_CHARS = 12
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
MAX_LIMIT = 100_000
MAX_FIELD_CHARS = 500
_TOKEN_SHAPED = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_-]{8,}")

SCHEMA = """
CREATE TABLE IF NOT EXISTS teams (
    name TEXT PRIMARY KEY, daily_submission_limit INTEGER, created TEXT NOT NULL, disabled INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS operators (name TEXT PRIMARY KEY, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (
    sha256 TEXT PRIMARY KEY, token_id TEXT NOT NULL, holder TEXT NOT NULL, role TEXT NOT NULL,
    created TEXT NOT NULL, revoked TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS certificates (common_name TEXT PRIMARY KEY, team TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit (
    sequence INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, who TEXT NOT NULL, role TEXT NOT NULL,
    via TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Team:
    name: str
    daily_submission_limit: int | None    # None: the platform's default
    created: str
    disabled: bool
    token_ids: tuple[str, ...] = ()        # its active tokens
    certificate_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Holder:
    """Whom a credential stands for."""
    name: str
    role: str        # identity.TEAM or identity.OPERATOR


@dataclass(frozen=True)
class AuditRow:
    sequence: int
    time: str
    who: str
    role: str
    via: str
    action: str
    target: str
    outcome: str
    detail: str


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def bounded(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    """`text` as the store keeps it: no token in it, at most `limit` characters."""
    text = _TOKEN_SHAPED.sub(TOKEN_PREFIX + "…", str(text))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def checked_name(name: str, what: str = "team name") -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise AccountsError(f"{what} {bounded(repr(name), 80)}: use 1 to 64 letters, digits and . _ @ -, "
                            "starting with a letter or digit")
    return name


def checked_limit(limit: int | None) -> int | None:
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise AccountsError(f"daily submission limit {limit}: must be within 1..{MAX_LIMIT} (or the platform default)")
    return limit


class AccountsStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Hashes only, but who did what is the operators' to read: created 0600 (SQLite gives its
        # -wal and -shm files the database's permissions).
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        self._sql = SharedConnection(self.path, SCHEMA)
        self._write, self._read = self._sql.write, self._sql.read

    # -- teams and operators --------------------------------------------------------------------
    def _taken(self, name: str) -> bool:
        return bool(self._read("SELECT 1 FROM teams WHERE name = ? UNION SELECT 1 FROM operators WHERE name = ?", (name, name)))

    def create_team(self, name: str, daily_submission_limit: int | None = None) -> str:
        """Add a team; returns its first token (the only time it is seen)."""
        checked_name(name)
        checked_limit(daily_submission_limit)
        if self._taken(name):
            raise TeamExists(name)
        token, statement = self._new_token(name, TEAM)
        self._write([("INSERT INTO teams (name, daily_submission_limit, created) VALUES (?, ?, ?)",
                      (name, daily_submission_limit, now())), statement])
        return token

    def add_operator_token(self, name: str, token: str | None = None) -> str:
        """A token for operator `name` (created if new): a new one, or `token` (one a deployment's
        Secret holds). Returns it."""
        checked_name(name, "operator name")
        if self._read("SELECT 1 FROM teams WHERE name = ?", (name,)):
            raise TeamExists(name)
        token, statement = self._new_token(name, OPERATOR, token)
        self._write([("INSERT OR IGNORE INTO operators (name, created) VALUES (?, ?)", (name, now())), statement])
        return token

    def operators(self) -> list[str]:
        return [name for (name,) in self._read("SELECT name FROM operators ORDER BY name")]

    def team(self, name: str) -> Team:
        rows = self._read("SELECT name, daily_submission_limit, created, disabled FROM teams WHERE name = ?", (name,))
        if not rows:
            raise TeamNotFound(name)
        return self._team(rows[0])

    def teams(self) -> list[Team]:
        return [self._team(row) for row in self._read("SELECT name, daily_submission_limit, created, disabled FROM teams ORDER BY name")]

    def _team(self, row) -> Team:
        name, limit, created, disabled = row
        tokens = self._read("SELECT token_id FROM tokens WHERE holder = ? AND role = ? AND revoked = '' ORDER BY created, token_id",
                            (name, TEAM))
        names = self._read("SELECT common_name FROM certificates WHERE team = ? ORDER BY common_name", (name,))
        return Team(name, limit, created, bool(disabled), tuple(t for (t,) in tokens), tuple(n for (n,) in names))

    def set_limit(self, name: str, daily_submission_limit: int | None) -> Team:
        checked_limit(daily_submission_limit)
        self.team(name)
        self._write([("UPDATE teams SET daily_submission_limit = ? WHERE name = ?", (daily_submission_limit, name))])
        return self.team(name)

    # -- tokens ---------------------------------------------------------------------------------
    def _new_token(self, holder: str, role: str, token: str | None = None) -> tuple[str, tuple[str, tuple]]:
        token = token or TOKEN_PREFIX + secrets.token_urlsafe(32)
        digest = token_hash(token)
        return token, ("INSERT INTO tokens (sha256, token_id, holder, role, created) VALUES (?, ?, ?, ?, ?)",
                       (digest, digest[:TOKEN_ID_CHARS], holder, role, now()))

    def issue_token(self, team: str) -> str:
        """Another token for `team` (its earlier ones stay valid until revoked)."""
        self.team(team)
        token, statement = self._new_token(team, TEAM)
        self._write([statement])
        return token

    def revoke(self, team: str, token_id: str = "") -> list[str]:
        """Revoke one token of `team` by its id, or (no id) every token it has; returns the ids revoked."""
        self.team(team)
        where, params = "holder = ? AND role = ? AND revoked = ''", (team, TEAM)
        if token_id:
            where, params = where + " AND token_id = ?", (*params, token_id)
        ids = [t for (t,) in self._read(f"SELECT token_id FROM tokens WHERE {where}", params)]
        if token_id and not ids:
            raise TokenNotFound(token_id)
        self._write([(f"UPDATE tokens SET revoked = ? WHERE {where}", (now(), *params))])
        return ids

    def holder_of(self, token: str) -> Holder | None:
        """Whom an active token stands for; None for an unknown, revoked or disabled team's one."""
        rows = self._read("SELECT holder, role FROM tokens WHERE sha256 = ? AND revoked = ''", (token_hash(token),))
        if not rows:
            return None
        holder = Holder(*rows[0])
        if holder.role == TEAM and self._read("SELECT 1 FROM teams WHERE name = ? AND disabled = 1", (holder.name,)):
            return None
        return holder

    def has_operator_token(self) -> bool:
        return bool(self._read("SELECT 1 FROM tokens WHERE role = ? AND revoked = '' LIMIT 1", (OPERATOR,)))

    def knows_token(self, token: str) -> bool:
        return bool(self._read("SELECT 1 FROM tokens WHERE sha256 = ?", (token_hash(token),)))

    # -- client certificates --------------------------------------------------------------------
    def map_certificate(self, common_name: str, team: str) -> Team:
        """Clients presenting a certificate whose subject CN is `common_name` act as `team`."""
        if not common_name or len(common_name) > 256 or not common_name.isprintable():
            raise AccountsError(f"certificate common name {bounded(repr(common_name), 80)}: give 1 to 256 printable characters")
        self.team(team)
        self._write([("INSERT OR REPLACE INTO certificates (common_name, team, created) VALUES (?, ?, ?)",
                      (common_name, team, now()))])
        return self.team(team)

    def team_of_certificate(self, common_name: str) -> str | None:
        rows = self._read("SELECT c.team FROM certificates c JOIN teams t ON t.name = c.team "
                          "WHERE c.common_name = ? AND t.disabled = 0", (common_name,))
        return rows[0][0] if rows else None

    # -- the audit log --------------------------------------------------------------------------
    def record(self, who: str, role: str, via: str, action: str, target: str, outcome: str, detail: str = "") -> None:
        values = [bounded(v, 128) for v in (who, role, via, action)] + [bounded(target, 256), bounded(outcome, 64),
                                                                        bounded(detail)]
        self._write([("INSERT INTO audit (time, who, role, via, action, target, outcome, detail) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (now(), *values))])

    def audit(self, limit: int = 100, who: str = "", action: str = "") -> list[AuditRow]:
        """The newest `limit` rows, newest first (optionally of one caller, or one action)."""
        where, params = [], []
        for column, value in (("who", who), ("action", action)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        sql = ("SELECT sequence, time, who, role, via, action, target, outcome, detail FROM audit"
               + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY sequence DESC LIMIT ?")
        return [AuditRow(*row) for row in self._read(sql, (*params, max(1, min(int(limit), 10_000))))]

    def close(self) -> None:
        self._sql.close()
