"""How much a download may bring in: the caps that keep a hostile server or archive from filling
the disk (docs/datasets.md, "Limits").

    download   bytes received for the archive (an endless body, a Content-Length too large)
    unpacked   bytes the archive unpacks to, in all
    ratio      unpacked bytes per archive byte (a zip bomb: 1 MB of zip, 1 GiB of zeros)
    files      entries in the archive

Each cap is, first found: the `datasets download` flag, its environment variable, what the
catalogue entry declares for this archive (archive_size, unpacked_size), the default. When the
catalogue declares the unpacked size (and no ratio is set), that size replaces the ratio check:
the archive is verified by its checksum, so its declared size is known, not guessed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from irforge.datasets.errors import DatasetError

# BEIR's largest archive (msmarco.zip) is about 1.1 GB and unpacks to under 4 GB; text deflates
# some 3 to 5 times. The defaults leave room for every BEIR archive and refuse a bomb early.
DEFAULT_DOWNLOAD = 4 << 30
DEFAULT_UNPACKED = 16 << 30
DEFAULT_RATIO = 100.0
DEFAULT_FILES = 100_000
# Below this many unpacked bytes the ratio is not checked: a small archive of repetitive text
# compresses well and can hurt no disk.
RATIO_FLOOR = 10 << 20

VARIABLES = {"download": "IRFORGE_DATASETS_MAX_DOWNLOAD", "unpacked": "IRFORGE_DATASETS_MAX_UNPACKED",
             "ratio": "IRFORGE_DATASETS_MAX_RATIO", "files": "IRFORGE_DATASETS_MAX_FILES"}
FLAGS = {"download": "--max-download", "unpacked": "--max-unpacked", "ratio": "--max-ratio", "files": "--max-files"}
UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(value: str | int, where: str) -> int:
    """Bytes from `1000`, `500M`, `2G`, `1.5GiB` (K, M, G, T are powers of 1024); DatasetError naming `where`."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        match = SIZE.match(str(value))
        if match is None:
            raise DatasetError(f"{where}: {value!r} is not a size (bytes, or a number with K, M, G or T, e.g. 500M)")
        number = int(float(match[1]) * UNITS[match[2].lower()])
    if number < 1:
        raise DatasetError(f"{where}: {value!r} must be at least 1 byte")
    return number


def parse_positive(value: str | float, where: str, kind=float):
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: {value!r} is not a {'whole ' if kind is int else ''}number") from None
    if not number > 0:
        raise DatasetError(f"{where}: {value!r} must be positive")
    return number


def human(size: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


@dataclass(frozen=True)
class Limits:
    """The caps set explicitly (the flags); None: the variable, the catalogue, the default."""
    download: int | None = None
    unpacked: int | None = None
    ratio: float | None = None
    files: int | None = None

    def resolve(self, entry) -> "Caps":
        """The caps for `entry`'s archive, each with where it came from (for the message)."""
        download = self._pick("download", entry.archive_size, DEFAULT_DOWNLOAD, parse_size)
        unpacked = self._pick("unpacked", entry.unpacked_size, DEFAULT_UNPACKED, parse_size)
        ratio = self._pick("ratio", None, DEFAULT_RATIO, parse_positive)
        if unpacked[1].startswith("the catalogue") and not ratio[1].startswith(("--", "$")):
            ratio = (None, "the catalogue's unpacked_size, which replaces it")
        files = self._pick("files", None, DEFAULT_FILES, lambda value, where: parse_positive(value, where, int))
        return Caps(download, unpacked, ratio, files)

    def _pick(self, what: str, declared, default, parse) -> tuple:
        if getattr(self, what) is not None:
            return getattr(self, what), FLAGS[what]
        variable = VARIABLES[what]
        if os.environ.get(variable):
            return parse(os.environ[variable], f"${variable}"), f"${variable}"
        if declared is not None:
            return declared, f"the catalogue's {'archive_size' if what == 'download' else 'unpacked_size'}"
        return default, "the default"


@dataclass(frozen=True)
class Caps:
    """Resolved caps: each a (value, where it was set) pair; ratio's value None when not checked."""
    download: tuple[int, str]
    unpacked: tuple[int, str]
    ratio: tuple[float | None, str]
    files: tuple[int, str]

    def allowed(self, what: str) -> str:
        """'the 1.0 GiB allowed (--max-download)': the cap and where it was set."""
        value, where = getattr(self, what)
        shown = human(value) if what in ("download", "unpacked") else f"{value:g}" + (" times" if what == "ratio" else "")
        return f"the {shown} allowed ({where})"

    def hint(self, what: str) -> str:
        key = {"download": "archive_size", "unpacked": "unpacked_size"}.get(what)
        declare = f", or declare {key} in the catalogue entry" if key else ""
        return f"if the archive is trusted, raise it with {FLAGS[what]} or ${VARIABLES[what]}{declare}"
