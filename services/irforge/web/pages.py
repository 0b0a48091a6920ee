"""The frame of every page: the report's markup (reports/markup.py) inside a document that loads
its style and scripts from /static/ (the CSP admits nothing inline), the site's header, and the
error pages. Every value from a record or a request reaches HTML through `esc`/`tag`."""

from __future__ import annotations

from irforge import __version__
from irforge.accounts.identity import Identity
from irforge.reports.markup import Markup, esc, join, tag

NAV = (("/", "Leaderboard"), ("/jobs", "Jobs"))


def document(title: str, body, identity: Identity | None = None, *, csrf: str | None = None,
             refresh_s: int | None = None, scripts: tuple[str, ...] = ()) -> str:
    """A whole page. `refresh_s`: reload every so many seconds (a running job's page: it follows
    the job without any script). `csrf`: the session's token, for the logout form."""
    head = [Markup('<meta charset="utf-8">'),
            Markup('<meta name="viewport" content="width=device-width, initial-scale=1">'),
            tag("title", f"{title} · irforge"),
            Markup('<link rel="stylesheet" href="/static/style.css">')]
    if refresh_s:
        head.append(Markup(f'<meta http-equiv="refresh" content="{int(refresh_s)}">'))
    parts = [Markup('<script src="/static/errors.js"></script>'), site_header(identity, csrf),
             tag("main", join([tag("h1", title), body])),
             tag("footer", f"irforge {__version__}"), Markup('<script src="/static/sort.js"></script>')]
    parts += [Markup(f'<script src="/static/{esc(name)}"></script>') for name in scripts]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head>" + join(head) + "</head>\n<body>" + join(parts)
            + "</body></html>\n")


def site_header(identity: Identity | None, csrf: str | None) -> Markup:
    links = tag("nav", join(tag("a", name, href=href) for href, name in NAV), aria_label="site")
    who = Markup("")
    if identity is not None:
        who = tag("span", f"{identity.name} ({identity.role})", class_="meta")
        if csrf:   # a session to end (a proxy's or --auth none's identity has none)
            who += tag("form", join([Markup(hidden("csrf", csrf)), tag("button", "Log out", type="submit")]),
                       method="post", action="/logout")
    return tag("header", join([tag("span", "irforge", class_="brand"), links, who]), class_="site")


def hidden(name: str, value: str) -> Markup:
    return Markup(f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">')


def paragraph(*parts, class_: str | None = None) -> Markup:
    return tag("p", join(parts), class_=class_)


def link(text, href: str) -> Markup:
    return tag("a", text, href=href)


def error_page(status: int, message: str, identity: Identity | None = None, csrf: str | None = None) -> str:
    titles = {400: "Bad request", 401: "Log in first", 403: "Not allowed", 404: "Not found", 409: "Not ready",
              429: "Too many requests", 500: "Something went wrong"}
    return document(titles.get(status, "Error"), paragraph(message, class_="error"), identity, csrf=csrf)
