"""Unpacking a verified archive without trusting its entry names.

A zip entry names its own path: `../../.bashrc`, `/etc/x` or a symlink pointing anywhere would
write outside the dataset's folder (zip slip). Every entry is checked before the first byte is
written, and one bad entry refuses the whole archive: a dataset is not half-extracted.
"""

from __future__ import annotations

import shutil
import stat
import zipfile
from pathlib import Path, PurePosixPath

from irforge.datasets.errors import DatasetError

# Written by macOS's archiver beside the real files: resource forks, never data.
IGNORED_TOP = {"__MACOSX"}


def extract_zip(archive: Path, target: Path, name: str) -> int:
    """Extract `archive` into the empty folder `target`, dropping the archive's one top folder
    (BEIR's scifact.zip holds scifact/...); the number of files written. DatasetError for an
    unreadable archive or an entry that is absolute, climbs out (`..`), is a link or a device,
    or repeats another."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = [(info, _checked_parts(info, name)) for info in zipped.infolist()]
            members = [(info, parts) for info, parts in members if parts and parts[0] not in IGNORED_TOP]
            strip = _single_top_folder([parts for _, parts in members])
            root = target.resolve()
            written: set[tuple[str, ...]] = set()
            for info, parts in members:
                parts = parts[strip:]
                if not parts:
                    continue
                destination = target.joinpath(*parts)
                if root not in destination.resolve().parents:  # belt and braces over _checked_parts
                    raise DatasetError(f"{name}: archive entry {info.filename!r} would be written outside {target}: refused")
                if parts in written:
                    raise DatasetError(f"{name}: archive entry {info.filename!r} appears twice: refused")
                written.add(parts)
                if info.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(info) as source, open(destination, "xb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)   # the CRC is checked at the end of the entry
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as error:
        raise DatasetError(f"{name}: {archive} is not a readable zip archive ({error})") from None
    files = sum(1 for path in target.rglob("*") if path.is_file())
    if not files:
        raise DatasetError(f"{name}: the archive holds no files")
    return files


def _checked_parts(info: zipfile.ZipInfo, name: str) -> tuple[str, ...]:
    """The entry's path as parts, refusing anything that could land outside the target."""
    entry = info.filename
    refuse = None
    if "\\" in entry or "\x00" in entry:
        refuse = "has a backslash or NUL in its name"
    elif entry.startswith("/") or (len(entry) > 1 and entry[1] == ":"):
        refuse = "is an absolute path"
    elif any(part == ".." for part in PurePosixPath(entry).parts):
        refuse = "climbs out of the folder (..)"
    mode = info.external_attr >> 16
    if refuse is None and stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        refuse = "is a symbolic link" if stat.S_ISLNK(mode) else "is not a regular file or folder"
    if refuse:
        raise DatasetError(f"{name}: archive entry {entry!r} {refuse}: refused, nothing extracted")
    return tuple(part for part in PurePosixPath(entry).parts if part not in ("", "."))


def _single_top_folder(all_parts: list[tuple[str, ...]]) -> int:
    """1 when every entry lies in one top folder (then dropped), else 0."""
    tops = {parts[0] for parts in all_parts}
    if len(tops) == 1 and all(len(parts) > 1 or _is_dir_entry(parts, all_parts) for parts in all_parts):
        return 1
    return 0


def _is_dir_entry(parts: tuple[str, ...], all_parts: list[tuple[str, ...]]) -> bool:
    return any(len(other) > len(parts) and other[:len(parts)] == parts for other in all_parts)
