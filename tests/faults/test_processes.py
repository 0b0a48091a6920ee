"""Ports and processes: a port in use is refused, `irforge serve` never leaves children behind
when killed with -9, one serve per state folder, one orchestrator per jobs database."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from irforge.orchestrator.store import JobStore, StoreInUse

SERVICE_LINE = re.compile(r"irforge serve: (\w+) at (\S+) \(pid (\d+),")


def irforge(*args: str) -> list[str]:
    return [sys.executable, "-m", "irforge.cli.main", *args]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def test_a_second_service_on_a_port_in_use_is_refused(tmp_path):
    first = subprocess.Popen(irforge("service", "evaluator", "--port", "0"), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        line = first.stdout.readline()
        port = re.search(r"listening on \S+:(\d+)", line).group(1)
        second = subprocess.run(irforge("service", "evaluator", "--port", port), capture_output=True, text=True, timeout=60)
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in second.stderr
        assert "listening" not in second.stdout
        assert "Traceback" not in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(30)


def start_serve(state_dir) -> tuple[subprocess.Popen, list[str]]:
    process = subprocess.Popen(irforge("serve", "--no-models", "--no-judge", "--base-port", "0", "--state-dir", str(state_dir)),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")), daemon=True).start()
    return process, lines


def wait_ready(process, lines, timeout=120.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while not any("ready;" in line for line in lines):
        assert process.poll() is None, "".join(lines)
        assert time.monotonic() < deadline, "".join(lines)
        time.sleep(0.1)
    return {m.group(1): int(m.group(3)) for line in lines if (m := SERVICE_LINE.search(line))}


def test_kill_9_of_serve_takes_its_services_down_and_one_serve_per_state_folder(tmp_path):
    state = tmp_path / "state"
    first, lines = start_serve(state)
    children = wait_ready(first, lines)
    assert set(children) == {"corpus", "evaluator", "orchestrator"}
    try:
        second = subprocess.run(irforge("serve", "--no-models", "--no-judge", "--base-port", "0", "--state-dir", str(state)),
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        assert f"another irforge serve (pid {first.pid}) runs on this state" in second.stderr

        first.send_signal(signal.SIGKILL)
        first.wait(10)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in children.values()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [role for role, pid in children.items() if alive(pid)], "services outlived serve"

        third, third_lines = start_serve(state)  # the killed serve's lock went with it
        try:
            assert set(wait_ready(third, third_lines)) == {"corpus", "evaluator", "orchestrator"}
        finally:
            third.send_signal(signal.SIGTERM)
            assert third.wait(60) == 0
    finally:
        for pid in children.values():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_two_orchestrators_never_share_one_jobs_database(tmp_path):
    owner = JobStore(tmp_path / "jobs.sqlite3")
    try:
        with pytest.raises(StoreInUse, match=rf"another orchestrator \(pid {os.getpid()}\) uses the jobs database"):
            JobStore(tmp_path / "jobs.sqlite3")
        JobStore(tmp_path / "jobs.sqlite3", owner=False).close()  # readers are welcome
    finally:
        owner.close()
    JobStore(tmp_path / "jobs.sqlite3").close()  # and the next owner, once the first is gone


def test_a_hand_started_second_orchestrator_on_the_same_state_is_refused(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    state = tmp_path / "orchestrator"
    first = subprocess.Popen(irforge("service", "orchestrator", "--port", "0", "--state-dir", str(state)),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "listening" in first.stdout.readline()
        second = subprocess.run(irforge("service", "orchestrator", "--port", str(free), "--state-dir", str(state)),
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        assert "another orchestrator" in second.stderr and "Traceback" not in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(30)


def test_services_are_started_safely_while_grpc_is_busy_in_serve():
    """serve health-checks each service over gRPC before starting the next: a fork() of a process
    with live gRPC threads killed about one child in eight before exec (CI: the orchestrator died
    with SIGABRT). Every child must start, however busy gRPC is."""
    import grpc
    from concurrent import futures

    from irforge.cli.serve_cmd import spawn_service

    server = grpc.server(futures.ThreadPoolExecutor(2))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    failures = []
    try:
        for _ in range(60):
            channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            grpc.channel_ready_future(channel).result(timeout=10)
            child = spawn_service([sys.executable, "-c", "pass"], subprocess.DEVNULL, dict(os.environ))
            if child.wait(30) != 0:
                failures.append(child.returncode)
            channel.close()
    finally:
        server.stop(None)
    assert not failures, f"{len(failures)} of 60 children died before exec: {failures}"
