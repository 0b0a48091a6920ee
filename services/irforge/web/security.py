"""What every response carries (a strict Content-Security-Policy and its companions) and the
server-side sessions a token login opens. The browser holds only a random session id in an
HttpOnly, SameSite=Strict cookie; the token itself is checked once, at login, and never stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from irforge.accounts.identity import Identity

# No inline script or style anywhere: the pages load /static/*.css and *.js from this origin only.
# connect-src admits the job page's EventSource (same origin); nothing else may be fetched.
CSP = ("default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")

# same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on a form POST,
# and the POST check below could no longer tell this site's forms from another's.
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}

SESSION_COOKIE = "irforge_session"
LOGIN_COOKIE = "irforge_login"      # the login form's double-submit token (no session exists yet)
DEFAULT_SESSION_TTL_S = 8 * 3600
MAX_SESSIONS = 10_000


class SecurityHeaders:
    """ASGI middleware: the headers above on every response; `Cache-Control: no-store` on all but
    the static files (pages name a team's jobs and scores: no shared cache may keep them)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        static = scope.get("path", "").startswith("/static/")
        secure = scope.get("scheme") == "https"

        async def with_headers(message):
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k.encode(), v.encode()) for k, v in HEADERS.items() if k.encode() not in present]
                if b"cache-control" not in present:
                    extra.append((b"cache-control", b"no-cache" if static else b"no-store"))
                if secure:
                    extra.append((b"strict-transport-security", b"max-age=31536000"))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


@dataclass
class Session:
    identity: Identity
    csrf: str               # the token every form of this session carries back
    expires: float          # time.monotonic() deadline


class SessionStore:
    """Sessions in this process's memory, keyed by the SHA-256 of their id (a memory dump shows no
    usable cookie). A restart logs everyone out, which is the safe direction; expiry is absolute."""

    def __init__(self, ttl_s: float = DEFAULT_SESSION_TTL_S, limit: int = MAX_SESSIONS):
        self.ttl_s, self.limit = ttl_s, limit
        self._sessions: dict[str, Session] = {}
        self._guard = threading.Lock()

    @staticmethod
    def _key(session_id: str) -> str:
        return hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()

    def open(self, identity: Identity) -> tuple[str, Session]:
        """A new session (never a reused id: a login cannot be fixed in advance)."""
        session_id = secrets.token_urlsafe(32)
        session = Session(identity, secrets.token_urlsafe(24), time.monotonic() + self.ttl_s)
        with self._guard:
            self._expire()
            while len(self._sessions) >= self.limit:   # the oldest goes first (dicts keep insertion order)
                self._sessions.pop(next(iter(self._sessions)))
            self._sessions[self._key(session_id)] = session
        return session_id, session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        with self._guard:
            session = self._sessions.get(self._key(session_id))
            if session is not None and session.expires <= time.monotonic():
                self._sessions.pop(self._key(session_id), None)
                return None
            return session

    def close(self, session_id: str | None) -> None:
        if session_id:
            with self._guard:
                self._sessions.pop(self._key(session_id), None)

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, s in self._sessions.items() if s.expires <= now]:
            del self._sessions[key]


def same_token(given: str | None, expected: str | None) -> bool:
    return bool(given) and bool(expected) and hmac.compare_digest(str(given), str(expected))


def safe_next(target: str | None) -> str:
    """Where a login may send the browser on: a path of this site only (no //host, no scheme)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target
