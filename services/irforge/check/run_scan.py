"""A run file read the way a linter must: every bad entry counted with its line, none stopping
the scan; then the one run reader's verdict.

The one reader (irforge.runs.reading.read_run_file, which eval, metrics and compare use) refuses a
file at its first bad line: right for scoring, no use for a report of *how many* lines are bad. So
the entries are scanned here with the reader's layouts and rules (TREC: at least 6 fields "qid Q0
docno rank score tag", extra columns ignored; TSV / MS MARCO: exactly 3; JSON {qid: {docno: score}};
a score is a finite number, a document appears once per query), and the reader is then asked:
when it accepts the file its run is the one checked (so the checks see what eval scores, MS MARCO
ranks turned into scores included) and it must hold the pairs the scan found; when it refuses, its
message is kept (what eval would say) and the checks go on over the entries that could be read.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from irforge.common.allowed_roots import checked
from irforge.common.files import file_sha256
from irforge.data import DataFormatError
from irforge.data.textfile import numbered_lines, open_text
from irforge.runs import read_run_file
from irforge.runs.reading import line_layout


@dataclass
class BadLine:
    line: int
    reason: str
    query_id: str = ""
    doc_id: str = ""


@dataclass
class RunScan:
    """A run file's usable entries and its bad ones by kind. `scores` is the run (query -> doc ->
    score, the first of a repeated pair kept); beside it, per entry, the line it came from (0 in
    JSON, which has none) and the rank the file wrote (None when the layout has none or it is no
    integer; ranks never decide a ranking). Plain dicts: a run of a million lines is scanned in
    about the time the run reader takes."""

    path: Path
    format: str = ""
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    line_numbers: dict[str, dict[str, int]] = field(default_factory=dict)
    ranks: dict[str, dict[str, int | None]] = field(default_factory=dict)
    lines: int = 0
    tag: str = ""
    sha256: str = ""
    malformed: list[BadLine] = field(default_factory=list)      # wrong number of fields, not the layout
    bad_scores: list[BadLine] = field(default_factory=list)     # not a number, NaN, infinite
    duplicates: list[BadLine] = field(default_factory=list)     # a pair seen before (reason: where first)
    refused: str | None = None                                  # the one reader's message, when it refuses

    @property
    def pairs(self) -> int:
        return sum(len(docs) for docs in self.scores.values())

    def line_of(self, query_id: str, doc_id: str) -> int:
        return self.line_numbers[query_id][doc_id]

    def rank_of(self, query_id: str, doc_id: str) -> int | None:
        return self.ranks[query_id][doc_id]

    def query(self, query_id: str) -> None:
        """A query the file names (JSON may name one with no documents)."""
        if query_id not in self.scores:
            self.scores[query_id], self.line_numbers[query_id], self.ranks[query_id] = {}, {}, {}

    def add(self, line: int, query_id: str, doc_id: str, raw_score, rank: int | None) -> None:
        """One entry, or the reason it is bad."""
        try:
            if isinstance(raw_score, bool):
                raise ValueError
            score = float(raw_score)
        except (TypeError, ValueError, OverflowError):
            self.bad_scores.append(BadLine(line, f"score {raw_score!r} is not a number", query_id, doc_id))
            return
        if not math.isfinite(score):
            self.bad_scores.append(BadLine(line, f"score {raw_score!r} is not finite", query_id, doc_id))
            return
        self.query(query_id)
        scores = self.scores[query_id]
        if doc_id in scores:
            first = self.line_numbers[query_id][doc_id]
            where = f"first on line {first}" if first else "given before"
            same = "the same score" if scores[doc_id] == score else f"score {scores[doc_id]!r} there, {score!r} here"
            self.duplicates.append(BadLine(line, f"{where}, {same}", query_id, doc_id))
            return
        scores[doc_id] = score
        self.line_numbers[query_id][doc_id] = line
        self.ranks[query_id][doc_id] = rank


def _rank(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _layout(path: Path, format: str) -> str:
    """The layout to scan as: the one named, else what the first line that fits one says (a
    malformed first line is a finding, not a reason to give up)."""
    if format == "msmarco":
        return "tsv"
    if format != "auto":
        return format
    for _, line in numbered_lines(path, "run file"):
        layout = line_layout(line)
        if layout is not None:
            return "tsv" if layout == "tsv?" else layout
    raise DataFormatError(path, "no line has a run layout: 6 columns (TREC: qid Q0 docno rank score tag), "
                                "3 (TSV: qid docno score, or MS MARCO: qid docno rank) or a JSON object")


def scan_run(path: str | Path, format: str = "auto") -> RunScan:
    """Scan a run (plain or .gz) in `format` (irforge.runs.RUN_FORMATS). DataFormatError only for
    a file that cannot be read at all (missing, not a regular file, empty, not UTF-8, no line in
    any layout, unparseable JSON): a usage error, not a finding."""
    path = checked(path, "run file")   # as the run reader does: inside a job, only its allowed roots
    scan = RunScan(path, _layout(path, format))
    if scan.format == "json":
        _scan_json(scan)
    else:
        _scan_lines(scan)
    _ask_the_reader(scan, format)
    return scan


def _scan_lines(scan: RunScan) -> None:
    trec = scan.format == "trec"
    for line_number, line in numbered_lines(scan.path, "run file"):
        scan.lines += 1
        fields = line.split()
        if trec and len(fields) < 6 or not trec and len(fields) != 3:
            layout = "at least 6 (qid Q0 docno rank score tag)" if trec else "3 (qid docno score)"
            scan.malformed.append(BadLine(line_number, f"{len(fields)} fields, expected {layout}"))
            continue
        if trec:
            query_id, _, doc_id, raw_rank, raw_score, tag = fields[:6]
            scan.tag = scan.tag or tag
            scan.add(line_number, query_id, doc_id, raw_score, _rank(raw_rank))
        else:
            query_id, doc_id, raw_score = fields
            scan.add(line_number, query_id, doc_id, raw_score, None)


def _scan_json(scan: RunScan) -> None:
    """{qid: {docno: score}} with every repeated key, NaN or Infinity kept to be counted (json's
    own parser would let a repeated key silently win)."""
    try:
        with open_text(scan.path, "run file") as handle:
            value = json.loads(handle.read(), object_pairs_hook=_Pairs)
    except json.JSONDecodeError as error:
        raise DataFormatError(scan.path, f"not valid JSON: {error.msg} (column {error.colno})", error.lineno) from None
    except UnicodeDecodeError:
        raise DataFormatError(scan.path, "not valid UTF-8") from None
    if not isinstance(value, _Pairs):
        raise DataFormatError(scan.path, f"expected a JSON object {{query id: {{doc id: score}}}}, got {type(value).__name__}")
    for query_id, scores in value:
        if not isinstance(scores, _Pairs):
            scan.malformed.append(BadLine(0, f"query {query_id!r}: expected an object {{doc id: score}}, "
                                             f"got {type(scores).__name__}", query_id))
            continue
        scan.query(query_id)
        for doc_id, score in scores:
            scan.lines += 1
            scan.add(0, query_id, doc_id, repr(score) if isinstance(score, str) else score, None)  # "1.5" is no number in JSON


class _Pairs(list):
    """A JSON object as its (key, value) pairs, repeated keys kept; told apart from a JSON array."""


def _ask_the_reader(scan: RunScan, format: str) -> None:
    """The one reader's verdict; when it accepts, its scores (MS MARCO ranks become 1/rank there)."""
    try:
        given = read_run_file(scan.path, format)
    except DataFormatError as error:
        scan.refused, scan.sha256 = str(error), file_sha256(scan.path)   # the bytes checked, named either way
        return
    if given.run.keys() != scan.scores.keys() or any(given.run[q].keys() != scan.scores[q].keys() for q in given.run):
        raise AssertionError(f"{scan.path}: the linter's scan and the run reader found different (query, doc) pairs")  # a bug here
    scan.format, scan.sha256, scan.tag, scan.scores = given.format, given.sha256, given.producer, given.run
