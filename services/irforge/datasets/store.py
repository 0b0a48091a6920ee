"""Where downloaded datasets live and how a complete copy is recognised.

    $IRFORGE_DATASETS_DIR (default: the user data dir irforge keeps its stores in, + /datasets)
      beir/scifact/                    a complete copy: the archive's files, and
      beir/scifact/.irforge-download.json   the marker (url, checksum, size, time)
      beir/.scifact.zip.part           an interrupted download, resumed by the next one
      beir/.scifact.lock               held while a download of it runs

Every name irforge keeps beside a copy (the .part, the lock, the staging folder of
common/files.temporary_name) starts with a dot, and no dataset name's folder can (catalog.NAME):
one dataset's temporary never collides with another dataset's folder. Nor does one copy's folder
nest in another's (catalog._refuse_nesting, and copy_around / copies_inside below for copies already there).

A copy is complete when its marker names the checksum the catalogue expects. The marker is
written into the staging folder with the extracted files, and the folder appears under its name
in one rename: there is never a folder without its marker, so no partial download looks complete.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from irforge.datasets.catalog import Entry

DIR_VARIABLE = "IRFORGE_DATASETS_DIR"
MARKER = ".irforge-download.json"


def default_datasets_dir() -> Path:
    return Path(os.environ.get(DIR_VARIABLE) or Path(platformdirs.user_data_dir("irforge")) / "datasets")


def copy_path(entry: Entry, datasets_dir: Path | None = None) -> Path:
    return Path(datasets_dir or default_datasets_dir()) / entry.name


def part_path(entry: Entry, datasets_dir: Path | None = None) -> Path:
    copy = copy_path(entry, datasets_dir)
    return copy.with_name(f".{copy.name}.zip.part")


def lock_path(entry: Entry, datasets_dir: Path | None = None) -> Path:
    copy = copy_path(entry, datasets_dir)
    return copy.with_name(f".{copy.name}.lock")


def copy_around(entry: Entry, datasets_dir: Path | None = None) -> Path | None:
    """The folder of another downloaded copy that `entry`'s folder would lie inside, or None."""
    root = Path(datasets_dir or default_datasets_dir())
    parts = entry.name.split("/")
    for cut in range(1, len(parts)):
        folder = root.joinpath(*parts[:cut])
        if read_marker(folder) is not None:
            return folder
    return None


def copies_inside(folder: Path) -> list[Path]:
    """The downloaded copies below `folder` (not `folder` itself): what replacing it would delete."""
    found = []
    for path, folders, files in os.walk(folder):
        if path != str(folder) and MARKER in files:
            found.append(Path(path))
            folders.clear()   # a copy's own sub-folders are its data
    return sorted(found)


def read_marker(folder: Path) -> dict | None:
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


@dataclass(frozen=True)
class CopyState:
    """What the datasets folder holds for one entry."""
    path: Path
    complete: bool               # a copy of exactly this archive
    marker: dict | None          # the marker of whatever copy is there
    partial_bytes: int | None    # an interrupted download's size, resumable

    @property
    def describe(self) -> str:
        if self.complete:
            return str(self.path)
        if self.marker is not None:
            return f"other archive at {self.path} ({self.marker.get('algorithm')} {self.marker.get('checksum')})"
        if self.path.exists():
            return f"not an irforge download: {self.path}"
        if self.partial_bytes is not None:
            return f"partial ({self.partial_bytes} bytes; download resumes it)"
        return "-"


def copy_state(entry: Entry, datasets_dir: Path | None = None) -> CopyState:
    path = copy_path(entry, datasets_dir)
    marker = read_marker(path) if path.is_dir() else None
    complete = marker is not None and marker.get("algorithm") == entry.algorithm and marker.get("checksum") == entry.checksum
    part = part_path(entry, datasets_dir)
    partial = part.stat().st_size if part.is_file() else None
    return CopyState(path, complete, marker, partial)
