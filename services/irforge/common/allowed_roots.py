"""The folders a job may read and write on a shared orchestrator, checked at every file it opens.

    with enforced(roots):                        # the orchestrator, around a job's submission and run
        BeirDataset.open(folder).corpus()        # readers call checked(path, what) right before opening

Checking the dataset folder alone is not enough: a file inside it may be a link to anywhere, and a
link can be made after the job was accepted. So every reader a job uses (dataset files, endpoint
and judge specs, the files they name) passes its path through `checked` at the moment it opens
it; links are followed, and one that stays inside the roots is fine.

The roots are a context variable, not an argument, because the readers sit deep below the job
(BeirDataset, judge templates, TLS files) and a job's thread binds them once. Outside `enforced`
(`irforge eval` on one's own machine) nothing is checked. A thread started inside a job starts
with an empty context: run its target with `contextvars.copy_context().run` if it opens files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_roots: ContextVar[tuple[Path, ...]] = ContextVar("irforge_allowed_roots", default=())


class OutsideAllowedRoots(PermissionError):
    """A file a job would open resolves outside the orchestrator's allowed roots."""


@contextmanager
def enforced(roots: Iterable[Path]) -> Iterator[None]:
    """Check every `checked` path against `roots` in this block (none given: no check)."""
    token = _roots.set(tuple(Path(root).resolve() for root in roots))
    try:
        yield
    finally:
        _roots.reset(token)


def current_roots() -> tuple[Path, ...]:
    return _roots.get()


def checked(path: str | Path, what: str = "file") -> Path:
    """`path`, unchanged, if it resolves (links followed) inside the enforced roots; raises
    OutsideAllowedRoots naming the file, where it points and the roots otherwise."""
    path = Path(path)
    roots = _roots.get()
    if not roots:
        return path
    resolved = path.resolve()
    if any(resolved.is_relative_to(root) for root in roots):
        return path
    points = f" (it points to {resolved})" if resolved != path.absolute() else ""
    raise OutsideAllowedRoots(f"{what} {path}{points} is outside the allowed roots "
                              f"({', '.join(str(root) for root in roots)})")
