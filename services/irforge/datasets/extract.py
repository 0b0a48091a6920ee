"""Unpacking a verified archive without trusting its entry names or its sizes.

A zip entry names its own path: `../../.bashrc`, `/etc/x` or a symlink pointing anywhere would
write outside the dataset's folder (zip slip); `a` as a file and `a/b` below it cannot both be
made; an entry called like irforge's marker would pass for (or break) the completeness mark. And
a zip declares its own sizes: 1 MB of zip can hold 1 GiB of zeros. Every entry is checked, and
the sizes the headers declare held against the caps (limits.py), before the first byte is
written; the bytes actually written are counted against the same caps, as headers can lie. One
bad entry refuses the whole archive: the caller's staging folder goes, nothing is half-extracted.
"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path, PurePosixPath

from irforge.common.files import TEMPORARY
from irforge.datasets.errors import DatasetError
from irforge.datasets.limits import RATIO_FLOOR, Caps, human
from irforge.datasets.store import MARKER

# Written by macOS's archiver beside the real files: resource forks, never data.
IGNORED_TOP = {"__MACOSX"}
BLOCK = 1 << 20


def extract_zip(archive: Path, target: Path, name: str, caps: Caps, source: str = "") -> int:
    """Extract `archive` (downloaded from `source`) into the empty folder `target`, dropping the
    archive's one top folder (BEIR's scifact.zip holds scifact/...); the number of files written.
    DatasetError for an unreadable archive, an entry that is absolute, climbs out (`..`), is a link
    or a device, repeats another, lies below a file, or is named like irforge's own files; and for
    an archive over the caps."""
    where = f"{name}: archive {source or archive.name}"
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = [(info, _checked_parts(info, where)) for info in zipped.infolist()]
            members = [(info, parts) for info, parts in members if parts and parts[0] not in IGNORED_TOP]
            strip = _single_top_folder([parts for _, parts in members])
            members = [(info, parts[strip:]) for info, parts in members if parts[strip:]]
            _check_layout(members, where)
            budget = _Budget(caps, archive.stat().st_size, where)
            budget.check_headers(len(members), sum(info.file_size for info, _ in members if not info.is_dir()))
            root = target.resolve()
            for info, parts in members:
                destination = target.joinpath(*parts)
                if root not in destination.resolve().parents:  # belt and braces over _checked_parts
                    raise DatasetError(f"{where}, entry {info.filename!r} would be written outside {target}: refused")
                if info.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(info) as entry, open(destination, "xb") as out:
                    _copy(entry, out, info, budget)   # zipfile checks the CRC at the end of the entry
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as error:
        raise DatasetError(f"{where}: {archive} is not a readable zip archive ({error})") from None
    files = sum(1 for path in target.rglob("*") if path.is_file())
    if not files:
        raise DatasetError(f"{where}: the archive holds no files")
    return files


class _Budget:
    """The caps, held against what the headers declare and then against every byte written."""

    def __init__(self, caps: Caps, archive_bytes: int, where: str):
        self.caps, self.archive_bytes, self.where = caps, max(archive_bytes, 1), where
        self.written = 0

    def check_headers(self, entries: int, declared: int) -> None:
        if entries > self.caps.files[0]:
            raise DatasetError(f"{self.where}: {entries} entries, more than {self.caps.allowed('files')}; "
                               f"{self.caps.hint('files')}; nothing extracted")
        self._check(declared, "its headers declare")

    def add(self, count: int) -> None:
        self.written += count
        self._check(self.written, "unpacking wrote")

    def _check(self, size: int, how: str) -> None:
        if size > self.caps.unpacked[0]:
            raise DatasetError(f"{self.where}: {how} {human(size)} unpacked, more than {self.caps.allowed('unpacked')}; "
                               f"{self.caps.hint('unpacked')}; nothing extracted")
        ratio = self.caps.ratio[0]
        if ratio is not None and size > RATIO_FLOOR and size / self.archive_bytes > ratio:
            raise DatasetError(f"{self.where}: {how} {human(size)} unpacked from {human(self.archive_bytes)}, "
                               f"{size / self.archive_bytes:.0f} times the archive (a zip bomb?), more than "
                               f"{self.caps.allowed('ratio')}; {self.caps.hint('ratio')}; nothing extracted")


def _copy(entry, out, info: zipfile.ZipInfo, budget: _Budget) -> None:
    written = 0
    for block in iter(lambda: entry.read(BLOCK), b""):
        written += len(block)
        if written > info.file_size:   # zipfile stops at the declared size; a reader that did not would be caught
            raise DatasetError(f"{budget.where}, entry {info.filename!r} holds more than the {info.file_size} bytes "
                               "its header declares: refused, nothing extracted")
        budget.add(len(block))
        out.write(block)


def _checked_parts(info: zipfile.ZipInfo, where: str) -> tuple[str, ...]:
    """The entry's path as parts, refusing anything that could land outside the target or pass
    for irforge's own files (the marker, a temporary the next run would remove)."""
    entry = info.filename
    refuse = None
    parts = tuple(part for part in PurePosixPath(entry).parts if part not in ("", "."))
    if "\\" in entry or "\x00" in entry:
        refuse = "has a backslash or NUL in its name"
    elif entry.startswith("/") or (len(entry) > 1 and entry[1] == ":"):
        refuse = "is an absolute path"
    elif any(part == ".." for part in parts):
        refuse = "climbs out of the folder (..)"
    elif any(part == MARKER or TEMPORARY.match(part) for part in parts):
        refuse = f"is named like irforge's own {MARKER} or temporary files"
    mode = info.external_attr >> 16
    if refuse is None and stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        refuse = "is a symbolic link" if stat.S_ISLNK(mode) else "is not a regular file or folder"
    if refuse:
        raise DatasetError(f"{where}, entry {entry!r} {refuse}: refused, nothing extracted")
    return parts


def _check_layout(members: list[tuple[zipfile.ZipInfo, tuple[str, ...]]], where: str) -> None:
    """Refuse an entry given twice, or one below an entry that is a file (`a` and `a/b`)."""
    files: dict[tuple[str, ...], str] = {}
    seen: set[tuple[str, ...]] = set()
    for info, parts in members:
        if parts in seen:
            raise DatasetError(f"{where}, entry {info.filename!r} appears twice: refused, nothing extracted")
        seen.add(parts)
        if not info.is_dir():
            files[parts] = info.filename
    for info, parts in members:
        above = next((files[parts[:cut]] for cut in range(1, len(parts)) if parts[:cut] in files), None)
        if above is not None:
            raise DatasetError(f"{where}, entry {info.filename!r} lies below {above!r}, which is a file: refused, "
                               "nothing extracted")


def _single_top_folder(all_parts: list[tuple[str, ...]]) -> int:
    """1 when every entry lies in one top folder (then dropped), else 0."""
    tops = {parts[0] for parts in all_parts}
    if len(tops) == 1 and all(len(parts) > 1 or _is_dir_entry(parts, all_parts) for parts in all_parts):
        return 1
    return 0


def _is_dir_entry(parts: tuple[str, ...], all_parts: list[tuple[str, ...]]) -> bool:
    return any(len(other) > len(parts) and other[:len(parts)] == parts for other in all_parts)
