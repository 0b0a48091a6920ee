"""The one reader of run files: TREC's six columns, the {query: {doc: score}} JSON that Pyserini,
Anserini and ranx write, and three-column TSV (query doc score, or MS MARCO's query doc rank),
gzipped or not, the layout named or found from the first line.

Every line is checked as it streams past and a bad one is named by file and line: too few or too
many columns, a score that is not a number or not finite, a document given twice for a query, an
empty file. The result says which layout was read, the file's sha256 (what results.json records,
so a figure can be traced to the exact bytes scored) and the producer the file names (TREC's tag
column), if any.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from irforge.common.allowed_roots import checked
from irforge.data.entries import EntryError, add_run_entry
from irforge.data.errors import DataFormatError
from irforge.data.textfile import numbered_lines, open_text, regular_input
from irforge.data.types import Run

RUN_FORMATS = ("auto", "trec", "json", "tsv", "msmarco")
_WHAT = "run file"


@dataclass(frozen=True)
class GivenRun:
    """A run read from a file. `format` is the layout read ("trec", "json", "tsv", "msmarco"),
    never "auto"; `producer` is the tag the file records ("" when its layout has none)."""

    path: str
    run: Run
    format: str
    sha256: str
    producer: str
    lines: int  # entries read: lines of a line layout, (query, doc) pairs of JSON

    @property
    def queries(self) -> int:
        return len(self.run)

    @property
    def entries(self) -> int:
        return sum(len(scores) for scores in self.run.values())


def read_run_file(path: str | Path, format: str = "auto") -> GivenRun:
    """Read a run file in `format` (one of RUN_FORMATS). DataFormatError names the file, the line
    and what is wrong; a path that is missing or not a regular file is refused the same way."""
    if format not in RUN_FORMATS:
        raise DataFormatError(path, f"unknown run format {format!r}; choose one of {', '.join(RUN_FORMATS)}")
    path = regular_input(checked(path, _WHAT), _WHAT)   # an orchestrator's job reads only inside its allowed roots
    if format == "auto":
        format = _detect(path)
    if format == "json":
        run, producer = _read_json(path), ""
        lines = sum(len(scores) for scores in run.values())
    else:
        run, producer, lines, format = _read_lines(path, format)
    return GivenRun(path=str(path), run=run, format=format, sha256=_sha256(path), producer=producer, lines=lines)


def _sha256(path: Path) -> str:
    """Of the bytes on disk (compressed ones for a .gz): what `sha256sum FILE` prints."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def line_layout(line: str) -> str | None:
    """The layout one run line has: "{" opens JSON, six or more columns are TREC, three are TSV
    ("tsv?": scores, or MS MARCO's ranks, told apart after reading, see _read_lines); None for none."""
    if line.lstrip().startswith("{"):
        return "json"
    columns = len(line.split())
    if columns >= 6:
        return "trec"
    return "tsv?" if columns == 3 else None


def _detect(path: Path) -> str:
    """The layout from the first non-blank line (line_layout)."""
    for line_number, line in numbered_lines(path, _WHAT):
        layout = line_layout(line)
        if layout is not None:
            return layout
        columns = len(line.split())
        raise DataFormatError(path, f"cannot tell the run's layout from its first line: {columns} columns; expected "
                                    "6 (TREC: qid Q0 docno rank score tag), 3 (TSV: qid docno score, or MS MARCO: "
                                    "qid docno rank) or a JSON object", line_number)
    raise DataFormatError(path, "file is empty")  # unreachable: numbered_lines refuses an empty file


def _read_lines(path: Path, format: str) -> tuple[Run, str, int, str]:
    """TREC or TSV lines. With format "tsv?" (detected, not named) the third column is read as
    MS MARCO ranks if every query's values run 1, 2, 3, ... in file order (what MS MARCO's layout
    is), as scores otherwise."""
    run: Run = {}
    producer = ""
    line_count = 0
    trec = format == "trec"
    for line_number, line in numbered_lines(path, _WHAT):
        fields = line.split()
        if trec:
            if len(fields) < 6:  # trailing columns beyond six are ignored, as trec_eval does
                raise DataFormatError(path, f"expected at least 6 fields (qid Q0 docno rank score tag), got {len(fields)}", line_number)
            query_id, _, doc_id, _, raw_score, tag = fields[:6]  # the rank column is not used: the scores and the tie rule rank
            producer = producer or tag
        else:
            if len(fields) != 3:
                layout = "qid docno rank" if format == "msmarco" else "qid docno score"
                raise DataFormatError(path, f"expected 3 fields ({layout}), got {len(fields)}", line_number)
            query_id, doc_id, raw_score = fields
        score = _number(path, raw_score, line_number, "rank" if format == "msmarco" else "score")
        if format == "msmarco":
            score = _rank_score(path, score, line_number)
        if doc_id in run.get(query_id, ()):
            raise _repeated(path, line_number, query_id, doc_id, trec)
        try:
            add_run_entry(run, query_id, doc_id, score)
        except EntryError as error:
            raise DataFormatError(path, str(error), line_number) from None
        line_count += 1
    if format == "tsv?":
        run, format = _ranks_or_scores(run)
    return run, producer, line_count, format


def _number(path: Path, raw: str, line_number: int, what: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise DataFormatError(path, f"{what} {raw!r} is not a number", line_number) from None


def _rank_score(path: Path, rank: float, line_number: int) -> float:
    """MS MARCO's rank as a score: 1/rank, as Pyserini's convert_msmarco_run_to_trec_run does, so
    rank 1 scores highest and the tie rule has no ties to break."""
    if not (rank >= 1 and rank == int(rank)):
        raise DataFormatError(path, f"rank {rank!r} is not a whole number from 1 (MS MARCO layout: qid docno rank)", line_number)
    return 1.0 / rank


def _ranks_or_scores(run: Run) -> tuple[Run, str]:
    """A detected three-column file whose third column counts 1, 2, 3, ... for every query (in
    file order) holds MS MARCO ranks, not scores: read as scores they would rank backwards."""
    for scores in run.values():
        if list(scores.values()) != [float(rank) for rank in range(1, len(scores) + 1)]:
            return run, "tsv"
    return {query_id: {doc_id: 1.0 / rank for doc_id, rank in scores.items()} for query_id, scores in run.items()}, "msmarco"


def _repeated(path: Path, line_number: int, query_id: str, doc_id: str, trec: bool) -> DataFormatError:
    """A (query, doc) given twice, naming both lines: refused even with equal scores (a run ranks a
    document once per query; the evaluator's gRPC door refuses it in the same words). The first
    line is found by a second pass, so the first keeps no line numbers for millions of good entries."""
    first = ""
    for earlier, line in numbered_lines(path, _WHAT):
        fields = line.split()
        if (fields[0], fields[2] if trec else fields[1]) == (query_id, doc_id):
            first = f" (first at line {earlier})"
            break
    return DataFormatError(path, f"document {doc_id!r} appears twice for query {query_id!r}{first}", line_number)


def _read_json(path: Path) -> Run:
    """{query id: {doc id: score}}. JSON keeps no line per entry, so an entry's error names its
    query and document; a syntax error names its line (json's own)."""
    def object_pairs(pairs: list[tuple[str, object]]) -> dict:
        keys = [key for key, _ in pairs]
        if len(keys) != len(set(keys)):
            repeated = next(key for key, count in _counted(keys) if count > 1)
            raise _JsonEntryError(f"key {repeated!r} appears twice in one object")
        return dict(pairs)

    def non_finite(constant: str) -> float:
        raise _JsonEntryError(f"score {constant} is not a finite number")

    try:
        with open_text(path, _WHAT) as handle:
            text = handle.read()
        if not text.strip():
            raise DataFormatError(path, "file is empty")
        value = json.loads(text, object_pairs_hook=object_pairs, parse_constant=non_finite)
    except json.JSONDecodeError as error:
        raise DataFormatError(path, f"not valid JSON: {error.msg} (column {error.colno})", error.lineno) from None
    except _JsonEntryError as error:
        raise DataFormatError(path, str(error)) from None
    except UnicodeDecodeError:
        raise DataFormatError(path, "not valid UTF-8") from None
    except (OSError, EOFError) as error:
        raise DataFormatError(path, f"cannot read: {error}") from None
    if not isinstance(value, dict):
        raise DataFormatError(path, f"expected a JSON object {{query id: {{doc id: score}}}}, got {type(value).__name__}")
    if not value:
        raise DataFormatError(path, "the run has no queries")
    run: Run = {}
    for query_id, scores in value.items():
        if not isinstance(scores, dict):
            raise DataFormatError(path, f"query {query_id!r}: expected an object {{doc id: score}}, got {type(scores).__name__}")
        run[query_id] = {}  # a query with no documents is kept: it was asked and found nothing
        for doc_id, score in scores.items():
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise DataFormatError(path, f"score {score!r} for query {query_id!r}, document {doc_id!r} is not a number")
            try:
                add_run_entry(run, query_id, doc_id, float(score))
            except (EntryError, OverflowError) as error:
                raise DataFormatError(path, str(error)) from None
    return run


class _JsonEntryError(ValueError):
    pass


def _counted(keys: list[str]) -> Iterator[tuple[str, int]]:
    for key, group in itertools.groupby(sorted(keys)):
        yield key, sum(1 for _ in group)


__all__ = ["RUN_FORMATS", "GivenRun", "read_run_file"]


def run_labels(paths) -> list[str]:
    """Each fused run's name in results.json and the printed weights: the shortest tail of its path
    that tells it from the others (`run.trec` alone, or `bm25/run.trec` beside `dense/run.trec`)."""
    parts = [Path(path).parts for path in paths]
    for depth in range(1, max(len(p) for p in parts) + 1):
        labels = ["/".join(p[-depth:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{n}:{label}" for n, label in enumerate(labels, start=1)]   # the same file given twice

