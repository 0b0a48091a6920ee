"""The errors of `irforge datasets` and of dataset names: user errors, each naming what to do."""

from __future__ import annotations


class DatasetError(ValueError):
    """A dataset name, catalogue, download or archive the user must fix: the message says how.
    A ValueError, so the commands that resolve `--dataset` report it as any bad flag (exit 2)."""


class ChecksumMismatch(DatasetError):
    """The downloaded archive is not the one the catalogue names."""

    def __init__(self, name: str, url: str, algorithm: str, expected: str, got: str):
        super().__init__(f"{name}: the archive from {url} has {algorithm} {got}, expected {expected}: refused, "
                         "nothing extracted (a mirror serving another file, a proxy rewriting it, or a changed upstream "
                         "archive)")
        self.expected = expected
        self.got = got
