"""The web page in the orchestrator's own process: `irforge service orchestrator --web-port 0`
prints its URL after the gRPC port's, logs in with the operator token the process bootstrapped,
believes an OIDC proxy's user header only as configured (a user mapped to no team is sent to the
login form), and a web port already taken stops the service with exit 2 before anything serves."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .conftest import login

ROOT = Path(__file__).resolve().parents[2]


def start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / "service.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "services"), "HF_HUB_OFFLINE": "1"}
    with open(log, "wb") as output:
        process = subprocess.Popen([sys.executable, "-m", "irforge.cli.main", "service", "orchestrator", "--port", "0",
                                    "--state-dir", str(tmp_path / "state"), "--auth", "tokens", *extra],
                                   stdout=output, stderr=subprocess.STDOUT, env=env)
    return process, log


def wait_for_line(process: subprocess.Popen, log: Path, pattern: str, timeout: float = 120.0) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found:
            return found
        if process.poll() is not None:
            break
        time.sleep(0.2)
    pytest.fail(f"no {pattern!r} in the service's output: {log.read_text(errors='replace')[-2000:]}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_the_orchestrator_process_serves_the_page_with_its_accounts(tmp_path):
    mapping = tmp_path / "proxy-mapping.yaml"
    mapping.write_text("users: {stranger@example.org: no-such-team}\noperators: [ops@example.org]\n")
    process, log = start(tmp_path, "--web-port", "0", "--web-proxy-user-header", "X-Auth-Request-Email",
                         "--web-proxy-mapping", str(mapping))
    try:
        url = wait_for_line(process, log, r"irforge web page at (http://\S+)").group(1)
        grpc = wait_for_line(process, log, r"irforge orchestrator service listening on \S+:(\d+)")
        text = log.read_text()
        assert text.index(grpc.group(0)) < text.index(url)      # the URL comes after the gRPC port's line
        token = (tmp_path / "state" / "operator.token").read_text().strip()
        with httpx.Client(base_url=url, follow_redirects=False, timeout=30) as client:
            assert client.get("/jobs").status_code == 303
            login(client, token)
            page = client.get("/jobs")
            assert page.status_code == 200 and "(operator)" in page.text
        with httpx.Client(base_url=url, follow_redirects=False, timeout=30) as proxied:
            operator = proxied.get("/jobs", headers={"X-Auth-Request-Email": "ops@example.org"})
            assert operator.status_code == 200 and "ops@example.org (operator)" in operator.text
            stranger = proxied.get("/jobs", headers={"X-Auth-Request-Email": "stranger@example.org"})
            assert stranger.status_code == 303 and stranger.headers["location"].startswith("/login")
    finally:
        stop(process)
    assert process.returncode == 0, log.read_text()[-2000:]


def test_a_taken_web_port_stops_the_service_before_it_serves(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        process, log = start(tmp_path, "--web-port", str(port))
        try:
            assert process.wait(timeout=120) == 2
        finally:
            stop(process)
    text = log.read_text()
    assert f"the web page cannot listen on 127.0.0.1:{port}" in text and "listening on" not in text


def test_irforge_serve_prints_the_web_page_url(tmp_path):
    """`irforge serve --web-port 0`: the orchestrator it starts serves the page; serve prints the URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "services"), "HF_HUB_OFFLINE": "1"}
    log = tmp_path / "serve.log"
    with open(log, "wb") as output:
        process = subprocess.Popen([sys.executable, "-m", "irforge.cli.main", "serve", "--no-models", "--no-judge",
                                    "--base-port", "0", "--web-port", "0", "--state-dir", str(tmp_path / "platform")],
                                   stdout=output, stderr=subprocess.STDOUT, env=env)
    try:
        url = wait_for_line(process, log, r"irforge serve: web page at (http://\S+)", timeout=240).group(1)
        wait_for_line(process, log, r"irforge serve: ready;")
        with httpx.Client(base_url=url, follow_redirects=False, timeout=30) as client:
            page = client.get("/jobs")     # --auth none (serve's default): the local operator, no login
            assert page.status_code == 200 and "local (operator)" in page.text
            assert client.get("/").status_code == 200
    finally:
        stop(process)
    assert process.returncode == 0, log.read_text()[-2000:]
