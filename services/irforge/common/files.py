"""Files written so that a crash never leaves half of one behind."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


class atomic_write:
    """Context manager: write to a temporary file beside `path`, rename over it on success."""

    def __init__(self, path: str | Path, mode: str = "w"):
        self.path = Path(path)
        self.mode = mode

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        self.handle = os.fdopen(fd, self.mode, encoding=None if "b" in self.mode else "utf-8")
        return self.handle

    def __exit__(self, exc_type, exc, tb):
        self.handle.close()
        if exc_type is None:
            os.replace(self.tmp, self.path)
        else:
            os.unlink(self.tmp)
        return False


def write_json_atomic(path: str | Path, value: Any) -> Path:
    with atomic_write(path) as handle:
        json.dump(value, handle, indent=2, sort_keys=False, ensure_ascii=False)
        handle.write("\n")
    return Path(path)
