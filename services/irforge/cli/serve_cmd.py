"""`irforge serve`: the whole platform on one machine. Every service runs as its own process
(`irforge service <role>` on 127.0.0.1), the orchestrator last with the others' addresses; serve
waits for each gRPC health check, prints the addresses, and on Ctrl-C or SIGTERM stops them all
(SIGTERM, a grace period, then SIGKILL to the process's whole group, so no Ray worker is orphaned).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from irforge.accounts.authenticate import MODES as AUTH_MODES
from irforge.config import DEFAULT_MODEL

# Role -> offset from --base-port (the platform's default ports: 50050 + offset).
PORT_OFFSETS = {"orchestrator": 0, "corpus": 1, "evaluator": 2, "models": 3, "judge": 4}
LISTENING = re.compile(r"irforge \w+ service listening on (\S+):(\d+)")
WEB_PAGE = re.compile(r"irforge web page at (\S+)")
STOP_GRACE_S = 15.0
OPERATOR_NOTICE = re.compile(r"^irforge orchestrator: (operator token .*)$", re.MULTILINE)


class StartupError(RuntimeError):
    """A service did not come up: names it and carries the end of its output."""


@dataclass
class ServiceProcess:
    role: str
    process: subprocess.Popen
    log: Path
    address: str = ""
    exit_code: int | None = field(default=None)

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve", help="run the whole platform on this machine (every service its own process) until Ctrl-C",
        description="Start the corpus, evaluator, judge and models (Ray Serve) services and the orchestrator as "
        "processes on HOST, wait for their health checks, print their addresses; Ctrl-C or SIGTERM stops them all.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address every service binds (default loopback)")
    parser.add_argument("--base-port", type=int, default=50050,
                        help="orchestrator port; corpus +1, evaluator +2, models +3, judge +4 (0: free ports)")
    parser.add_argument("--state-dir", type=Path, help="indexes, vectors, judgements, jobs and logs under this folder "
                        "(default: each service's own default location); the embedding cache stays the one `irforge eval` "
                        "uses unless --cache-dir says otherwise")
    parser.add_argument("--cache-dir", type=Path, help="embedding (and generation) cache folder of the platform (default: "
                        "$IRFORGE_CACHE_DIR, else your user cache dir, e.g. ~/.cache/irforge: the cache `irforge eval` uses, "
                        "so vectors eval encoded are not encoded again)")
    parser.add_argument("--no-models", action="store_true", help="no models service (BM25-only platform; no Ray)")
    parser.add_argument("--no-judge", action="store_true", help="no judge service")
    parser.add_argument("--model", default=DEFAULT_MODEL, help=f"model the models service serves (default {DEFAULT_MODEL})")
    parser.add_argument("--job-workers", type=int, default=2, help="jobs the orchestrator runs at once")
    parser.add_argument("--web-port", type=int, metavar="PORT",
                        help="the orchestrator also serves the web page (leaderboard, jobs, reports) on HOST:PORT "
                             "(0: a free port); its URL is printed (default: off)")
    parser.add_argument("--auth", choices=AUTH_MODES, default="none",
                        help="who may call the orchestrator: none (default: you, on this machine) or tokens (teams and "
                             "operators; the first operator token is written to STATE_DIR/orchestrator/operator.token; "
                             "docs/accounts.md)")
    parser.add_argument("--daily-submission-limit", type=int, default=10, metavar="N",
                        help="leaderboard submissions a team may make per UTC day (default 10; docs/leaderboard.md)")
    backends = parser.add_argument_group("backends (passed to the corpus and judge services)")
    backends.add_argument("--backend", choices=("embedded", "elasticsearch"), default="embedded", help="lexical backend")
    backends.add_argument("--elasticsearch-url", help="Elasticsearch URL (default $IRFORGE_ELASTICSEARCH_URL)")
    backends.add_argument("--vector-backend", choices=("embedded", "qdrant"), default="embedded", help="vector backend")
    backends.add_argument("--qdrant-url", help="Qdrant server URL (default $IRFORGE_QDRANT_URL)")
    backends.add_argument("--judge", default="embedded", help="'embedded' or a judge spec YAML (default embedded)")
    parser.add_argument("--startup-timeout", type=float, default=180.0, help="seconds each service has to pass its health check")
    parser.set_defaults(handler=run_serve)


def _environment(state_dir: Path | None, cache_dir: Path | None = None) -> dict:
    from irforge.cli.service_cmd import PARENT_PID_VARIABLE

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1",
           PARENT_PID_VARIABLE: str(os.getpid())}
    if state_dir is not None:
        # Not the embedding cache: one user has one, so the platform finds what `irforge eval`
        # already encoded (a SciFact dense job re-encoded 5,183 documents, ~7 min on 2 cores, otherwise).
        env.update(IRFORGE_INDEX_DIR=str(state_dir / "indexes"), IRFORGE_VECTOR_DIR=str(state_dir / "vectors"),
                   IRFORGE_JUDGE_STORE=str(state_dir / "judgements.sqlite3"), IRFORGE_STATE_DIR=str(state_dir / "orchestrator"))
    if cache_dir is not None:
        env["IRFORGE_CACHE_DIR"] = str(cache_dir)
    return env


def _port(args, role: str) -> int:
    return 0 if args.base_port == 0 else args.base_port + PORT_OFFSETS[role]


def _start(role: str, extra: list[str], args, env: dict, logs: Path) -> ServiceProcess:
    log = logs / f"{role}.log"
    command = [sys.executable, "-m", "irforge.cli.main", "service", role, "--host", args.host, "--port", str(_port(args, role)), *extra]
    with open(log, "wb") as output:
        process = spawn_service(command, output, env)
    return ServiceProcess(role, process, log)


def spawn_service(command: list[str], output, env: dict) -> subprocess.Popen:
    # Its own session: a terminal's Ctrl-C reaches serve only, which then stops each service in
    # order; and killpg reaches everything the service started (Ray's raylet and workers).
    # No preexec_fn: it makes Popen fork() this process, whose gRPC (the health checks of the
    # services started before) then runs in the child before exec and killed about one child in
    # eight (SIGSEGV, or SIGABRT "ConsumeWakeup" in ev_epoll1_linux.cc). The service asks for its
    # parent-death signal itself (service_cmd.die_with_parent).
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)


def _wait_healthy(service: ServiceProcess, timeout: float, host: str) -> None:
    from irforge.common.grpc_server import wait_until_serving

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if service.process.poll() is not None:
            raise StartupError(f"the {service.role} service exited with code {service.process.returncode} before serving; "
                               f"its last output ({service.log}):\n{service.tail()}")
        if not service.address:
            match = LISTENING.search(service.log.read_text(encoding="utf-8", errors="replace"))
            if match:
                service.address = f"{'127.0.0.1' if host in ('0.0.0.0', '::') else match.group(1)}:{match.group(2)}"
        if service.address:
            try:
                wait_until_serving(service.address, timeout=min(2.0, max(deadline - time.monotonic(), 0.1)),
                                   channel="encoder" if service.role == "models" else service.role)
                return
            except ConnectionError:
                pass
        time.sleep(0.2)
    raise StartupError(f"the {service.role} service did not pass its health check within {timeout:g}s; "
                       f"its last output ({service.log}):\n{service.tail()}")


def web_url(orchestrator: ServiceProcess, timeout: float = 10.0) -> str:
    """The web page's URL, from the line the orchestrator prints right after its gRPC port's."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = WEB_PAGE.search(orchestrator.log.read_text(encoding="utf-8", errors="replace"))
        if match:
            return match.group(1)
        time.sleep(0.1)
    return f"(not reported; see {orchestrator.log})"


def stop_all(services: list[ServiceProcess], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM every service (the orchestrator first), wait, then SIGKILL what is left of each group."""
    for service in reversed(services):
        if service.process.poll() is None:
            service.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for service in reversed(services):
        try:
            service.process.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            print(f"irforge serve: {service.role} did not stop in {grace:g}s; killing it", file=sys.stderr, flush=True)
        # Whatever the service started and left behind (or the service itself, if it hung): its
        # process group, and every process of its session (Ray puts workers in groups of their own).
        for pid in {service.process.pid, *_session_members(service.process.pid)}:
            try:
                os.killpg(pid, signal.SIGKILL) if pid == service.process.pid else os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        service.process.wait()


def _session_members(session_id: int) -> list[int]:
    """Processes of a session (Linux /proc; elsewhere none are found and the group kill remains)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session_id:  # after "pid (comm)": state, ppid, pgrp, session
            members.append(int(stat.parent.name))
    return members


def start_platform(args, logs: Path) -> list[ServiceProcess]:
    from irforge.cli import service_cmd

    env = _environment(args.state_dir, args.cache_dir)
    corpus = ["--backend", args.backend, "--vector-backend", args.vector_backend]
    corpus += ["--elasticsearch-url", args.elasticsearch_url] if args.elasticsearch_url else []
    corpus += ["--qdrant-url", args.qdrant_url] if args.qdrant_url else []
    roles: list[tuple[str, list[str]]] = [("corpus", corpus), ("evaluator", [])]
    if not args.no_models:
        roles.append(("models", ["--ray", "--model", args.model]))
    if not args.no_judge and "judge" in service_cmd.SERVICES:
        roles.append(("judge", ["--judge", args.judge]))
    services: list[ServiceProcess] = []
    try:
        # Every backing service starts at once (their imports and model loads overlap) ...
        services.extend(_start(role, extra, args, env, logs) for role, extra in roles)
        for service in services:
            _wait_healthy(service, args.startup_timeout, args.host)
        # ... and the orchestrator last, given their addresses.
        addresses = {s.role: s.address for s in services}
        extra = [f"--{'encoder' if role == 'models' else role}-server={address}" for role, address in addresses.items()]
        extra += ["--job-workers", str(args.job_workers), "--auth", args.auth,
                  "--daily-submission-limit", str(args.daily_submission_limit)]
        extra += ["--web-port", str(args.web_port)] if args.web_port is not None else []
        orchestrator = _start("orchestrator", extra, args, env, logs)
        services.append(orchestrator)
        _wait_healthy(orchestrator, args.startup_timeout, args.host)
    except BaseException:
        stop_all(services, grace=5.0)
        raise
    return services


def serve_lock_path(state_dir: Path | None) -> Path:
    """One `serve` per state folder: two would run two orchestrators on one jobs database."""
    if state_dir is not None:
        return state_dir / "serve.lock"
    import platformdirs

    return Path(platformdirs.user_data_dir("irforge")) / "serve.lock"


def run_serve(args: argparse.Namespace) -> int:
    from irforge.common.extras import require_extra
    from irforge.common.locks import ExclusiveLock, LockHeld

    require_extra("platform", "grpc", "irforge serve (the platform's services)")

    lock = ExclusiveLock(serve_lock_path(args.state_dir))
    try:
        lock.acquire()
    except LockHeld as held:
        print(f"irforge serve: error: another irforge serve (pid {held.holder or 'unknown'}) runs on this state "
              f"({held.path}); stop it first, or give this one another --state-dir", file=sys.stderr, flush=True)
        return 2
    try:
        return _serve(args)
    finally:
        lock.release()


def _serve(args: argparse.Namespace) -> int:
    import tempfile

    logs = (args.state_dir / "logs") if args.state_dir else Path(tempfile.mkdtemp(prefix="irforge-serve-"))
    logs.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        services = start_platform(args, logs)
    except StartupError as error:
        print(f"irforge serve: error: {error}", file=sys.stderr, flush=True)
        return 1
    for service in services:
        print(f"irforge serve: {service.role} at {service.address} (pid {service.process.pid}, log {service.log})", flush=True)
    orchestrator = services[-1].address
    if args.web_port is not None:
        print(f"irforge serve: web page at {web_url(services[-1])}", flush=True)
    notice = OPERATOR_NOTICE.search(services[-1].log.read_text(encoding="utf-8", errors="replace"))
    if notice:   # --auth tokens: where the operator's token is (never the token itself)
        print(f"irforge serve: {notice.group(1)}", flush=True)
    print(f"irforge serve: ready; submit jobs with `irforge submit --server {orchestrator} ...` (Ctrl-C stops all)", flush=True)
    exit_code = 0
    while not stop.wait(0.5):
        dead = [s for s in services if s.process.poll() is not None]
        if dead:
            for service in dead:
                print(f"irforge serve: the {service.role} service exited with code {service.process.returncode}; "
                      f"its last output:\n{service.tail()}", file=sys.stderr, flush=True)
            exit_code = 1
            break
    print("irforge serve: stopping every service", file=sys.stderr, flush=True)
    stop_all(services)
    print("irforge serve: stopped", file=sys.stderr, flush=True)
    return exit_code
