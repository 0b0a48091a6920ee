"""A platform for the web page's tests: an orchestrator over real corpus and evaluator services,
the web page in front of it on a loopback port, and teams with tokens. Until the accounts room's
token store is merged, a token is checked by the smallest honest stand-in: a dict in this file."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import httpx
import pytest

from irforge.accounts.identity import TEAM, Identity, Unauthenticated
from irforge.orchestrator.context import ServiceAddresses
from irforge.orchestrator.core import Orchestrator
from irforge.web.app import create_app
from irforge.web.server import start_web


@dataclass
class Platform:
    orchestrator: Orchestrator
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

    def make(teams=("team-a", "team-b"), corpus=None, **options) -> Platform:
        services = ServiceAddresses(corpus=corpus or services_address, evaluator=services_address,
                                    call_timeout_s=30.0, long_call_timeout_s=30.0)
        options = {"backoff_s": 0.05, "progress_interval_s": 0.0, **options}
        orchestrator = Orchestrator(tmp_path / f"state-{len(made)}", services, cache_path=tmp_path / "cache.sqlite3",
                                    **options).start()
        tokens = {team: secrets.token_urlsafe(32) for team in teams}
        identities = {token: Identity(team, TEAM, "token") for team, token in tokens.items()}

        def authenticate(token: str) -> Identity:
            if token not in identities:
                raise Unauthenticated("unknown token")
            return identities[token]

        web = start_web(create_app(orchestrator, authenticate=authenticate))
        made.append((orchestrator, web))
        return Platform(orchestrator, web.url, tokens)

    yield make
    for orchestrator, web in made:
        web.stop()
        orchestrator.shutdown(wait=True)
