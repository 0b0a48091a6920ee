"""Where downloaded datasets live and how a complete copy is recognised.

    $IRFORGE_DATASETS_DIR (default: the user data dir irforge keeps its stores in, + /datasets)
      beir/scifact/                    a complete copy: the archive's files, and
      beir/scifact/.irforge-download.json   the marker (url, checksum, size, time)
      beir/scifact.zip.part            an interrupted download, resumed by the next one

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
    return copy.with_name(copy.name + ".zip.part")


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
