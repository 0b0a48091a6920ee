"""A platform for the web page's tests: an orchestrator over real corpus and evaluator services,
its leaderboard, the web page in front of them on a loopback port, and teams with tokens issued by
the accounts store (authenticated as the platform does: accounts.authenticate.from_token)."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field

from pathlib import Path

import httpx
import pytest

from irforge.accounts import audit
from irforge.accounts.authenticate import from_token
from irforge.accounts.identity import OPERATOR, TEAM, Identity, acting_as
from irforge.accounts.store import AccountsStore
from irforge.app.leaderboard import Leaderboard
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.spec import JobSpec
from irforge.web.app import create_app
from irforge.web.server import start_web


@dataclass
class Platform:
    orchestrator: Orchestrator
    leaderboard: Leaderboard
    accounts: AccountsStore
    url: str
    tokens: dict[str, str] = field(default_factory=dict)   # team -> token

    def client(self, team: str | None = None, **options) -> httpx.Client:
        """An HTTP client logged in as `team` through the login form (None: not logged in)."""
        client = httpx.Client(base_url=self.url, follow_redirects=False, timeout=30.0, **options)
        if team is not None:
            login(client, self.tokens[team])
        return client


def login(client: httpx.Client, token: str) -> httpx.Response:
    form = client.get("/login")
    csrf = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    response = client.post("/login", data={"csrf": csrf, "token": token, "next": "/jobs"})
    assert response.status_code == 303, response.text
    return response


@pytest.fixture()
def make_platform(tmp_path, services_address):
    """make_platform(teams=("team-a", "team-b"), corpus=None, **orchestrator options) -> Platform."""
    made = []

    def make(teams=("team-a", "team-b"), corpus=None, tls: tuple[Path, Path] | None = None, **options) -> Platform:
        services = ServiceAddresses(corpus=corpus or services_address, evaluator=services_address,
                                    call_timeout_s=30.0, long_call_timeout_s=30.0)
        options = {"backoff_s": 0.05, "progress_interval_s": 0.0, **options}
        state = tmp_path / f"state-{len(made)}"
        orchestrator = Orchestrator(state, services, cache_path=tmp_path / "cache.sqlite3", **options).start()
        accounts = AccountsStore(state / "accounts.sqlite3")
        audit.attach(accounts)
        tokens = {team: accounts.create_team(team) for team in teams}
        tokens["operator"] = accounts.add_operator_token("ops")
        leaderboard = Leaderboard(orchestrator, team_limit=lambda team: accounts.team(team).daily_submission_limit)
        web = start_web(create_app(orchestrator, leaderboard=leaderboard,
                                   authenticate=lambda token: from_token(accounts, token)),
                        tls_cert=str(tls[0]) if tls else None, tls_key=str(tls[1]) if tls else None)
        made.append((orchestrator, web, leaderboard, accounts))
        return Platform(orchestrator, leaderboard, accounts, web.url, tokens)

    yield make
    for orchestrator, web, leaderboard, accounts in made:
        web.stop()
        orchestrator.shutdown(wait=True)
        leaderboard.close()
        audit.attach(None)
        accounts.close()


def assert_strict_page(html: str) -> None:
    """No inline script, no inline style, no event-handler attribute, no URL off this site."""
    for script in re.findall(r"<script\b[^>]*>(.*?)</script>", html, flags=re.S | re.I):
        assert script.strip() == "", f"inline script: {script[:120]!r}"
    assert all(" src=" in tag for tag in re.findall(r"<script\b[^>]*>", html, flags=re.I))
    assert not re.search(r"<style\b", html, re.I), "inline <style>"
    assert not re.search(r"\sstyle\s*=", html, re.I), "inline style attribute"
    assert not re.search(r"\son[a-z]+\s*=", html, re.I), "inline event handler"
    for url in re.findall(r"""\b(?:src|href|action|data-live)\s*=\s*["']([^"']*)["']""", html, flags=re.I):
        assert url.startswith(("/", "#", "?")) and not url.startswith("//"), f"not a path of this site: {url!r}"
    assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", html, re.I), "an absolute URL in the page"


def wait_ended(orchestrator, job_id: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with as_operator():    # a process with an accounts store refuses unbound calls (fails closed)
            record = orchestrator.get(job_id)
        if record.state.ended:
            return record
        time.sleep(0.1)
    pytest.fail(f"job {job_id} did not end within {timeout} s")


def submit_as(orchestrator, team: str, **spec) -> str:
    with acting_as(Identity(team, TEAM, "token")):
        return orchestrator.submit(JobSpec.of(**spec))


def screenshot_dir() -> Path | None:
    folder = os.environ.get("IRFORGE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return Path(folder)
    return None


def as_operator():
    """The test reading the platform's state as its operator (the platform's process refuses a call with no caller bound)."""
    return acting_as(Identity("ops", OPERATOR, "token"))
