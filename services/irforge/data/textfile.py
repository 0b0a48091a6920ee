"""Line iteration over plain or gzip text files, with line numbers and CRLF tolerance."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from pathlib import Path

from irforge.data.errors import DataFormatError


def open_text(path: str | Path) -> io.TextIOBase:
    """Open a UTF-8 text file, transparently decompressing `.gz`. Universal newlines: CRLF is fine."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline=None)
    return open(path, encoding="utf-8", newline=None)


def numbered_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its line ending) for every non-blank line.

    Raises DataFormatError for an empty file, undecodable bytes or a corrupt gzip stream.
    """
    seen_any = False
    with open_text(path) as handle:
        line_number = 0
        try:
            for line_number, raw in enumerate(handle, start=1):
                line = raw.rstrip("\r\n")
                if not line.strip():
                    continue
                seen_any = True
                yield line_number, line
        except UnicodeDecodeError as error:
            raise DataFormatError(path, f"not valid UTF-8 ({error.reason})", line_number + 1) from None
        except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError
            raise DataFormatError(path, f"cannot read: {error}", line_number + 1) from None
    if not seen_any:
        raise DataFormatError(path, "file is empty")
