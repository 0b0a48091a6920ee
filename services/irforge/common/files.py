"""Files written so that a crash never leaves half of one behind, and the leftovers of a writer
that was killed are recognisable, and removable, by name.

Every temporary name irforge makes is `.{final name}.irforge-{host}-{pid}-{token}.{kind}`: the
host and pid say whose it is, so the next run removes only those of processes that are gone.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from irforge.common.error_status import register_status

TEMPORARY = re.compile(r"^\.(?P<name>.+)\.irforge-(?P<host>.+)-(?P<pid>\d+)-(?P<token>[0-9a-f]+)\.(?P<kind>tmp|staging|old)$")


# A full disk and an exhausted quota: the user's environment, not their input, and not a bug.
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class NoSpaceLeft(Exception):
    """A write found the disk (or the quota) full. The message names what was being written; the
    writer has removed what it had half written. Not an OSError: it travels over gRPC as its type
    and message (common/grpc_errors.py rebuilds it with Exception's constructor)."""

    def __init__(self, path: str | Path, detail: str = ""):
        self.path = Path(path)
        super().__init__(f"no space left on device while writing {path}" + (f" ({detail})" if detail else ""))


register_status(NoSpaceLeft, "RESOURCE_EXHAUSTED")


def is_disk_full(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in DISK_FULL


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Turn a full disk met in this block into NoSpaceLeft naming `path` (the file or folder the
    user knows: the final name, not the temporary one being written)."""
    try:
        yield
    except OSError as error:
        if error.errno in DISK_FULL:
            raise NoSpaceLeft(path) from error
        raise


def temporary_name(final_name: str, kind: str) -> str:
    return f".{final_name}.irforge-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}.{kind}"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel (a zombie then counts as alive: kept, never wrongly removed)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True


def stale_owner(path: Path) -> re.Match | None:
    """The name's parts when `path` is an irforge temporary of a process that is gone. A name of
    another host is never stale here: its pid says nothing on this machine (shared filesystems)."""
    match = TEMPORARY.match(path.name)
    if match is None or match["host"] != socket.gethostname() or _alive(int(match["pid"])):
        return None
    return match


def remove_stale_temporaries(folder: Path, final_name: str | None = None) -> list[Path]:
    """Delete the temporaries killed writers left in `folder` (only those for `final_name` when
    given); the paths removed. An `.old` folder is a set moved aside by a swap that was killed
    before the new set took its place: it goes back, as the swap never happened."""
    removed = []
    folder = Path(folder)
    if not folder.is_dir():
        return removed
    for path in folder.iterdir():
        match = stale_owner(path)
        if match is None or (final_name is not None and match["name"] != final_name):
            continue
        final = folder / match["name"]
        if match["kind"] == "old" and not final.exists():
            os.rename(path, final)
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_a_regular_file(path: str | Path) -> str | None:
    """What `path` is when something other than a regular file is there (links followed): "a FIFO
    (named pipe)", "a directory", "a character device"...; None for a regular file or nothing.
    Every input file is checked with it before it is opened: a FIFO blocks open() until a writer
    comes, /dev/zero never ends, and "file not found" sent users looking for a file that is there."""
    try:
        mode = os.stat(path).st_mode
    except OSError:   # nothing there (or not reachable): the caller's "not found" or open() says so
        return None
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a file")


def read_yaml(path: str | Path, what: str, error: type[Exception], formats: str = "YAML") -> Any:
    """The YAML document in the file `path` (a configuration, job spec or suite file the user
    names), or `error` naming `what` and the path: not a regular file (checked before open(), as
    every input is), unreadable, or not valid `formats`."""
    import yaml   # not every command reads YAML: loaded when one does

    kind = not_a_regular_file(path)
    if kind:   # a FIFO would block the read, /dev/zero never end it
        raise error(f"{what} {path} is {kind}, not a regular file")
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as problem:
        raise error(f"cannot read {what} {path}: {problem.strerror}") from None
    except UnicodeDecodeError as problem:
        raise error(f"cannot read {what} {path}: not UTF-8 text ({problem.reason} at byte {problem.start})") from None
    except yaml.YAMLError as problem:
        raise error(f"{what} {path} is not valid {formats}: {problem}") from None


class atomic_write:
    """Context manager: write to a temporary file beside `path`, rename over it on success.

    The file is created with mode 0666 less the umask, as open() would create it (mkstemp's
    0600 made every result private to its writer)."""

    def __init__(self, path: str | Path, mode: str = "w"):
        self.path = Path(path)
        self.mode = mode

    def __enter__(self):
        with writing(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            while True:
                self.tmp = self.path.parent / temporary_name(self.path.name, "tmp")
                try:
                    fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
                    break
                except FileExistsError:  # 32 random bits taken: draw again
                    continue
        self.handle = os.fdopen(fd, self.mode, encoding=None if "b" in self.mode else "utf-8")
        return self.handle

    def __exit__(self, exc_type, exc, tb):
        try:
            self.handle.close()   # flushes what is buffered: on a full disk that fails too
            if exc_type is None:
                os.replace(self.tmp, self.path)
                return False
        except BaseException as error:
            self.tmp.unlink(missing_ok=True)
            if exc is None:       # else the body's own error is the one to tell, below
                if is_disk_full(error):
                    raise NoSpaceLeft(self.path) from error
                raise
        self.tmp.unlink(missing_ok=True)
        if is_disk_full(exc):
            raise NoSpaceLeft(self.path) from exc
        return False


def write_json_atomic(path: str | Path, value: Any) -> Path:
    with atomic_write(path) as handle:
        json.dump(value, handle, indent=2, sort_keys=False, ensure_ascii=False)
        handle.write("\n")
    return Path(path)


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks (corpora, shard outputs, qrels): never whole in memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
