"""The web application: routes, who the browser acts for, and how errors become pages.

Every page handler runs in a worker thread with the caller's Identity bound (acting_as), exactly
as a gRPC call is, so the rooms below decide what it may see. Identity comes from, in order: the
platform running without authentication (every caller is the local operator), a header an
Ingress's OIDC proxy set (only when the operator trusts it), or this site's session cookie."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs, quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from irforge.accounts import audit
from irforge.accounts.identity import LOCAL_OPERATOR, Forbidden, Identity, Unauthenticated, acting_as
from irforge.orchestrator.core import Orchestrator
from irforge.orchestrator.errors import JobNotFound, ResultsNotReady
from irforge.reports.markup import join, tag
from irforge.web import board, jobs, static
from irforge.web.pages import document, error_page, hidden, paragraph
from irforge.web.security import LOGIN_COOKIE, SESSION_COOKIE, SecurityHeaders, Session, SessionStore, safe_next, same_token

log = logging.getLogger("irforge.web")
MAX_FORM_BYTES = 16_384
SSE_POLL_S = 0.5
SSE_MAX_S = 3600.0          # a browser left open reconnects after this (EventSource does so itself)


class BadRequest(ValueError):
    """A request this site cannot answer as asked (a malformed parameter): HTTP 400."""


@dataclass
class WebContext:
    orchestrator: Orchestrator
    # token -> Identity (raises Unauthenticated); None: the platform runs without authentication
    authenticate: Callable[[str], Identity] | None = None
    # request headers -> Identity or None, set only when the operator trusts an Ingress's OIDC proxy
    proxy_identity: Callable[[Mapping[str, str]], Identity | None] | None = None
    sessions: SessionStore | None = None
    leaderboard: object | None = None   # app.leaderboard.Leaderboard; None: a platform without one

    def __post_init__(self):
        self.sessions = self.sessions or SessionStore()
        # What a caller may read of a job (closed-book datasets: irforge.leaderboard.disclosure),
        # the same policy the gRPC door asks.
        from irforge.orchestrator.server import ShowEverything

        self.disclosure = self.leaderboard.disclosure if self.leaderboard is not None else ShowEverything()

    def caller(self, request: Request) -> tuple[Identity, Session | None]:
        if self.authenticate is None:
            return LOCAL_OPERATOR, None
        if self.proxy_identity is not None:
            identity = self.proxy_identity(request.headers)
            if identity is not None:
                return identity, None
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is None:
            raise Unauthenticated("log in first")
        return session.identity, session


def create_app(orchestrator: Orchestrator, *, leaderboard=None, authenticate: Callable[[str], Identity] | None = None,
               proxy_identity: Callable[[Mapping[str, str]], Identity | None] | None = None,
               sessions: SessionStore | None = None) -> SecurityHeaders:
    """The ASGI application over the orchestrator core and (if the platform has one) the leaderboard's
    use cases. `authenticate`: token -> Identity (None: no authentication, --auth none);
    `proxy_identity`: request headers -> Identity, only when the operator trusts an OIDC proxy."""
    web = WebContext(orchestrator, authenticate, proxy_identity, sessions, leaderboard)

    def page(handler):
        """A GET page: handler(request, identity) -> (title, body[, options]) run with the identity bound."""
        async def endpoint(request: Request) -> Response:
            try:
                identity, session = web.caller(request)
            except Unauthenticated:
                return to_login(request)
            csrf = session.csrf if session else None

            def call():
                with acting_as(identity):
                    return handler(request, identity)

            try:
                result = await run_in_threadpool(call)
            except Exception as error:   # noqa: BLE001 - every error becomes a page, never a traceback
                return failure(request, error, identity, csrf)
            if isinstance(result, Response):
                return result
            title, body, *rest = result
            options = rest[0] if rest else {}
            return HTMLResponse(document(title, body, identity, csrf=csrf, **options))
        return endpoint

    def leaderboard_page(request: Request, identity: Identity):
        params = dict(request.query_params)
        return "Leaderboard", board.leaderboard_body(web.leaderboard, params, request.query_params.getlist("dataset"))

    def system_page(request: Request, identity: Identity):
        team, system = request.path_params["team"], request.path_params["system"]
        body = board.system_body(web.leaderboard, web.orchestrator, team, system, dict(request.query_params))
        return f"{team} / {system}", body

    def jobs_page(request: Request, identity: Identity):
        return "Jobs", jobs.jobs_body(web.orchestrator, web.disclosure)

    def job_page(request: Request, identity: Identity):
        job_id = request.path_params["job_id"]
        body, running = jobs.job_body(web.orchestrator, job_id, web.disclosure)
        options = {"refresh_s": jobs.RUNNING_REFRESH_S, "scripts": ("live.js",)} if running else {}
        return f"Job {job_id}", body, options

    def job_report(request: Request, identity: Identity):
        job_id = request.path_params["job_id"]
        from irforge.reports.page import CSP as REPORT_CSP

        text = jobs.job_report(web.orchestrator, job_id, web.disclosure)
        # The report is its own self-contained document with its own (hash-based) policy.
        return HTMLResponse(text, headers={"content-security-policy": REPORT_CSP,
                                           "content-disposition": f'attachment; filename="irforge-job-{quote(job_id, safe="")}.html"'})

    async def job_events(request: Request) -> Response:
        """Server-Sent Events of a job: `progress` for each stored event, `end` when it has ended."""
        try:
            identity, _ = web.caller(request)
        except Unauthenticated:
            return Response("log in first\n", status_code=401, media_type="text/plain")
        job_id = request.path_params["job_id"]

        def bound(after: int):
            with acting_as(identity):
                return jobs.new_events(web.orchestrator, job_id, after, web.disclosure)

        try:
            after = int(request.headers.get("last-event-id") or request.query_params.get("after") or 0)
            first = await run_in_threadpool(bound, after)     # JobNotFound before anything is streamed
        except ValueError:
            return Response("after: a whole number\n", status_code=400, media_type="text/plain")
        except JobNotFound:
            return Response("no such job\n", status_code=404, media_type="text/plain")

        async def stream():
            nonlocal after
            batch, ended = first
            deadline = asyncio.get_running_loop().time() + SSE_MAX_S
            while True:
                for event in batch:
                    after = event.sequence
                    yield f"event: progress\nid: {event.sequence}\ndata: {json.dumps(jobs.event_payload(event))}\n\n"
                if ended:
                    yield "event: end\ndata: {}\n\n"
                    return
                if await request.is_disconnected() or asyncio.get_running_loop().time() > deadline:
                    return
                await asyncio.sleep(SSE_POLL_S)
                batch, ended = await run_in_threadpool(bound, after)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"x-accel-buffering": "no"})

    async def login_form(request: Request, message: str = "", status: int = 200) -> Response:
        if web.authenticate is None:
            return HTMLResponse(document("Log in", paragraph(
                "This platform runs without authentication (--auth none): every visitor acts as the local operator.",
                class_="note"), LOCAL_OPERATOR), status_code=status)
        token = request.cookies.get(LOGIN_COOKIE) or _new_token()
        form = tag("form", join([
            hidden("csrf", token), hidden("next", safe_next(request.query_params.get("next"))),
            tag("label", join(["Team token", _password_input()])),
            tag("button", "Log in", type="submit")]), method="post", action="/login", class_="login")
        body = join([paragraph(message, class_="error") if message else "",
                     paragraph("Paste the token the operator issued to your team. It is checked once; the browser "
                               "then keeps only a session cookie.", class_="note"), form])
        response = HTMLResponse(document("Log in", body), status_code=status)
        response.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict", secure=is_secure(request), path="/login")
        return response

    async def login(request: Request) -> Response:
        if web.authenticate is None:
            return RedirectResponse("/", status_code=303)
        form = await read_form(request)
        if form is None or not same_origin(request):
            return HTMLResponse(error_page(400, "This form did not come from this site."), status_code=400)
        if not same_token(form.get("csrf"), request.cookies.get(LOGIN_COOKIE)):
            return await login_form(request, "The login form expired; please try again.", 400)
        try:
            identity = await run_in_threadpool(web.authenticate, form.get("token", "").strip())
        except Unauthenticated:
            return await login_form(request, "That token is not valid.", 401)
        session_id, _ = web.sessions.open(identity)
        with acting_as(identity):
            audit.record("web login")
        response = RedirectResponse(safe_next(form.get("next")), status_code=303)
        response.set_cookie(SESSION_COOKIE, session_id, max_age=int(web.sessions.ttl_s), httponly=True,
                            samesite="strict", secure=is_secure(request), path="/")
        response.delete_cookie(LOGIN_COOKIE, path="/login")
        return response

    async def logout(request: Request) -> Response:
        form = await read_form(request)
        session_id = request.cookies.get(SESSION_COOKIE)
        session = web.sessions.get(session_id)
        if form is None or not same_origin(request) or session is None or not same_token(form.get("csrf"), session.csrf):
            return HTMLResponse(error_page(400, "This form did not come from this site, or the session has ended."),
                                status_code=400)
        web.sessions.close(session_id)
        with acting_as(session.identity):
            audit.record("web logout")
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in static.ASSETS:
            return Response("not found\n", status_code=404, media_type="text/plain")
        body, media_type = static.ASSETS[name]
        etag = static.ETAGS[name]
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"etag": etag})
        return Response(body, media_type=media_type, headers={"etag": etag})

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)    # browsers ask for it; the site has none

    routes = [
        Route("/static/{name}", asset),
        Route("/favicon.ico", no_icon),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/", page(leaderboard_page)),
        Route("/systems/{team}/{system:path}", page(system_page)),   # a system's name may hold a "/"
        Route("/jobs", page(jobs_page)),
        Route("/jobs/{job_id}", page(job_page)),
        Route("/jobs/{job_id}/events", job_events),
        Route("/jobs/{job_id}/report", page(job_report)),
    ]

    async def not_found(request: Request, exc) -> Response:
        return HTMLResponse(error_page(404, "No such page."), status_code=404)

    async def not_allowed(request: Request, exc) -> Response:
        return HTMLResponse(error_page(405, "This page does not take that method."), status_code=405)

    application = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed})
    application.state.web = web
    return SecurityHeaders(application)


def failure(request: Request, error: Exception, identity: Identity, csrf: str | None) -> Response:
    # Another team's job is "not found", exactly as a job that never existed: no existence oracle.
    if isinstance(error, JobNotFound):
        status, message = 404, "No such job."
    elif isinstance(error, LookupError):
        status, message = 404, "Not found."
    elif isinstance(error, Forbidden):
        status, message = 403, "This is not yours to see."
    elif isinstance(error, Unauthenticated):
        return to_login(request)
    elif isinstance(error, ResultsNotReady):
        status, message = 409, "The job has no results yet: a report exists once it has SUCCEEDED."
    elif isinstance(error, (BadRequest, board.BadQuery)):
        status, message = 400, str(error)
    else:
        # The page says nothing of the error (it could quote server-side data); the log has it.
        log.error("web: %s %s failed: %s", request.method, request.url.path, type(error).__name__, exc_info=error)
        status, message = 500, "The server could not build this page; the operator's log has the details."
    return HTMLResponse(error_page(status, message, identity, csrf), status_code=status)


def to_login(request: Request) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)


async def read_form(request: Request) -> dict[str, str] | None:
    """An urlencoded form (the only kind these pages send), bounded; None if it is not one."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=20)
    return {key: values[0] for key, values in fields.items()}


def same_origin(request: Request) -> bool:
    """A POST from this site's own page: its Origin (browsers send one on every POST) names this
    host. SameSite=Strict cookies and the forms' tokens are the other two locks."""
    from urllib.parse import urlsplit

    origin = request.headers.get("origin")
    if origin is None:
        return True     # not a browser's cross-site POST (they always send Origin); the token still decides
    return urlsplit(origin).netloc == request.headers.get("host", "")


def is_secure(request: Request) -> bool:
    """Served over TLS here, or by an Ingress that terminated it (cookies then only travel over TLS)."""
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto", "").lower() == "https"


def _new_token() -> str:
    import secrets

    return secrets.token_urlsafe(24)


def _password_input():
    from irforge.reports.markup import Markup

    return Markup('<input type="password" name="token" autocomplete="current-password" required>')
