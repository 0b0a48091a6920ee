"""A label (system, dataset, measure, query id: whatever a results file or a user named) as one
cell of each format irforge writes tables in, so one cell stays one cell and a spreadsheet runs
nothing: every CSV goes through `csv_text`, every Markdown, LaTeX and text table cell through
`markdown_cell`, `latex_cell` and `text_cell`."""

from __future__ import annotations

import re
from collections.abc import Iterable

# OWASP's CSV injection advice: a text cell starting with one of these (also after leading
# whitespace) is a formula to Excel, LibreOffice or Sheets; a leading ' makes it text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# What a spreadsheet reads as a number, not a formula ("-0.25", "1e-05"): left as it is.
PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
# Line breaks and other control characters would end a row (Markdown, LaTeX, text) or a line.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
                  "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def csv_cell(value) -> str:
    """A value as a CSV cell: floats in full precision (repr), None empty, text that a spreadsheet
    would take for a formula prefixed with a single quote."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (bool, int)):
        return str(value)
    text = str(value)
    if PLAIN_NUMBER.fullmatch(text):
        return text
    if text.startswith(FORMULA_STARTS) or text.lstrip().startswith(FORMULA_STARTS):
        return "'" + text
    return text


def csv_text(rows: Iterable[Iterable]) -> str:
    """Rows as CSV text (RFC 4180 quoting, \n between rows), every cell through csv_cell: the one
    way irforge writes CSV. Quoted by hand: the csv module leaves a lone \r unquoted when rows
    end in \n, and a reader then splits the row there."""
    return "".join(",".join(map(_quoted, map(csv_cell, row))) + "\n" for row in rows)


def _quoted(cell: str) -> str:
    return '"' + cell.replace('"', '""') + '"' if any(ch in cell for ch in ',"\r\n') else cell


def one_line(value) -> str:
    """The text on one line: each control character shown as its escape (a newline as \\n)."""
    return CONTROL.sub(lambda found: repr(found.group(0))[1:-1], str(value))


def text_cell(value) -> str:
    return one_line(value)


def markdown_cell(value) -> str:
    """One GFM table cell: backslashes and pipes escaped, on one line."""
    return one_line(value).replace("\\", "\\\\").replace("|", "\\|")


def latex_cell(value) -> str:
    """One LaTeX table cell (or caption text): the specials escaped, on one line."""
    return "".join(LATEX_SPECIALS.get(ch, ch) for ch in one_line(value))
