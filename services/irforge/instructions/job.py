"""`irforge eval-instructions` as a job: for every dimension of an instruction-following folder,
prepare the retriever's index over its corpus, retrieve every mode of every query over the FULL
corpus (or rerank its given candidates, FollowIR's protocol: the retriever is then a reranker over
irforge.pipeline.retrievers.candidates), write one TREC run per mode, evaluate each mode against its own qrels (the evaluator, as
`irforge eval` does), and compute the instruction-following metrics from the same runs.

Like EvalJob, it takes a retriever and an evaluator client, so it runs in-process, on remote
services and inside an orchestrator job alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from irforge.common.files import write_json_atomic
from irforge.common.versions import package_versions
from irforge.data import write_trec_run
from irforge.data.qrels import check_qrels_references
from irforge.data.types import Qrels, Run
from irforge.evaluator.core import EvaluationOptions
from irforge.evaluator.measures import parse_measures
from irforge.instructions import metrics as if_metrics
from irforge.instructions.collection import InstructionCollection, open_instruction_collections
from irforge.instructions.queries import InstructionTemplate, mode_queries
from irforge.pipeline.eval_job import VERSIONED_PACKAGES, EvaluatorClient
from irforge.pipeline.latency import latency_of
from irforge.pipeline.retrievers import CorpusTracker, Retriever
from irforge.pipeline.retrievers.candidates import CandidatesRetriever

DEFAULT_INSTRUCTION_MEASURES = ("nDCG@10",)
DEFINITIONS = {
    "modes": "og = the query alone (or with its original instruction), changed = instructed, "
             "reversed = reversely instructed; every mode retrieved over the full corpus, or its candidates reranked "
             "(evaluation.first_stage)",
    "rank_of_a_missing_document": "length of the returned list + 1, score 0",
    "gold_documents": "relevant (label >= 1) in both the og and the changed qrels",
    "p-MRR": "FollowIR: documents judged in og whose changed label differs (missing = 0); per document "
             "n/o - 1 if it moved up (o > n), else 1 - o/n; mean per query, then over queries",
    "p-MRR[InfoSearch]": "as p-MRR over the documents relevant in og and not relevant in changed",
    "WISE": "InfoSearch's paper definition, K = 20, N = documents relevant in og; mean per query",
    "SICR": "every gold document counts (the released InfoSearch code counts only a query's last one)",
    "Robustness@k": "per base query (id before the last '_'), the minimum nDCG@k over its instruction "
                    "variants; mean over base queries (InstructIR)",
    "averaging": "per query, then over the queries of a dimension, then over dimensions (InfoSearch's tables)",
    "scale": "fractions; papers print p-MRR, WISE and SICR x 100",
}


@dataclass(frozen=True)
class InstructionJobSpec:
    collection: Path
    out_dir: Path
    split: str = "test"
    top_k: int = 1000
    measures: tuple[str, ...] = DEFAULT_INSTRUCTION_MEASURES
    template: InstructionTemplate = field(default_factory=InstructionTemplate)
    drop_identical_ids: bool = True
    robustness_k: int = 10
    config: dict | None = None   # the whole pipeline configuration (irforge.config), recorded as results.json's `config`

    def __post_init__(self):
        if self.top_k <= 0:
            raise ValueError(f"--top-k must be positive, got {self.top_k}")
        if self.robustness_k <= 0:
            raise ValueError(f"--robustness-k must be positive, got {self.robustness_k}")
        parse_measures(list(self.measures))


def mode_measure(measure: str, mode: str, modes: tuple[str, ...]) -> str:
    """`nDCG@10[og]` when a collection has several modes; the plain name when it has one (InstructIR)."""
    return measure if len(modes) == 1 else f"{measure}[{mode}]"


def dimension_counts(before: dict, after: dict) -> dict:
    """A retriever's counters for one dimension: its index work as it stands after the dimension's
    prepare, and the query work (queries_*, rerank_*, which add up over a run) as the difference."""
    def per_dimension(key: str) -> bool:
        return key.startswith(("queries_", "rerank_")) and isinstance(after[key], int) and not isinstance(after[key], bool)
    return {key: after[key] - before.get(key, 0) if per_dimension(key) else after[key] for key in after}


def first_stage(retriever) -> str:
    """How each mode's documents were found, as results.json's evaluation.first_stage says it."""
    stage = getattr(retriever, "first_stage", None)
    if not isinstance(stage, CandidatesRetriever):
        return "every mode retrieved over the full corpus"
    given = "the collection's own top_ranked.jsonl" if stage.path is None else f"--candidates {stage.path}"
    return (f"every mode reranks each query's candidates from {given} (FollowIR's protocol): the same candidates in "
            "every mode, reranked with that mode's text; a query without candidates retrieves nothing")


def without_identical_ids(run: Run) -> Run:
    return {query_id: {doc: score for doc, score in docs.items() if doc != query_id} for query_id, docs in run.items()}


class InstructionJob:
    def __init__(self, spec: InstructionJobSpec, retriever: Retriever, evaluator: EvaluatorClient, mode: str,
                 announce: Callable[[str], None] = lambda line: None,
                 collections: list[InstructionCollection] | None = None):
        self.spec = spec
        self.retriever = retriever
        self.evaluator = evaluator
        self.mode = mode
        self.announce = announce  # one line per dimension and mode, so a long run says where it is
        self.collections = collections  # already opened (the command checks the folder before loading models)
        self.timings: dict[str, float] = {"index_s": 0.0, "retrieve_s": 0.0, "evaluate_s": 0.0}

    def run(self) -> dict:
        """Evaluate and write OUT/results.json (the run files are written on the way)."""
        results = self.evaluate()
        write_json_atomic(self.spec.out_dir / "results.json", results)
        return results

    def evaluate(self) -> dict:
        started = time.perf_counter()
        collections = self.collections or open_instruction_collections(self.spec.collection, self.spec.split)
        dimensions = {collection.dimension: self._dimension(collection) for collection in collections}
        self.timings["total_s"] = round(time.perf_counter() - started, 3)
        return self._results(collections, dimensions)

    def _timed(self, name: str, step, *args):
        started = time.perf_counter()
        try:
            return step(*args)
        finally:
            self.timings[name] = round(self.timings[name] + time.perf_counter() - started, 3)

    # -- one dimension ----------------------------------------------------------------------------
    def _dimension(self, collection: InstructionCollection) -> dict:
        spec = self.spec
        qrels = collection.qrels()
        queries = collection.queries()
        known = [query.query_id for query in queries]
        dataset = collection.dataset
        fingerprint = dataset.corpus_fingerprint()
        tracker = CorpusTracker(judged={doc for mode_qrels in qrels.values() for judged in mode_qrels.values() for doc in judged})
        self._timed("index_s", self.retriever.prepare, dataset, fingerprint, tracker)
        if not tracker.streamed:  # every index was reused: only note which judged documents exist
            for _ in tracker.observe(dataset.corpus()):
                pass
        measures = list(spec.measures)
        robustness_measure = f"nDCG@{spec.robustness_k}"
        if collection.layout == "instructir" and robustness_measure not in measures:
            measures.append(robustness_measure)
        options = EvaluationOptions(drop_identical_ids=spec.drop_identical_ids, complete=True)
        per_query: dict[str, dict[str, float]] = {query_id: {} for query_id in known}
        aggregate: dict[str, float] = {}
        runs: dict[str, Run] = {}
        files: dict[str, str] = {}
        problems = {}
        before = self.retriever.counts()  # query counters add up over the run: this dimension's are the difference
        for number, mode in enumerate(collection.modes, start=1):
            self.announce(f"{collection.dimension}: mode {mode} ({number}/{len(collection.modes)}), {len(queries)} queries")
            run = self._timed("retrieve_s", self.retriever.retrieve, mode_queries(queries, mode, spec.template), spec.top_k)
            runs[mode] = run
            name = f"{collection.dimension}.{mode}.trec"
            write_trec_run(spec.out_dir / name, run, tag=f"irforge-{self.retriever.name}")
            files[mode] = name
            mode_qrels: Qrels = {q: qrels[mode][q] for q in known if q in qrels[mode]}
            problems[mode] = check_qrels_references(qrels[mode], known, tracker.seen).as_dict()
            result = self._timed("evaluate_s", self.evaluator.evaluate, mode_qrels, run, measures, options)
            for measure in result.measure_names:
                label = mode_measure(measure, mode, collection.modes)
                aggregate[label] = result.aggregate[measure]
                for query_id, values in result.per_query.items():
                    per_query.setdefault(query_id, {})[label] = values[measure]

        described = self.retriever.describe()  # after this dimension's calls: endpoint counters, modes learned
        metric_runs = without_identical_ids(runs) if spec.drop_identical_ids else runs
        following = if_metrics.instruction_metrics(qrels, metric_runs, queries=known) if len(collection.modes) > 1 else {}
        if collection.layout == "instructir":
            ndcg = {q: values[robustness_measure] for q, values in per_query.items() if robustness_measure in values}
            groups = {query.query_id: query.group for query in queries}
            following[f"Robustness@{spec.robustness_k}"] = if_metrics.robustness_at_k(ndcg, group_of=groups.__getitem__)
        for name, values in following.items():
            mean = if_metrics.mean_of(values)
            if mean is not None:
                aggregate[name] = mean
            if not name.startswith("Robustness@"):   # robustness is per base query, not per query
                for query_id, value in values.items():
                    per_query.setdefault(query_id, {})[name] = value
        return {
            "layout": collection.layout,
            "modes": list(collection.modes),
            "metrics": aggregate,
            "per_query": per_query,
            "robustness_per_base_query": following.get(f"Robustness@{spec.robustness_k}", {}),
            "queries": len(queries),
            "queries_with_value": {name: len(values) for name, values in following.items()},
            "files": files,
            "retriever": described,
            "counts": {**dimension_counts(before, self.retriever.counts()), "documents_failed": tracker.failed,
                       "document_errors": tracker.errors},
            "data": {
                "path": str(collection.root.resolve()),
                "corpus_fingerprint_sha256": fingerprint,
                "judgements": {mode: sum(len(j) for j in qrels[mode].values()) for mode in collection.modes},
                "qrels_problems": problems,
                "collection_problems": collection.problems(),
                "top_ranked": str(collection.top_ranked_path) if collection.top_ranked_path else None,
                "top_ranked_used": _reranks_own_candidates(self.retriever),
            },
        }

    # -- the record -------------------------------------------------------------------------------
    def _results(self, collections: list[InstructionCollection], dimensions: dict[str, dict]) -> dict:
        spec = self.spec
        names: list[str] = []
        for dimension in dimensions.values():
            names += [name for name in dimension["metrics"] if name not in names]
        # InfoSearch averages each metric over dimensions; a dimension lacking a metric is left out of its mean.
        metrics = {}
        for name in names:
            values = [d["metrics"][name] for d in dimensions.values() if name in d["metrics"]]
            metrics[name] = sum(values) / len(values)
        several = len(dimensions) > 1
        per_query = {(f"{dim}/{query_id}" if several else query_id): values
                     for dim, dimension in dimensions.items() for query_id, values in sorted(dimension["per_query"].items())}
        first = next(iter(dimensions.values()))
        versions = package_versions(VERSIONED_PACKAGES)
        return {
            "kind": "instructions",
            "dataset": Path(spec.collection).resolve().name,
            "split": spec.split,
            "layout": collections[0].layout,
            "retriever": {**first["retriever"], "top_k": spec.top_k,
                          "instruction": {"text_models_see": spec.template.describe(),
                                          "search_endpoints_get": "query and instruction as separate fields",
                                          "rerankers_see": "the composed text (query with its instruction)"}},
            **({"config": spec.config} if spec.config is not None else {}),
            "metrics": metrics,
            "per_query": per_query,
            "per_query_keys": "dimension/query id" if several else "query id",
            "dimensions": {dim: {key: value for key, value in d.items() if key != "per_query"} for dim, d in dimensions.items()},
            "evaluation": {
                "measures": list(spec.measures),
                "options": EvaluationOptions(drop_identical_ids=spec.drop_identical_ids, complete=True).as_dict(),
                "tie_rule": "score descending, then document id descending (trec_eval)",
                "identical_ids": "dropped" if spec.drop_identical_ids else "kept",
                "first_stage": first_stage(self.retriever),
                "definitions": DEFINITIONS,
            },
            "timings": self.timings,
            "latency": latency_of(self.retriever),
            "versions": versions,
            "mode": self.mode,
            "files": {"runs": {dim: d["files"] for dim, d in dimensions.items()}},
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }


def _reranks_own_candidates(retriever) -> bool:
    stage = getattr(retriever, "first_stage", None)
    return isinstance(stage, CandidatesRetriever) and stage.path is None


def run_files(results: dict) -> list[str]:
    """The run files an instruction results.json names (they sit beside it)."""
    return [name for files in results.get("files", {}).get("runs", {}).values() for name in files.values()]
