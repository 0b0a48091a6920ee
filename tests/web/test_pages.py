"""The web page over a real orchestrator (real corpus and evaluator services, SciFact slices):
the login gives a server-side session in a cookie a script cannot read, every response carries the
strict CSP and its companions, the pages hold no inline script or style and no external URL, a
job's page follows it while it runs (meta refresh without scripts, Server-Sent Events with
live.js) and shows its failure's reason, and headless Chromium renders every page without a
script error or a request to anywhere else, with and without scripts."""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlsplit

import httpx
import pytest
import pytrec_eval

from irforge.accounts.identity import TEAM, Identity
from irforge.reports.page import STYLE
from irforge.web.security import SessionStore

from ..browser import DevTools, RenderedPage
from ..certificates import certificate, new_key, write_pem
from .conftest import as_operator, assert_strict_page, login, screenshot_dir, submit_as, wait_ended

CSP = ("default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def test_login_opens_a_server_side_session_and_every_response_is_locked_down(make_platform, monkeypatch):
    platform = make_platform()
    anonymous = platform.client()
    # Not logged in: every page sends the browser to the login form, and says where it came from.
    response = anonymous.get("/jobs?limit=5")
    assert response.status_code == 303 and response.headers["location"] == "/login?next=%2Fjobs%3Flimit%3D5"
    assert anonymous.get("/jobs/anything/events").status_code == 401
    # The style sheet is the report's own (one look), served from this origin.
    style = anonymous.get("/static/style.css")
    assert style.status_code == 200 and style.headers["content-type"].startswith("text/css") and STYLE in style.text
    assert anonymous.get("/static/style.css", headers={"if-none-match": style.headers["etag"]}).status_code == 304
    assert anonymous.get("/static/nothing.js").status_code == 404

    form = anonymous.get("/login")
    assert form.status_code == 200 and form.headers["content-security-policy"] == CSP
    for name, value in {"x-content-type-options": "nosniff", "referrer-policy": "same-origin", "x-frame-options": "DENY",
                        "cache-control": "no-store"}.items():
        assert form.headers[name] == value, name
    assert_strict_page(form.text)
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
    token = platform.tokens["team-a"]

    # The form's token must come back (double submit), from this site's own page.
    assert anonymous.post("/login", data={"token": token, "csrf": "forged"}).status_code == 400
    assert anonymous.post("/login", data={"token": token, "csrf": csrf},
                          headers={"origin": "https://evil.example"}).status_code == 400
    wrong = anonymous.post("/login", data={"token": "not-a-token", "csrf": csrf})
    assert wrong.status_code == 401 and "not valid" in wrong.text and "set-cookie" not in {
        k for k, v in wrong.headers.items() if "irforge_session" in v}
    # A login sends the browser on only to a path of this site (never //elsewhere).
    good = anonymous.post("/login", data={"token": token, "csrf": csrf, "next": "//evil.example/x"})
    assert good.status_code == 303 and good.headers["location"] == "/"
    cookie = next(v for k, v in good.headers.multi_items() if k == "set-cookie" and v.startswith("irforge_session="))
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite", "path", "max-age"} <= attributes and "samesite=strict" in cookie.lower()
    assert "secure" not in attributes                    # plain HTTP on loopback: a Secure cookie would never come back
    assert token not in cookie                           # the browser keeps a session id, never the token
    session_id = cookie.split(";")[0].split("=", 1)[1]

    jobs = anonymous.get("/jobs")
    assert jobs.status_code == 200 and "team-a (team)" in jobs.text and jobs.headers["cache-control"] == "no-store"
    assert_strict_page(jobs.text)
    # Behind an Ingress that terminated TLS, the cookie is Secure.
    other = platform.client()
    form = other.get("/login")
    csrf2 = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
    behind_tls = other.post("/login", data={"token": token, "csrf": csrf2}, headers={"x-forwarded-proto": "https"})
    secure_cookie = next(v for k, v in behind_tls.headers.multi_items() if k == "set-cookie" and v.startswith("irforge_session="))
    assert "secure" in {p.strip().lower() for p in secure_cookie.split(";")}

    # Logging out takes the session's own token; afterwards the old cookie opens nothing.
    page_csrf = re.search(r'name="csrf" value="([^"]+)"', jobs.text).group(1)
    assert anonymous.post("/logout", data={"csrf": "forged"}).status_code == 400
    assert anonymous.post("/logout", data={"csrf": page_csrf}).status_code == 303
    replay = platform.client()
    replay.cookies.set("irforge_session", session_id)
    assert replay.get("/jobs").status_code == 303


def test_over_tls_the_cookie_is_secure_and_hsts_is_sent(make_platform, tmp_path):
    """Served with a certificate (the gRPC server's, in the service): HTTPS only, a Secure cookie, HSTS."""
    key = new_key()
    cert = write_pem(tmp_path / "server.pem", certificate("127.0.0.1", key, "127.0.0.1", key, ca=True, server=True))
    key_file = write_pem(tmp_path / "server.key", key=key)
    platform = make_platform(tls=(cert, key_file))
    assert platform.url.startswith("https://127.0.0.1:")
    import ssl

    client = platform.client(verify=ssl.create_default_context(cafile=str(cert)))
    response = login(client, platform.tokens["team-a"])
    cookie = next(v for k, v in response.headers.multi_items() if k == "set-cookie" and v.startswith("irforge_session="))
    assert "secure" in {part.strip().lower() for part in cookie.split(";")}
    page = client.get("/jobs")
    assert page.status_code == 200 and page.headers["strict-transport-security"] == "max-age=31536000"
    with pytest.raises(httpx.HTTPError):     # plain HTTP on the TLS port is not served
        httpx.get(platform.url.replace("https://", "http://") + "jobs", timeout=10)


def test_sessions_expire_and_are_stored_by_hash():
    store = SessionStore(ttl_s=0.2)
    session_id, session = store.open(Identity("team-a", TEAM, "token"))
    assert store.get(session_id) is session and store.get("guess") is None
    assert session_id not in repr(store._sessions)       # only the SHA-256 of the id is kept
    time.sleep(0.25)
    assert store.get(session_id) is None


def test_a_job_page_shows_state_metrics_events_and_the_report(make_platform, scifact_subset):
    platform = make_platform()
    client = platform.client("team-a")
    job_id = submit_as(platform.orchestrator, "team-a", dataset=str(scifact_subset))
    record = wait_ended(platform.orchestrator, job_id)
    assert record.state.value == "SUCCEEDED", record.error

    page = client.get(f"/jobs/{job_id}")
    assert page.status_code == 200
    assert_strict_page(page.text)
    assert 'http-equiv="refresh"' not in page.text and "live.js" not in page.text    # ended: nothing to follow
    # nDCG@10 as pytrec_eval computes it from the job's run file and the dataset's qrels.
    with as_operator():
        folder = platform.orchestrator.results_dir(job_id)
    run: dict = {}
    for line in (folder / "run.trec").read_text().splitlines():
        query, _, doc, _, score, _ = line.split()
        run.setdefault(query, {})[doc] = float(score)
    qrels: dict = {}
    for line in (scifact_subset / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, grade = line.split("\t")
        qrels.setdefault(query, {})[doc] = int(grade)
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    expected = sum(s["ndcg_cut_10"] for s in scores.values()) / len(qrels)
    metrics = dict(re.findall(r'<tr><th scope="row">([^<]+)</th><td class="num" data-sort="([^"]+)"', page.text))
    assert float(metrics["nDCG@10"]) == pytest.approx(expected, abs=1e-9)

    listing = client.get("/jobs")
    assert f'href="/jobs/{job_id}"' in listing.text and "SUCCEEDED" in listing.text

    report = client.get(f"/jobs/{job_id}/report")
    assert report.status_code == 200 and report.headers["content-disposition"].startswith("attachment;")
    assert report.headers["content-security-policy"].startswith("default-src 'none'; style-src 'sha256-")
    assert "<!DOCTYPE html>" in report.text and f"{expected:.4f}" in report.text

    # The event stream of an ended job: every stored event, then `end`.
    with client.stream("GET", f"/jobs/{job_id}/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        text = "".join(stream.iter_text())
    names = re.findall(r"^event: (\w+)$", text, flags=re.M)
    with as_operator():
        stored = list(platform.orchestrator.watch(job_id, 0, is_active=lambda: False))
    assert names == ["progress"] * len(stored) + ["end"]
    assert [json.loads(d)["state"] for d in re.findall(r"^data: (\{.+\})$", text, flags=re.M)] == [e.state for e in stored]

    assert client.get("/jobs/no-such-job").status_code == 404
    assert client.get("/jobs/no-such-job/report").status_code == 404
    assert client.get("/jobs/no-such-job/events").status_code == 404


def test_chromium_follows_a_running_job_to_its_failure_and_renders_every_page(make_platform, scifact_subset, unused_port,
                                                                             tmp_path):
    """A job whose corpus service is unreachable: it RUNS through its retries (seconds), then
    FAILS with the reason. Chromium logs in through the form, opens the job while it runs, and
    sees the page change to the failure without anyone reloading it."""
    platform = make_platform(corpus=f"127.0.0.1:{unused_port}", backoff_s=1.5, max_attempts=3)
    browser = DevTools(tmp_path / "chromium")
    shots = screenshot_dir()
    try:
        login_page = browser.goto(platform.url + "login?next=%2Fjobs")
        assert 'name="token"' in login_page
        listing = browser.submit("form.login", {"token": platform.tokens["team-a"]})
        assert "team-a (team)" in listing and "No jobs yet." in listing

        job_id = submit_as(platform.orchestrator, "team-a", dataset=str(scifact_subset))
        running = browser.goto(f"{platform.url}jobs/{job_id}")
        assert "RUNNING" in running or "QUEUED" in running
        assert 'http-equiv="refresh"' in running and "/static/live.js" in running
        if shots:
            browser.screenshot(shots / "web-job-running.png")
        mark = len(browser.events)
        browser.wait_for("Page.loadEventFired", mark, timeout=60)     # live.js (or the refresh) reloads it
        failed = browser.dom()
        while "data-failure" not in failed:     # (the FAILED event is stored a moment before the state)
            mark = len(browser.events)
            browser.wait_for("Page.loadEventFired", mark, timeout=60)
            failed = browser.dom()
        assert "data-failure" in failed and "gave up after 3 attempts" in failed and 'http-equiv="refresh"' not in failed
        assert any(url.endswith(f"/jobs/{job_id}/events") for url in browser.requested()), "live.js never followed the job"
        if shots:
            browser.screenshot(shots / "web-job-failed.png")

        # Every page and every link on it renders; scripts ran to their end without an error.
        seen = set()
        for path in ("/jobs", f"/jobs/{job_id}"):
            dom = browser.goto(platform.url.rstrip("/") + path)
            rendered = RenderedPage(dom)
            assert rendered.body.get("data-script-errors") == "" and rendered.body.get("data-rendered") == "ok", path
            seen.update(h for h in re.findall(r'href="([^"#]+)"', dom))
        client = platform.client("team-a")
        for href in sorted(seen):
            assert client.get(href).status_code == 200, href
        assert not browser.problems(), browser.problems()
        origin = urlsplit(platform.url).netloc
        assert all(urlsplit(url).netloc == origin for url in browser.requested() if not url.startswith(("about:", "data:")))

        # Without scripts the page is complete: the same tables, no live updates needed.
        browser.call("Emulation.setScriptExecutionDisabled", session=True, value=True)
        quiet = RenderedPage(browser.goto(f"{platform.url}jobs/{job_id}"))
        assert "data-rendered" not in quiet.body and quiet.rows["job-steps"] == 3 and quiet.rows["job-events"] >= 3
    finally:
        browser.close()


def test_the_browser_checks_can_fail(tmp_path):
    """What the Chromium tests assert is empty does fill: an inline script and an image from
    elsewhere under a policy like the site's are both refused and reported."""
    browser = DevTools(tmp_path / "chromium")
    try:
        browser.goto("data:text/html,<meta http-equiv=\"Content-Security-Policy\" content=\"script-src 'self'; "
                     "img-src 'self'\"><script>document.title='ran'</script><img src=\"http://127.0.0.1:9/x.png\">")
        problems = browser.problems()
        assert any("inline script" in p for p in problems) and any("img-src" in p for p in problems), problems
        assert browser.evaluate("document.title") != "ran"
    finally:
        browser.close()
