"""The accounts store and the authenticate functions on their own (no gRPC): tokens kept as
SHA-256 only, revocation, the audit log's bounds, the OIDC proxy mapping, the bootstrap operator
token, and jobs from before owners existed (a jobs database an older irforge wrote)."""

from __future__ import annotations

import base64
import hashlib
import sqlite3
import stat
from contextlib import ExitStack

import pytest

from irforge.accounts import audit
from irforge.accounts.authenticate import ProxyMapping, bearer_token, from_proxy_header, from_token
from irforge.accounts.errors import AccountsError, TeamExists, TokenNotFound
from irforge.accounts.front_door import bootstrap_operator
from irforge.accounts.identity import OPERATOR, TEAM, Identity, Unauthenticated, acting_as
from irforge.accounts.store import AccountsStore
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.errors import JobNotFound


@pytest.fixture()
def store(tmp_path):
    opened = AccountsStore(tmp_path / "accounts.sqlite3")
    yield opened
    opened.close()


def test_a_token_is_32_random_bytes_and_only_its_sha256_is_kept(store, tmp_path):
    token = store.create_team("team-a")
    assert token.startswith("irf_") and len(base64.urlsafe_b64decode(token[4:] + "=")) == 32
    assert store.create_team("team-b") != token
    rows = sqlite3.connect(tmp_path / "accounts.sqlite3").execute("SELECT * FROM tokens WHERE holder = 'team-a'").fetchall()
    assert len(rows) == 1 and token not in repr(rows)
    digest = hashlib.sha256(token.encode()).hexdigest()
    assert rows[0][0] == digest and store.team("team-a").token_ids == (digest[:12],)
    assert from_token(store, token) == Identity("team-a", TEAM, "token")


def test_revoked_and_unknown_tokens_are_refused_alike(store):
    first = store.create_team("team-a")
    second = store.issue_token("team-a")
    second_id = hashlib.sha256(second.encode()).hexdigest()[:12]
    assert store.revoke("team-a", second_id) == [second_id]
    with pytest.raises(Unauthenticated) as revoked:
        from_token(store, second)
    with pytest.raises(Unauthenticated) as unknown:
        from_token(store, "irf_" + "A" * 43)
    assert str(revoked.value) == str(unknown.value)
    assert from_token(store, first).name == "team-a"
    with pytest.raises(TokenNotFound):
        store.revoke("team-a", second_id)
    store.revoke("team-a")
    with pytest.raises(Unauthenticated):
        from_token(store, first)


def test_names_limits_and_who_owns_a_name(store):
    store.add_operator_token("admin")
    with pytest.raises(TeamExists):
        store.create_team("admin")   # a team never shares a name with an operator
    with pytest.raises(AccountsError, match="team name ' a': use 1 to 64"):
        store.create_team(" a")
    with pytest.raises(AccountsError, match="within 1..100000"):
        store.create_team("team-a", daily_submission_limit=0)
    store.create_team("team-a", daily_submission_limit=10)
    assert store.team("team-a").daily_submission_limit == 10
    assert store.set_limit("team-a", None).daily_submission_limit is None


def test_the_audit_log_is_bounded_and_never_holds_a_token(store):
    token = store.create_team("team-a")
    audit.attach(store)
    try:
        with acting_as(Identity("team-a", TEAM, "token")):
            audit.record("submit", "job1", audit.OK, f"sent {token} by mistake " + "x" * 2000)
            with pytest.raises(JobNotFound), audit.audited("cancel", "job2"):
                raise JobNotFound("job2")
        audit.record("results", "job3")   # no caller bound: recorded as nobody
    finally:
        audit.attach(None)
    rows = store.audit()
    assert [(r.who, r.action, r.target, r.outcome) for r in rows] == [
        ("(nobody)", "results", "job3", "ok"), ("team-a", "cancel", "job2", "refused"), ("team-a", "submit", "job1", "ok")]
    assert token not in rows[2].detail and token[4:20] not in rows[2].detail and len(rows[2].detail) == 500
    assert rows[1].detail == "JobNotFound: no job 'job2' (list jobs with `irforge jobs`)"


def test_the_bootstrap_operator_token(store, tmp_path):
    path = tmp_path / "operator.token"
    assert "written to" in bootstrap_operator(store, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    token = path.read_text().strip()
    assert from_token(store, token) == Identity("admin", OPERATOR, "token")
    assert "in " in bootstrap_operator(store, path) and path.read_text().strip() == token   # never replaced
    path.unlink()
    assert "still works" in bootstrap_operator(store, path) and not path.exists()
    secret = tmp_path / "secret" / "token"   # a deployment's Secret, mounted
    secret.parent.mkdir()
    secret.write_text("s3cret-from-a-kubernetes-secret-0123456789\n")
    bootstrap_operator(store, secret)
    assert from_token(store, "s3cret-from-a-kubernetes-secret-0123456789").role == OPERATOR
    secret.write_text("short\n")
    with pytest.raises(ValueError, match="at least 32"):
        bootstrap_operator(store, secret)


def test_bearer_headers():
    assert bearer_token(None) is None
    assert bearer_token("Bearer abc") == "abc" and bearer_token("bearer  abc ") == "abc"
    for bad in ("Basic abc", "Bearer ", "abc"):
        with pytest.raises(Unauthenticated, match="not 'Bearer <token>'"):
            bearer_token(bad)


def test_the_oidc_proxy_mapping(store, tmp_path):
    store.create_team("team-a")
    store.create_team("team-b")
    mapping_file = tmp_path / "proxy.yaml"
    mapping_file.write_text("users: {alice@example.org: team-a}\ngroups: {irforge-b: team-b, ghosts: team-z}\n"
                            "operators: [ops@example.org]\n")
    mapping = ProxyMapping.load(mapping_file)
    assert from_proxy_header(mapping, "alice@example.org", "irforge-b", store) == Identity("team-a", TEAM, "proxy")
    assert from_proxy_header(mapping, "bob@example.org", "staff, irforge-b", store) == Identity("team-b", TEAM, "proxy")
    assert from_proxy_header(mapping, "ops@example.org") == Identity("ops@example.org", OPERATOR, "proxy")
    for user, groups, message in (("", "", "no user"), ("eve@example.org", "staff", "not mapped"),
                                  ("carl@example.org", "ghosts", "does not exist")):
        with pytest.raises(Unauthenticated, match=message):
            from_proxy_header(mapping, user, groups, store)
    mapping_file.write_text("teams: {}\n")
    with pytest.raises(ValueError, match="users, groups and operators only"):
        ProxyMapping.load(mapping_file)


# The jobs table as irforge wrote it before jobs had owners (orchestrator/store.py before issue 27).
OLD_JOBS_TABLE = """CREATE TABLE jobs (
    job_id TEXT PRIMARY KEY, spec_json TEXT NOT NULL, state TEXT NOT NULL, error TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, metrics_json TEXT NOT NULL DEFAULT '{}')"""


def test_jobs_from_before_owners_are_the_operators(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    old = sqlite3.connect(state / "jobs.sqlite3")
    old.execute(OLD_JOBS_TABLE)
    old.execute("INSERT INTO jobs VALUES ('old1', '{\"dataset\": \"/d\"}', 'SUCCEEDED', '', '2026-01-01T00:00:00', "
                "'2026-01-01T00:00:00', '{\"nDCG@10\": 0.5}')")
    old.commit()
    old.close()
    with ExitStack() as stack:
        orchestrator = Orchestrator(state, ServiceAddresses(), cache_path=tmp_path / "cache.sqlite3").start()
        stack.callback(orchestrator.shutdown)
        record = orchestrator.get("old1")   # no caller bound: this process, the local operator
        assert (record.owner, record.metrics) == ("", {"nDCG@10": 0.5})
        with acting_as(Identity("team-a", TEAM, "token")):
            assert orchestrator.list() == []
            with pytest.raises(JobNotFound):
                orchestrator.get("old1")
        with acting_as(Identity("ops", OPERATOR, "token")):
            assert [job.job_id for job in orchestrator.list()] == ["old1"]
        # In a process that serves front doors, a call nobody bound a caller to is refused (fails closed).
        accounts = AccountsStore(tmp_path / "accounts.sqlite3")
        stack.callback(accounts.close)
        audit.attach(accounts)
        stack.callback(audit.attach, None)
        with pytest.raises(Unauthenticated, match="no caller is bound"):
            orchestrator.list()
    columns = [row[1] for row in sqlite3.connect(state / "jobs.sqlite3").execute("PRAGMA table_info(jobs)")]
    assert columns[-1] == "owner"
