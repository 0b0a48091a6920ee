"""A TREC run read the way a linter must: every bad line counted with its number, none stopping
the scan.

The one run reader (irforge.data.trec.read_trec_run, which eval and metrics use) refuses a file at
its first bad line: right for scoring, useless for a report of *how many* lines are bad. So the
lines are scanned here with the reader's own layout and rules (at least 6 whitespace-separated
fields "qid Q0 docno rank score tag", extra columns ignored, the score a finite float, a document
once per query), and the one reader is then asked for its verdict: when it accepts the file, the
scan must hold exactly its run (checked), so the checks see what eval scores; when it refuses,
its message is kept (what eval would say) and the checks go on over the lines that could be read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from irforge.data import DataFormatError, read_trec_run
from irforge.data.textfile import numbered_lines


@dataclass(frozen=True)
class Entry:
    """One (query, document) line: its score, the rank the file wrote (None when not an integer;
    the rank column is never used for scoring) and its line number."""
    score: float
    rank: int | None
    line: int


@dataclass
class BadLine:
    line: int
    reason: str
    query_id: str = ""
    doc_id: str = ""


@dataclass
class RunScan:
    """A run file's usable entries (query -> doc -> Entry, the first line of a pair kept) and its
    bad lines by kind."""

    path: Path
    entries: dict[str, dict[str, Entry]] = field(default_factory=dict)
    lines: int = 0
    tag: str = ""
    malformed: list[BadLine] = field(default_factory=list)      # too few fields
    bad_scores: list[BadLine] = field(default_factory=list)     # not a number, NaN, infinite
    duplicates: list[BadLine] = field(default_factory=list)     # a pair seen before (reason: first line)
    refused: str | None = None                                  # the one reader's message, when it refuses

    @property
    def run(self) -> dict[str, dict[str, float]]:
        return {q: {d: e.score for d, e in docs.items()} for q, docs in self.entries.items()}

    @property
    def pairs(self) -> int:
        return sum(len(docs) for docs in self.entries.values())

    def line_of(self, query_id: str, doc_id: str) -> int | None:
        entry = self.entries.get(query_id, {}).get(doc_id)
        return entry.line if entry else None


def _rank(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def scan_run(path: str | Path) -> RunScan:
    """Scan a TREC run (plain or .gz). DataFormatError only for a file that cannot be read at all
    (missing, not a regular file, empty, not UTF-8): that is a usage error, not a finding."""
    path = Path(path)
    scan = RunScan(path)
    for line_number, line in numbered_lines(path, "run file"):
        scan.lines += 1
        fields = line.split()
        if len(fields) < 6:
            scan.malformed.append(BadLine(line_number, f"{len(fields)} fields, expected at least 6 (qid Q0 docno rank score tag)"))
            continue
        query_id, _, doc_id, raw_rank, raw_score, tag = fields[:6]
        scan.tag = scan.tag or tag
        try:
            score = float(raw_score)
        except ValueError:
            scan.bad_scores.append(BadLine(line_number, f"score {raw_score!r} is not a number", query_id, doc_id))
            continue
        if not math.isfinite(score):
            scan.bad_scores.append(BadLine(line_number, f"score {raw_score!r} is not finite", query_id, doc_id))
            continue
        docs = scan.entries.setdefault(query_id, {})
        if doc_id in docs:
            first = docs[doc_id]
            same = "the same score" if first.score == score else f"score {first.score!r} there, {score!r} here"
            scan.duplicates.append(BadLine(line_number, f"first on line {first.line}, {same}", query_id, doc_id))
            continue
        docs[doc_id] = Entry(score, _rank(raw_rank), line_number)
    _ask_the_reader(scan)
    return scan


def _ask_the_reader(scan: RunScan) -> None:
    """The one reader's verdict. When it accepts the file, the scan must hold the same run: the
    reader is what eval uses, so a disagreement would be a bug here, not a finding."""
    try:
        run = read_trec_run(scan.path).run
    except DataFormatError as error:
        scan.refused = str(error)
        return
    if run != scan.run:
        raise AssertionError(f"{scan.path}: the linter's scan and the run reader read different runs")
