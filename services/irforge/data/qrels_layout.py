"""A qrels file in either layout users have, told apart by its first line, and a look at whether a
file is a run or qrels at all (for the hint when the two are given in the wrong order).

The two layouts cannot be confused: a BEIR qrels starts with the header "query-id corpus-id
score" (3 columns), which is no TREC qrels line (always 4: qid iter docno rel). A file without
that header is read as TREC, so a headerless 3-column file is refused, naming the header it lacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from irforge.data.beir import is_qrels_header, qrels_fields, read_beir_qrels
from irforge.data.errors import DataFormatError
from irforge.data.textfile import numbered_lines
from irforge.data.trec import read_trec_qrels
from irforge.data.types import Qrels

BEIR = "BEIR qrels (header query-id corpus-id score)"
TREC = "TREC qrels (qid iter docno rel)"


@dataclass(frozen=True)
class QrelsFile:
    qrels: Qrels
    layout: str   # BEIR or TREC: which reader read it, in words a user can check against the file


def first_line(path: str | Path, what: str = "input file") -> tuple[int, str] | None:
    """(line number, text) of the first non-blank line; None for a file with none."""
    return next(iter(numbered_lines(path, what)), None)


def read_qrels_file(path: str | Path) -> QrelsFile:
    """Read a BEIR or a TREC qrels file, whichever its first line says it is."""
    path = Path(path)
    first = first_line(path, "qrels file")
    if first is not None and is_qrels_header(qrels_fields(first[1])):
        return QrelsFile(read_beir_qrels(path), BEIR)
    try:
        return QrelsFile(read_trec_qrels(path), TREC)
    except DataFormatError as error:
        if first is not None and error.line == first[0] and len(first[1].split("\t")) == 3:
            raise DataFormatError(path, f"{error.reason}; a BEIR qrels (query-id corpus-id score) must start with "
                                        "the header line 'query-id<TAB>corpus-id<TAB>score'", error.line) from None
        raise


def _first_fields(path: Path) -> list[str]:
    try:
        first = first_line(path)
    except DataFormatError:   # unreadable: it looks like nothing
        return []
    return first[1].split() if first is not None else []


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def looks_like_run(path: str | Path) -> bool:
    """The first line reads as a run line: qid Q0 docno rank score tag (a numeric score)."""
    fields = _first_fields(Path(path))
    return len(fields) >= 6 and _is_number(fields[4])


def looks_like_qrels(path: str | Path) -> bool:
    """The first line is BEIR's qrels header or a TREC qrels line (4 fields, numeric relevance)."""
    fields = _first_fields(Path(path))
    return is_qrels_header(fields) or (len(fields) == 4 and _is_number(fields[3]))
