"""`irforge eval` as a job: prepare the retriever's index (skipping work already done), retrieve
for every query of the split, evaluate, write run.trec and results.json.

The job talks to services through their client API (a retriever holds corpus/encoder clients), so
the same code runs on in-process cores (the embedded default) and on remote gRPC servers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from irforge.common.files import write_json_atomic
from irforge.common.versions import package_versions
from irforge.data import BeirDataset, write_trec_run
from irforge.data.qrels import check_qrels_references, qrels_fingerprint
from irforge.data.types import Qrels, Query, Run
from irforge.evaluator.core import EvaluationOptions, EvaluationResult
from irforge.evaluator.measures import DEFAULT_MEASURES
from irforge.pipeline.latency import latency_of
from irforge.pipeline.retrievers import CorpusTracker, Retriever

VERSIONED_PACKAGES = ["pytrec_eval-terrier", "bm25s", "PyStemmer", "grpcio", "numpy", "sentence-transformers",
                      "transformers", "torch", "qdrant-edge-py", "qdrant-client", "ray"]


class EvaluatorClient(Protocol):
    def evaluate(self, qrels: Qrels, run: Run, measures, options: EvaluationOptions) -> EvaluationResult: ...


@dataclass(frozen=True)
class EvalJobSpec:
    dataset: Path
    out_dir: Path
    split: str = "test"
    top_k: int = 1000
    measures: tuple[str, ...] = DEFAULT_MEASURES
    drop_identical_ids: bool = True
    config: dict | None = None   # the whole pipeline configuration (irforge.config), recorded as results.json's `config`
    sample: dict | None = None   # `dataset` is a sample of this collection (irforge.data.sample): results.json's `sample`

    def __post_init__(self):
        if self.top_k <= 0:
            raise ValueError(f"--top-k must be positive, got {self.top_k}")


def split_judgements(dataset: BeirDataset, split: str) -> tuple[Qrels, list[Query], Qrels]:
    """(the split's qrels, its queries found in queries.jsonl, the judgements scored: those of
    the queries found). `irforge bench` fingerprints the last to decide whether earlier results
    still stand, so it must be exactly what EvalJob scores against."""
    qrels = dataset.qrels(split)
    queries = [q for q in dataset.queries() if q.query_id in qrels]
    known = {q.query_id for q in queries}
    return qrels, queries, {q: judged for q, judged in qrels.items() if q in known}


class EvalJob:
    def __init__(self, spec: EvalJobSpec, retriever: Retriever, evaluator: EvaluatorClient, mode: str):
        self.spec = spec
        self.retriever = retriever
        self.evaluator = evaluator
        self.mode = mode
        self.timings: dict[str, float] = {}

    def run(self) -> dict:
        """Evaluate and write OUT/results.json (run.trec is written on the way)."""
        results = self.evaluate()
        write_json_atomic(self.spec.out_dir / "results.json", results)
        return results

    def evaluate(self) -> dict:
        """Everything run() does but write results.json: for callers that add to the record
        first (the orchestrator's job timings and id), so it is written once."""
        started = time.perf_counter()
        spec = self.spec
        dataset = BeirDataset.open(spec.dataset)
        qrels, queries, eval_qrels = split_judgements(dataset, spec.split)
        known = {q.query_id for q in queries}
        fingerprint = dataset.corpus_fingerprint()

        tracker = CorpusTracker(judged={doc_id for judged in qrels.values() for doc_id in judged})
        self._timed("index_s", self.retriever.prepare, dataset, fingerprint, tracker)
        if not tracker.streamed:  # every index was reused: only note which judged documents exist
            for _ in tracker.observe(dataset.corpus()):
                pass
        report = check_qrels_references(qrels, known, tracker.seen)

        run = self._timed("retrieve_s", self.retriever.retrieve, queries, spec.top_k)
        run_path = write_trec_run(spec.out_dir / "run.trec", run, tag=f"irforge-{self.retriever.name}")
        self.unanswered = _unanswered(queries, run)

        options = EvaluationOptions(drop_identical_ids=spec.drop_identical_ids, complete=True)
        result = self._timed("evaluate_s", self.evaluator.evaluate, eval_qrels, run, list(spec.measures), options)
        self.timings["total_s"] = round(time.perf_counter() - started, 3)

        self.qrels_sha256 = qrels_fingerprint(eval_qrels)
        return self._results(dataset, fingerprint, queries, qrels, report, tracker, result, run_path)

    def _timed(self, name: str, step, *args):
        started = time.perf_counter()
        try:
            return step(*args)
        finally:
            self.timings[name] = round(time.perf_counter() - started, 3)

    def _results(self, dataset, fingerprint, queries, qrels, report, tracker, result: EvaluationResult, run_path) -> dict:
        spec = self.spec
        versions = package_versions(VERSIONED_PACKAGES)
        versions.update(result.versions)
        source = _source(dataset.root)
        return {
            # a folder made from ir_datasets is named by its ir_datasets name, not its last folder
            "dataset": source["source"]["name"] if source else dataset.name,
            "split": spec.split,
            "retriever": {**self.retriever.describe(), "top_k": spec.top_k},
            **({"config": spec.config} if spec.config is not None else {}),
            **({"sample": spec.sample} if spec.sample is not None else {}),
            "metrics": {name: result.aggregate[name] for name in result.measure_names},
            **_search_recall(self.retriever),
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
                "path": spec.sample["source"] if spec.sample is not None else str(dataset.root.resolve()),
                # which layout the folder was read in (BEIR, AIR-Bench), found from its file names
                "layout": dataset.layout.name,
                "layout_files": dataset.layout.description,
                **source,
                "corpus_fingerprint_sha256": fingerprint,
                "queries_in_split": len(queries),
                "qrels_judgements": sum(len(j) for j in qrels.values()),
                # the judgements scored against (the split's, for the queries evaluated): compare's identity check
                "qrels_sha256": self.qrels_sha256,
                "qrels_problems": report.as_dict(),
                **_generation(dataset.root),
            },
            "counts": {
                **self.retriever.counts(),
                **self.unanswered,
                "documents_failed": tracker.failed,
                "document_errors": tracker.errors,
                "queries_retrieved": len(queries),
            },
            "timings": self.timings,
            "latency": latency_of(self.retriever),
            "versions": versions,
            "mode": self.mode,
            "files": {"run": run_path.name},
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }


def mostly_empty(results: dict) -> str:
    """Why a run fails although it was evaluated: more than half its queries retrieved nothing
    (an nDCG near 0.0 that reads as a measurement when it is a failure of analysis, a language the
    analysis cannot read, an index of nothing); "" when it does not. `irforge eval` exits
    non-zero with it, `irforge bench` marks the dataset with it, an orchestrator job fails with it."""
    counts = results.get("counts") or {}
    total = counts.get("queries_retrieved") or 0
    empty = counts.get("queries_without_results") or 0
    if not (total > 0 and empty * 2 > total):
        return ""
    corpus = ((results.get("retriever") or {}).get("languages") or {}).get("corpus") or {}
    if not corpus:   # no analysis of ours to blame (a run file, an endpoint that retrieves)
        return f"{empty} of {total} queries retrieved nothing"
    return (f"{empty} of {total} queries retrieved nothing; the corpus was analysed as {corpus.get('language', '?')} "
            f"({corpus.get('how', '?')}): if that is wrong, pass --language CODE")


def _unanswered(queries: list[Query], run: Run) -> dict:
    """The queries the run retrieved nothing for (each scores 0): counted with examples, so a run
    that is mostly empty (a language the analysis cannot read, an index of nothing) is seen."""
    missing = [q for q in queries if not len(run.get(q.query_id) or ())]
    return {"queries_without_results": len(missing),
            "queries_without_results_examples": [{"query_id": q.query_id, "text": q.text[:200]} for q in missing[:5]]}


def _generation(root) -> dict:
    """{"generation": the manifest's key facts} for a collection `irforge generate` wrote, else {}."""
    from irforge.data.generation_manifest import generation_facts

    facts = generation_facts(root)
    return {"generation": facts} if facts is not None else {}


def _source(root) -> dict:
    """{"source": ...} for a folder irforge made from another format (ir_datasets), else {}."""
    from irforge.datasets.irds import source_facts

    facts = source_facts(root)
    return {"source": facts} if facts is not None else {}


def _search_recall(retriever) -> dict:
    """{"search_recall": ...} beside the metrics when the run searched approximately (HNSW), else {}."""
    from irforge.pipeline.retrievers.search_recall import search_recall

    recall = search_recall(retriever.describe())
    return {"search_recall": recall} if recall else {}
