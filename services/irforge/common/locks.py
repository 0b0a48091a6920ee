"""Exclusive advisory locks on a file (flock): one owner of a thing at a time, across threads and
processes. The kernel releases a lock when its holder's process ends, even by kill -9, so a
crashed owner never leaves a stale lock behind. Linux and macOS; the file records the holder's pid
for the error message.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class LockHeld(RuntimeError):
    """Someone else holds the lock; `holder` is the pid written by them, when readable."""

    def __init__(self, path: Path, holder: str):
        super().__init__(f"{path} is locked by process {holder or 'unknown'}")
        self.path = path
        self.holder = holder


class ExclusiveLock:
    """`with ExclusiveLock(path):` or acquire()/release(). Never waits: raises LockHeld at once."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._handle = None

    def acquire(self) -> "ExclusiveLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip()
            handle.close()
            raise LockHeld(self.path, holder) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle
        return self

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None

    def __enter__(self) -> "ExclusiveLock":
        return self.acquire()

    def __exit__(self, *exc) -> bool:
        self.release()
        return False
