"""A pre-imported `irforge` for tests that run it as a command: one process imports irforge's CLI
and the libraries its commands load (torch, transformers, sentence-transformers, scipy, grpc...)
once, then forks a fresh child for every `irforge` line a doc block runs. The child is the command:
it takes the caller's stdin/stdout/stderr (passed over a Unix socket), working directory,
environment and arguments, and runs `irforge.cli.main.main()` exactly as `python -m
irforge.cli.main` would, with its own pid, exit status and stdio. What the command does is
unchanged; what is skipped is importing the same modules again for every command (1-2 s each for
the CLI, 4-7 s more for torch and sentence-transformers, on the suite's two shared cores).

The command gets the caller's arguments, environment, working directory, umask and stdin/stdout/
stderr; not its process group, session, nice value or resource limits (the pre-imported
process's). Not for tests about the process itself: a SIGKILL reaches the client, and the command
only ~50 ms later (its monitor sees the client go); those tests start `python -m irforge.cli.main`.

Three pieces:
- `python irforge_zygote.py serve SOCKET`: the pre-imported process (Zygote below), started with
  the environment its commands get, so what libraries read from it at import (HOME and HF_*
  among them) is what the commands would read. It refuses to start if an import left a thread
  running: fork copies only the calling thread.
- per command, a monitor (forked from it) that forks the command, tells the client its pid,
  waits for it and sends back its wait status; it kills the command if the client goes away.
- `python -I -S irforge_zygote.py client SOCKET ARGS...` (Zygote.command): what stands for
  `irforge` (no site-packages, no imports beyond the standard library: ~20 ms). It forwards
  SIGINT/SIGTERM/SIGHUP/SIGQUIT to the command and ends as the command ended (its exit status,
  or the same signal).

`irforge serve`, whose process lifecycle the docs test checks (SIGTERM, exit 0), does not go
through here: tests/docs/conftest.launch_platform runs it as its own interpreter.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys

# Imported before forking; all but the CLI are optional (a command imports what is missing itself).
PRELOAD = ("irforge.cli.main", "numpy", "scipy.stats", "torch", "transformers", "sentence_transformers", "grpc",
           "pytrec_eval", "bm25s", "Stemmer", "yaml", "irforge.pipeline", "irforge.models.encoder",
           "irforge.corpus.core", "irforge.corpus.vectors",
           # the CLI imports each command's rooms when it runs: load the common ones here, once
           "irforge.app.evaluate", "irforge.app.bench", "irforge.app.compare", "irforge.app.metrics")
HEADER = struct.Struct("!I")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def _send(conn: socket.socket, obj) -> None:
    data = json.dumps(obj).encode()
    conn.sendall(HEADER.pack(len(data)) + data)


def _recv_exactly(conn: socket.socket, size: int, data: bytes = b"") -> bytes:
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError("the other side closed the socket")
        data += chunk
    return data


def _recv(conn: socket.socket):
    size, = HEADER.unpack(_recv_exactly(conn, HEADER.size))
    return json.loads(_recv_exactly(conn, size))


# ---- the pre-imported server ----------------------------------------------------------------------

def serve(path: str):
    """Accept forever; returns only in a forked command process, with what it must run."""
    import importlib
    import threading

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            if name == "irforge.cli.main":
                raise
    threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if threads:
        raise SystemExit(f"irforge_zygote: importing {PRELOAD} started threads {threads}: forking would be unsafe")
    import gc

    gc.freeze()      # the children's collections then leave the parent's objects (and pages) alone
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # monitors are reaped by the kernel
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            return monitor(conn)
        conn.close()


def monitor(conn: socket.socket):
    """Receive the command (its fds first), fork it, report its pid and then its wait status."""
    message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    size, = HEADER.unpack(message[:HEADER.size])
    request = json.loads(_recv_exactly(conn, HEADER.size + size, message)[HEADER.size:])
    pid = os.fork()
    if pid == 0:
        conn.close()
        for number, fd in enumerate(fds):
            os.dup2(fd, number)
            os.close(fd)
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        # What a fresh interpreter has: Python's own handlers, the rest default.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        return request["argv"]
    for fd in fds:
        os.close(fd)
    _send(conn, {"pid": pid})
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        readable, _, _ = select.select([conn], [], [], 0.05)
        if readable and not conn.recv(1):       # the client went away: so does its command
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os._exit(0)
    try:
        _send(conn, {"status": status})
    finally:
        os._exit(0)


def run_command(argv: list[str]) -> None:
    """In the forked command process: what `python -m irforge.cli.main ARGS` does, then the part of
    the interpreter's shutdown a caller can see (non-daemon threads joined, atexit handlers, stdio
    flushed, the exit status). Tearing down the modules is skipped: here it would touch every page
    shared with the pre-imported parent (seconds per command), and it shows nothing."""
    import atexit
    import threading

    import irforge.cli.main as cli

    sys.argv = [cli.__file__, *argv]
    sys.path[0] = os.getcwd()          # -m puts the working directory first on sys.path
    interrupted = False
    try:
        code = cli.main()
    except SystemExit as stop:
        code = stop.code
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        code, interrupted = 1, True
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = 120
    if interrupted:                    # Python ends an uncaught Ctrl-C by SIGINT itself
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


# ---- the test's side -------------------------------------------------------------------------------

class Zygote:
    """The pre-imported process, started now with `env`, listening on `path` (keep it short:
    AF_UNIX paths stop at 107 bytes); `command` runs one irforge command through it."""

    def __init__(self, path, env: dict, timeout: float = 240.0):
        import subprocess
        from pathlib import Path

        self.path = Path(path)
        self.log = self.path.with_suffix(".log")
        with open(self.log, "w") as errors:
            self.process = subprocess.Popen([sys.executable, __file__, "serve", str(self.path)], env=env,
                                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, text=True)
        ready = self.process.stdout.readline()
        if ready.strip() != "ready":
            self.process.kill()
            self.process.wait()
            raise RuntimeError(f"the pre-imported irforge did not start: {ready}{self.log.read_text()[-3000:]}")

    @property
    def command(self) -> list[str]:
        """argv standing for `irforge` (append the arguments)."""
        return [sys.executable, "-I", "-S", __file__, "client", str(self.path)]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


# ---- the client: `irforge` ------------------------------------------------------------------

def client(path: str, argv: list[str]) -> None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    mask = os.umask(0o022)
    os.umask(mask)
    data = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": mask}).encode()
    socket.send_fds(conn, [HEADER.pack(len(data)) + data], [0, 1, 2])
    pid = _recv(conn)["pid"]
    for number in FORWARDED:
        signal.signal(number, lambda received, _frame: os.kill(pid, received))
    status = _recv(conn)["status"]
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    raise SystemExit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    role, socket_path, *rest = sys.argv[1:]
    if role == "client":
        client(socket_path, rest)
    run_command(serve(socket_path))
