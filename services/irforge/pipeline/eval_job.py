"""`irforge eval` as a job: ingest (skipping work already done), retrieve, evaluate, write results.

The job talks to a corpus service and an evaluator through their client API, so the same code runs
on the in-process cores (the embedded default) and on remote gRPC servers (`--server`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from irforge.common.files import write_json_atomic
from irforge.common.iterables import chunked
from irforge.common.versions import package_versions
from irforge.corpus.lexical.base import CorpusInfo, CorpusState, Hit, IngestProgress
from irforge.corpus.settings import Bm25Settings
from irforge.data import BeirDataset, write_trec_run
from irforge.data.qrels import check_qrels_references
from irforge.data.types import Document, Qrels, Query, Run
from irforge.evaluator.core import EvaluationOptions, EvaluationResult
from irforge.evaluator.measures import DEFAULT_MEASURES
from irforge.pipeline.progress import ProgressFactory, tqdm_progress

INGEST_BATCH = 500
MAX_REPORTED_ERRORS = 20
RETRIEVERS = ("bm25",)


class CorpusClient(Protocol):
    def create_corpus(self, corpus_id: str, fingerprint: str, settings: Bm25Settings) -> CorpusInfo: ...
    def find_corpus(self, corpus_id: str) -> CorpusInfo | None: ...
    def ingest(self, corpus_id: str, batches) -> Iterator[IngestProgress]: ...
    def batch_search(self, corpus_id: str, queries, k: int) -> Iterator[tuple[str, list[Hit]]]: ...


class EvaluatorClient(Protocol):
    def evaluate(self, qrels: Qrels, run: Run, measures, options: EvaluationOptions) -> EvaluationResult: ...


@dataclass(frozen=True)
class EvalJobSpec:
    dataset: Path
    out_dir: Path
    split: str = "test"
    retriever: str = "bm25"
    top_k: int = 1000
    bm25: Bm25Settings = field(default_factory=Bm25Settings)
    measures: tuple[str, ...] = DEFAULT_MEASURES
    drop_identical_ids: bool = True

    def __post_init__(self):
        if self.retriever not in RETRIEVERS:
            raise ValueError(f"unknown retriever {self.retriever!r}; available: {', '.join(RETRIEVERS)}")
        if self.top_k <= 0:
            raise ValueError(f"--top-k must be positive, got {self.top_k}")


def corpus_id_for(dataset_name: str, fingerprint: str, settings: Bm25Settings) -> str:
    """Same corpus bytes and settings -> same index, on every backend; anything else -> a new one."""
    name = re.sub(r"[^a-z0-9._-]+", "-", dataset_name.lower()).strip("-._") or "corpus"
    return f"{name}-{fingerprint[:16]}-bm25-k1-{settings.k1:g}-b-{settings.b:g}"


def _count_lines(path: Path) -> int | None:
    if path.suffix == ".gz":
        return None  # not worth decompressing twice for a progress bar's total
    with open(path, "rb") as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))


@dataclass
class _IngestOutcome:
    skipped: bool
    documents: int
    failed: int = 0
    errors: list[str] = field(default_factory=list)


class EvalJob:
    def __init__(self, spec: EvalJobSpec, corpus: CorpusClient, evaluator: EvaluatorClient, mode: str,
                 progress: ProgressFactory = tqdm_progress):
        self.spec = spec
        self.corpus = corpus
        self.evaluator = evaluator
        self.mode = mode
        self.progress = progress
        self.timings: dict[str, float] = {}

    def run(self) -> dict:
        started = time.perf_counter()
        spec = self.spec
        dataset = BeirDataset.open(spec.dataset)
        qrels = dataset.qrels(spec.split)
        queries = [q for q in dataset.queries() if q.query_id in qrels]
        judged_docs = {doc_id for judged in qrels.values() for doc_id in judged}

        fingerprint = dataset.corpus_fingerprint()
        corpus_id = corpus_id_for(dataset.name, fingerprint, spec.bm25)
        seen_docs: set[str] = set()
        ingest = self._timed("ingest_s", self._ingest, dataset, corpus_id, fingerprint, judged_docs, seen_docs)
        info = self.corpus.find_corpus(corpus_id)

        known = {q.query_id for q in queries}
        report = check_qrels_references(qrels, known, seen_docs)
        eval_qrels = {q: judged for q, judged in qrels.items() if q in known}

        run = self._timed("retrieve_s", self._retrieve, corpus_id, queries)
        spec.out_dir.mkdir(parents=True, exist_ok=True)
        run_path = write_trec_run(spec.out_dir / "run.trec", run, tag=f"irforge-{spec.retriever}")

        options = EvaluationOptions(drop_identical_ids=spec.drop_identical_ids, complete=True)
        result = self._timed("evaluate_s", self.evaluator.evaluate, eval_qrels, run, list(spec.measures), options)
        self.timings["total_s"] = time.perf_counter() - started

        results = self._results(dataset, fingerprint, corpus_id, info, queries, qrels, report, ingest, result, run_path)
        write_json_atomic(spec.out_dir / "results.json", results)
        return results

    def _timed(self, name: str, step, *args):
        started = time.perf_counter()
        try:
            return step(*args)
        finally:
            self.timings[name] = round(time.perf_counter() - started, 3)

    def _ingest(self, dataset: BeirDataset, corpus_id: str, fingerprint: str, judged_docs: set[str], seen: set[str]) -> _IngestOutcome:
        info = self.corpus.find_corpus(corpus_id)
        if info is not None and info.state == CorpusState.READY:
            # Already indexed from these exact bytes: only note which judged documents exist.
            seen.update(d.doc_id for d in dataset.corpus() if d.doc_id in judged_docs)
            return _IngestOutcome(skipped=True, documents=0)
        self.corpus.create_corpus(corpus_id, fingerprint, self.spec.bm25)
        bar = self.progress(f"indexing {dataset.name}", _count_lines(dataset.corpus_path), "doc")

        def batches() -> Iterator[list[Document]]:
            for batch in chunked(dataset.corpus(), INGEST_BATCH):
                seen.update(d.doc_id for d in batch if d.doc_id in judged_docs)
                yield batch
                bar.update(len(batch))

        outcome = _IngestOutcome(skipped=False, documents=0)
        try:
            for progress in self.corpus.ingest(corpus_id, batches()):
                outcome.documents, outcome.failed = progress.indexed, progress.failed
                room = MAX_REPORTED_ERRORS - len(outcome.errors)
                outcome.errors.extend(f"{e.doc_id}: {e.message}" for e in progress.errors[:max(room, 0)])
        finally:
            bar.close()
        return outcome

    def _retrieve(self, corpus_id: str, queries: list[Query]) -> Run:
        bar = self.progress("retrieving", len(queries), "query")
        run: Run = {}
        try:
            for query_id, hits in self.corpus.batch_search(corpus_id, queries, self.spec.top_k):
                run[query_id] = {hit.doc_id: hit.score for hit in hits}
                bar.update(1)
        finally:
            bar.close()
        return run

    def _results(self, dataset, fingerprint, corpus_id, info, queries, qrels, report, ingest, result: EvaluationResult, run_path) -> dict:
        spec = self.spec
        versions = package_versions(["pytrec_eval-terrier", "bm25s", "PyStemmer", "grpcio", "numpy"])
        versions.update(result.versions)
        return {
            "dataset": dataset.name,
            "split": spec.split,
            "retriever": {
                "name": spec.retriever,
                "backend": info.backend if info else None,
                "top_k": spec.top_k,
                "corpus_id": corpus_id,
                **(info.config if info else {}),
            },
            "metrics": {name: result.aggregate[name] for name in result.measure_names},
            "per_query": {q: result.per_query[q] for q in sorted(result.per_query)},
            "evaluation": {
                "measures": list(spec.measures),
                "options": result.options.as_dict(),
                "tie_rule": "score descending, then document id descending (trec_eval)",
                "identical_ids": "dropped" if result.options.drop_identical_ids else "kept",
                "identical_ids_dropped": result.identical_ids_dropped,
                "queries_evaluated": result.queries_evaluated,
                "note": "queries of the split = distinct query ids of the split's qrels found in queries.jsonl; "
                        "a query with no retrieved document scores 0",
            },
            "data": {
                "path": str(dataset.root.resolve()),
                "corpus_fingerprint_sha256": fingerprint,
                "documents_in_index": info.document_count if info else None,
                "queries_in_split": len(queries),
                "qrels_judgements": sum(len(j) for j in qrels.values()),
                "qrels_problems": report.as_dict(),
            },
            "counts": {
                "documents_ingested": ingest.documents,
                "ingest_skipped": ingest.skipped,
                "documents_failed": ingest.failed,
                "ingest_errors": ingest.errors,
                "queries_retrieved": len(queries),
            },
            "timings": self.timings,
            "versions": versions,
            "mode": self.mode,
            "files": {"run": run_path.name},
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
