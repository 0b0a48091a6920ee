"""Errors raised where bad input enters, naming the file and line."""

from __future__ import annotations

from pathlib import Path

from irforge.common.error_status import register_status


class DataFormatError(ValueError):
    """A data file is malformed. The message names the file and (where known) the line."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.reason = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


register_status(DataFormatError, "INVALID_ARGUMENT")  # how it travels over gRPC (irforge.common.grpc_errors)
