"""Line iteration over plain or gzip UTF-8 files, with line numbers, CRLF and BOM tolerance."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from irforge.common.files import not_a_regular_file
from irforge.data.errors import DataFormatError

BOM = b"\xef\xbb\xbf"


def _open_binary(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def regular_input(path: str | Path, what: str = "input file") -> Path:
    """`path` when it is a regular file (links followed); DataFormatError naming it and `what` it
    is for ("run file", "corpus file"...) when it is missing, a FIFO, a device or a folder. Every
    data file passes here before it is opened: a FIFO would block, /dev/zero never end."""
    path = Path(path)
    kind = not_a_regular_file(path)
    if kind:
        raise DataFormatError(path, f"the {what} is {kind}, not a regular file")
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    return path


def open_text(path: str | Path, what: str = "input file") -> io.TextIOBase:
    """Open a UTF-8 text file, transparently decompressing `.gz`. Universal newlines: CRLF is fine.
    A BOM at the start is skipped (utf-8-sig): Windows tools write one; anywhere else it is data.
    `what` names the input in the error when the path is a FIFO, a device or a folder."""
    path = regular_input(path, what)
    return io.TextIOWrapper(_open_binary(path), encoding="utf-8-sig", newline=None)


def numbered_lines(path: str | Path, what: str = "input file") -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its line ending) for every non-blank line.

    Raises DataFormatError for an empty file, undecodable bytes or a corrupt gzip stream, or a
    path that is not a regular file (`what` names the input then: "run file", "corpus file"...).
    """
    seen_any = False
    with open_text(path, what) as handle:
        line_number = 0
        try:
            for line_number, raw in enumerate(handle, start=1):
                line = raw.rstrip("\r\n")
                if not line.strip():
                    continue
                seen_any = True
                yield line_number, line
        except UnicodeDecodeError:
            raise _undecodable(Path(path)) from None
        except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError
            # Read ahead in blocks, a corrupt stream is found somewhere after the last line handed out.
            where = f" after line {line_number}" if line_number else ""
            raise DataFormatError(path, f"cannot read{where}: {error}") from None
    if not seen_any:
        raise DataFormatError(path, "file is empty")


def _undecodable(path: Path) -> DataFormatError:
    """The error naming the first line that is not UTF-8. The text reader decodes a whole buffer
    ahead of the line it hands out, so its position is not the line's; decoding line by line is
    twice as slow, so it is done only once the fast pass has failed (a second, streaming pass)."""
    with _open_binary(path) as handle:
        for line_number, raw in enumerate(_raw_lines(handle), start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as error:
                return DataFormatError(path, f"not valid UTF-8 ({error.reason} at byte {error.start + 1} of the line)", line_number)
    return DataFormatError(path, "not valid UTF-8")  # unreachable unless the file changed under us


def _raw_lines(handle: BinaryIO) -> Iterator[bytes]:
    """The lines as bytes, counted as universal newlines count them: \\n, \\r\\n and a lone \\r
    each end a line, nothing else does (U+2028 may sit unescaped in JSON text)."""
    for chunk in handle:
        chunk = chunk.removesuffix(b"\n").removesuffix(b"\r")
        yield from chunk.split(b"\r")
