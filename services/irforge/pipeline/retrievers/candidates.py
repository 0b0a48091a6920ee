"""Given candidates as the first stage: each query's documents read from a file instead of
retrieved, for a reranker to reorder (BEIR's "rerank the BM25 top 100", FollowIR's top_ranked).

- The file is a run in any layout irforge.runs reads (TREC, Pyserini/Anserini/ranx JSON, TSV, MS
  MARCO ranks: its scores and the tie rule rank it) or a top_ranked.jsonl (irforge.runs.top_ranked:
  the list's order is the ranking). `format` "auto" tells them apart by the first line. A given
  file is read when the retriever is made, before any model loads: a bad line fails at once.
- `path` None: the dataset's own top_ranked.jsonl, found at prepare (FollowIR's protocol in
  eval-instructions, where every dimension brings its own).
- Every candidate of a query retrieved must be a document of the corpus (a reranker needs its
  text; a file made for another corpus is refused, naming it): prepare() notes which are absent,
  streaming the corpus through the tracker once, and retrieve() refuses the queries' that are.
- A query of the split with no candidates retrieves nothing (it scores 0, counted and named), as a
  retriever that found nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from irforge.common.allowed_roots import checked
from irforge.common.files import file_sha256
from irforge.data import BeirDataset
from irforge.data.beir import _first_existing
from irforge.data.errors import DataFormatError
from irforge.data.textfile import numbered_lines, regular_input
from irforge.data.types import Query, Run
from irforge.pipeline.latency import LatencyRecorder
from irforge.pipeline.retrievers.base import CorpusTracker
from irforge.ranking import Ranking
from irforge.runs import read_run_file
from irforge.runs.top_ranked import FORMAT as TOP_RANKED, looks_like_top_ranked, read_top_ranked

TOP_RANKED_FILE = "top_ranked.jsonl"
EXAMPLES = 5


@dataclass(frozen=True)
class CandidateSource:
    """A candidates file as read: each query's candidates ranked, and what identifies the file."""
    path: Path
    format: str
    sha256: str
    rankings: dict[str, Ranking]
    producer: str | None = None   # what the run file names as its producer (TREC's tag column)
    layout: str | None = None     # a top_ranked file's: mteb or followir

    def describe(self) -> dict:
        sizes = [len(ranking) for ranking in self.rankings.values()]
        return {"file": str(self.path.resolve()), "sha256": self.sha256, "format": self.format,
                **({"producer": self.producer} if self.producer else {}), **({"layout": self.layout} if self.layout else {}),
                "queries": len(sizes), "candidates": sum(sizes), "most_per_query": max(sizes, default=0)}


def read_candidates(path: str | Path, format: str = "auto") -> CandidateSource:
    """The candidates in `path`: a run file or a top_ranked.jsonl (`format` auto: told by the first line)."""
    path = regular_input(checked(path, "candidates file"), "candidates file")
    if format == "auto":
        _, first = next(numbered_lines(path, "candidates file"))
        format = TOP_RANKED if looks_like_top_ranked(first) else "auto"
    if format == TOP_RANKED:
        top = read_top_ranked(path)
        return CandidateSource(path, format, file_sha256(path), top.rankings(), layout=top.layout)
    given = read_run_file(path, format)
    return CandidateSource(path, given.format, given.sha256, {q: Ranking.of(scores) for q, scores in given.run.items()},
                           producer=given.producer or None)


def dataset_top_ranked(dataset: BeirDataset) -> Path | None:
    """The dataset folder's own top_ranked.jsonl (or .gz), if it has one."""
    return _first_existing(dataset.root / TOP_RANKED_FILE, dataset.root / f"{TOP_RANKED_FILE}.gz")


class CandidatesRetriever:
    name = "candidates"

    def __init__(self, path: str | Path | None = None, format: str = "auto"):
        self.path = Path(path) if path is not None else None
        self.source: CandidateSource | None = read_candidates(path, format) if path is not None else None
        self._missing: list[Query] = []
        self._absent: set[str] = set()
        self._corpus: Path | None = None
        self.latency = LatencyRecorder()   # reading a file takes no time per query: the reranker's stages are timed

    def use_latency(self, recorder: LatencyRecorder) -> None:
        self.latency = recorder

    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        if self.path is None:   # the dataset's own, read for each dataset prepared (a dimension of a collection)
            path = dataset_top_ranked(dataset)
            if path is None:
                raise DataFormatError(dataset.root, f"no {TOP_RANKED_FILE} here: the candidates to rerank are the "
                                                    "collection's own top_ranked file")
            self.source = read_candidates(path, TOP_RANKED)
        absent = {doc_id for ranking in self.source.rankings.values() for doc_id in ranking.doc_ids.tolist()}
        for document in tracker.observe(dataset.corpus()):
            absent.discard(document.doc_id)
        # Refused when a query asks for them (retrieve): one file may serve the dimensions of a collection, each
        # with its own corpus and queries.
        self._absent = absent
        self._corpus = dataset.corpus_path

    def retrieve(self, queries: list[Query], k: int) -> Run:
        if self.source is None:
            raise RuntimeError("prepare() first: it reads the candidates")
        run: Run = {}
        self._missing = []
        absent: set[str] = set()
        for query in queries:
            ranking = self.source.rankings.get(query.query_id)
            if ranking is None or not len(ranking):
                self._missing.append(query)
            else:
                run[query.query_id] = ranking.head(k)
                absent.update(doc_id for doc_id in run[query.query_id].doc_ids.tolist() if doc_id in self._absent)
        if absent:
            shown = ", ".join(repr(doc_id) for doc_id in sorted(absent)[:EXAMPLES])
            raise DataFormatError(self.source.path, f"{len(absent)} candidate documents are not in the corpus {self._corpus} "
                                                    f"(e.g. {shown}): candidates made for another corpus? A reranker "
                                                    "needs every candidate's text")
        return run

    def describe(self) -> dict:
        where = self.source.describe() if self.source else (str(self.path) if self.path else f"the dataset's {TOP_RANKED_FILE}")
        return {"name": self.name, "candidates": where}

    def counts(self) -> dict:
        return {"candidates_queries_missing": len(self._missing),
                "candidates_queries_missing_examples": [q.query_id for q in self._missing[:EXAMPLES]]}
