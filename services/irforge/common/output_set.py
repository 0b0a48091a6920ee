"""An output folder written as one set: a reader (or a kill -9) sees the old set or the new one.

results.json describes the run.trec beside it (and the judged layer, after --fill-holes), so the
files must change together. A writer fills a staging folder beside OUT, and the commit swaps it
with OUT in one renameat2(RENAME_EXCHANGE); where the filesystem lacks it, OUT is renamed aside
and the staging folder renamed in, and a kill between the two renames is undone by the next run
(see files.remove_stale_temporaries). The next run also removes the staging folders and
temporary files of killed runs, by the pid in their names.

Files in OUT that the set does not replace (notes, a judge-holes report) are carried into the new
folder as hard links; a subfolder cannot be carried atomically, so an OUT holding one is refused.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from pathlib import Path

from irforge.common.files import TEMPORARY, NoSpaceLeft, is_disk_full, remove_stale_temporaries, temporary_name, writing

EVAL_SET = ("results.json", "run.trec", "qrels.judged.tsv", "qrels.judged.provenance.jsonl", "flagged.tsv")


class OutputFolderError(ValueError):
    """OUT cannot take an output set; the message names the flag and the path."""


def check_output_folder(target: str | Path, flag: str = "--out") -> None:
    """Raise OutputFolderError unless `target` can take an output set: called before any work."""
    target = Path(target)
    where = f"{flag} {target}" if flag else str(target)
    if target.exists():
        if not target.is_dir():
            raise OutputFolderError(f"{where}: exists and is not a folder")
        resolved, cwd = target.resolve(), Path.cwd().resolve()
        if resolved == cwd or resolved in cwd.parents:
            raise OutputFolderError(f"{where}: is the current folder or holds it; the outputs replace the whole folder")
        folders = sorted(p.name for p in target.iterdir() if p.is_dir() and not TEMPORARY.match(p.name))
        if folders:
            raise OutputFolderError(f"{where}: holds folders ({', '.join(folders[:3])}) and the outputs replace the whole "
                                    "folder; give them a folder of their own")
    ancestor = target.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputFolderError(f"{where}: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputFolderError(f"{where}: no permission to write in {ancestor}")


def check_outside(target: str | Path, paths: dict[str, str | Path | None], flag: str = "--out") -> None:
    """Raise OutputFolderError when a store or input (flag -> path) lies inside `target`: a new
    set replaces the whole folder, and a store growing there would stop the next run."""
    out = Path(target).resolve()
    for name, value in paths.items():
        if value is not None and (Path(value).resolve() == out or out in Path(value).resolve().parents):
            raise OutputFolderError(f"{name} {value} is inside {flag} {target}, which every run replaces as a whole: "
                                    "keep it elsewhere")


class OutputSet:
    """Context manager yielding a staging folder; on success it becomes `target`, whose files
    outside `replaces` are carried over (replaces=None: the staging folder is the whole new
    folder, subfolders and all, as `irforge qc` writes a dataset; its caller checks `target`).
    On an exception the staging folder is removed and `target` is untouched."""

    def __init__(self, target: str | Path, replaces: tuple[str, ...] | None = EVAL_SET):
        self.target = Path(os.path.realpath(target))  # a symlinked OUT: swap the folder it names, keep the link
        self.replaces = None if replaces is None else set(replaces)

    def __enter__(self) -> Path:
        if self.replaces is not None:
            check_output_folder(self.target, flag="")
        parent = self.target.parent
        parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(parent, self.target.name)
        remove_stale_temporaries(self.target)
        self.staging = parent / temporary_name(self.target.name, "staging")
        with writing(self.target):
            os.mkdir(self.staging, 0o777)  # the umask applies, as for any folder the user makes
        return self.staging

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self._commit()
                return False
        except BaseException as error:
            exc = error
        shutil.rmtree(self.staging, ignore_errors=True)
        if isinstance(exc, NoSpaceLeft) or is_disk_full(exc):
            # Named as the user knows it: OUT/results.json, not the staging folder (a full disk
            # met elsewhere meanwhile, an index folder, keeps its own name).
            written = getattr(exc, "path", None) or getattr(exc, "filename", None)
            inside = written is not None and Path(written).is_relative_to(self.staging)
            if inside or (written is None and is_disk_full(exc)):   # a write in the staging folder
                raise NoSpaceLeft(self.target / (Path(written).relative_to(self.staging) if inside else "")) from exc
        if exc_type is None:
            raise exc
        return False

    def _commit(self) -> None:
        staging, target = self.staging, self.target
        if target.is_dir():
            os.chmod(staging, target.stat().st_mode & 0o7777)  # the folder keeps the mode its owner gave it
            self._carry_over()
        _fsync_tree(staging)
        if not target.exists():
            try:
                os.rename(staging, target)
                _fsync(target.parent)
                return
            except OSError as error:  # another writer created OUT meanwhile: swap with theirs
                if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                self._carry_over()
        if _exchange(staging, target):
            _fsync(target.parent)
            shutil.rmtree(staging, ignore_errors=True)  # now the old set; a kill here leaves it to the next run
            return
        aside = target.parent / temporary_name(target.name, "old")
        os.rename(target, aside)
        os.rename(staging, target)
        _fsync(target.parent)
        shutil.rmtree(aside, ignore_errors=True)

    def _carry_over(self) -> None:
        if self.replaces is None:
            return
        for path in self.target.iterdir():
            keep = path.name not in self.replaces and not TEMPORARY.match(path.name) and path.is_file()
            if keep and not (self.staging / path.name).exists():
                try:
                    os.link(path, self.staging / path.name, follow_symlinks=False)
                except OSError:  # a filesystem without hard links
                    shutil.copy2(path, self.staging / path.name, follow_symlinks=False)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(folder: Path) -> None:
    """The new set is on disk before it becomes OUT: a power cut cannot swap in empty files."""
    for path in folder.iterdir():
        if path.is_file() and not path.is_symlink():
            _fsync(path)
    _fsync(folder)
