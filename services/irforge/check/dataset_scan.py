"""The dataset side of a check: the split's qrels scanned line by line, the query ids, the other
splits' query ids (to say which split a run's queries came from) and which of the ids the runs and
qrels name are in the corpus, found in one streamed pass that keeps ids, never text."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from irforge.check.run_scan import BadLine
from irforge.data import BeirDataset, DataFormatError
from irforge.data.beir import is_qrels_header, qrels_fields
from irforge.data.entries import MAX_RELEVANCE
from irforge.data.qrels import parse_relevance
from irforge.data.textfile import numbered_lines


@dataclass
class QrelsScan:
    """A BEIR qrels file's judgements (the first label of a pair kept) and its bad lines by kind."""

    path: Path
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    first_lines: dict[tuple[str, str], int] = field(default_factory=dict)
    malformed: list[BadLine] = field(default_factory=list)
    duplicates: list[BadLine] = field(default_factory=list)   # the same label again: harmless, but a sign
    conflicts: list[BadLine] = field(default_factory=list)    # another label: which counts is a guess


def scan_qrels(path: str | Path) -> QrelsScan:
    """Scan qrels as read_beir_qrels reads them (an optional header, 3 fields split on tabs when
    there are any), counting every bad line instead of stopping at the first."""
    path = Path(path)
    scan = QrelsScan(path)
    header_allowed = True
    for line_number, line in numbered_lines(path, "qrels file"):
        fields = qrels_fields(line)
        if header_allowed and is_qrels_header(fields):
            header_allowed = False
            continue
        header_allowed = False
        if len(fields) != 3:
            scan.malformed.append(BadLine(line_number, f"{len(fields)} fields, expected 3 (query-id, corpus-id, score)"))
            continue
        query_id, doc_id = fields[0].strip(), fields[1].strip()
        if not query_id or not doc_id:
            scan.malformed.append(BadLine(line_number, "empty query-id or corpus-id"))
            continue
        try:
            label = parse_relevance(path, fields[2], line_number)
        except DataFormatError as error:
            scan.malformed.append(BadLine(line_number, error.reason, query_id, doc_id))
            continue
        if abs(label) > MAX_RELEVANCE:
            scan.malformed.append(BadLine(line_number, f"relevance {label} does not fit trec_eval's 32-bit integer", query_id, doc_id))
            continue
        judged = scan.qrels.setdefault(query_id, {})
        if doc_id in judged:
            first = scan.first_lines[(query_id, doc_id)]
            if judged[doc_id] == label:
                scan.duplicates.append(BadLine(line_number, f"first on line {first}, the same label {label}", query_id, doc_id))
            else:
                scan.conflicts.append(BadLine(line_number, f"label {judged[doc_id]} on line {first}, {label} here", query_id, doc_id))
            continue
        judged[doc_id] = label
        scan.first_lines[(query_id, doc_id)] = line_number
    return scan


@dataclass
class DatasetView:
    """What the run and qrels checks compare against."""

    dataset: BeirDataset
    split: str
    qrels: QrelsScan
    query_ids: set[str]
    other_splits: dict[str, set[str]]   # split name -> its qrels' query ids

    @property
    def split_queries(self) -> set[str]:
        return set(self.qrels.qrels)

    def splits_of(self, query_ids: Iterable[str]) -> dict[str, int]:
        """How many of `query_ids` each other split judges (most first)."""
        wanted = set(query_ids)
        counts = {name: len(wanted & ids) for name, ids in self.other_splits.items()}
        return dict(sorted(((n, c) for n, c in counts.items() if c), key=lambda item: (-item[1], item[0])))


def open_view(root: str | Path, split: str) -> DatasetView:
    """The dataset at `root` (a folder) for `split`. DataFormatError when the folder, its corpus,
    queries or the split's qrels are missing or unreadable (a usage error, not a finding)."""
    dataset = BeirDataset.open(root)
    qrels = scan_qrels(dataset.qrels_path(split))
    query_ids = {query.query_id for query in dataset.queries()}
    return DatasetView(dataset, split, qrels, query_ids, _other_splits(dataset, split))


def _other_splits(dataset: BeirDataset, split: str) -> dict[str, set[str]]:
    found = {}
    for path in sorted((dataset.root / "qrels").glob("*.tsv*")):
        name = path.name.split(".")[0]
        if name != split and name not in found:
            try:
                found[name] = set(scan_qrels(path).qrels)
            except DataFormatError:   # an unreadable other split only loses the hint
                continue
    return found


def corpus_membership(dataset: BeirDataset, wanted: set[str]) -> tuple[set[str], int]:
    """Which of `wanted` the corpus has, and how many documents it holds: one streamed pass; the
    ids asked about are all that is kept (a corpus of millions is never held)."""
    found: set[str] = set()
    documents = 0
    for document in dataset.corpus():
        documents += 1
        if document.doc_id in wanted:
            found.add(document.doc_id)
    return found, documents
