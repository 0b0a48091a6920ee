"""The steps of an evaluation job. Each is a function of a StepContext (the spec, clients of the
services, the job folder, the outputs of the steps before it) returning a JSON-able output the
store commits; runs go to the job folder as atomically written files. So a step that finished is
never redone, and a step that did not finish leaves nothing half-written behind.

The steps reuse the retrievers `irforge eval` uses, over gRPC clients, and the evaluate step runs
EvalJob itself on the stored run: results.json and run.trec are exactly what `irforge eval` writes
(judge_holes then adds `holes`, as `irforge eval --fill-holes` does).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from irforge.common.allowed_roots import checked
from irforge.common.files import atomic_write, write_json_atomic
from irforge.common.output_set import EVAL_SET, OutputSet
from irforge.config import recorded
from irforge.data import BeirDataset
from irforge.data.types import Query, Run
from irforge.orchestrator.context import StepContext
from irforge.orchestrator.spec import JobSpec
from irforge.pipeline.eval_job import EvalJob, EvalJobSpec, mostly_empty
from irforge.pipeline.latency import latency_of, merged_latency
from irforge.pipeline.retrievers import CorpusTracker
from irforge.pipeline.retrievers.bm25 import corpus_id_for
from irforge.pipeline.retrievers.dense import collection_id_for
from irforge.ranking import Ranking
from irforge.results.reading import read_results

INGEST, ENCODE, RETRIEVE, RERANK, JUDGE, EVALUATE = ("ingest_lexical", "encode_vectors", "retrieve", "rerank",
                                                     "judge_holes", "evaluate")
SUITE = "suite"   # a suite job's last step: suite.json and suite.md from its datasets' results
RESULT_FILES = EVAL_SET[:2]   # results.json, run.trec
LAYER_FILES = EVAL_SET[2:]    # qrels.judged.tsv and its provenance: only when holes were filled and judged


def result_files(folder: Path) -> list[str]:
    """The files of a job's result set: results.json and the run(s) it names (and a judged layer);
    a suite's: suite.json, suite.md and each dataset's set under its label."""
    if (folder / "suite.json").exists():
        from irforge.bench.record import SUITE_FILES

        labels = [d["label"] for d in json.loads((folder / "suite.json").read_text(encoding="utf-8"))["datasets"]]
        return [*SUITE_FILES, *(f"{label}/{name}" for label in labels for name in result_files(folder / label))]
    instruction_runs = _instruction_runs(folder)
    if instruction_runs is not None:
        return ["results.json", *instruction_runs]
    return [*RESULT_FILES, *(name for name in LAYER_FILES if (folder / name).exists())]


def _instruction_runs(folder: Path) -> list[str] | None:
    """The run files of an instruction-following results.json (one per dimension and mode), else None."""
    from irforge.instructions.job import run_files

    path = folder / "results.json"
    if not path.exists():
        return None
    results = read_results(path, required=())
    return run_files(results) if results.get("kind") == "instructions" else None


def plan_steps(spec: JobSpec, endpoint_kind: str = "") -> list[str]:
    """The steps a spec needs, in order (endpoint_kind: the kind of spec.endpoint, if any). A
    suite's: each dataset's steps as `<label>/<step>`, then `suite`; each is committed on its own,
    so a restarted job redoes no finished dataset."""
    if spec.is_suite:
        return [f"{m.label}/{step}" for m in spec.datasets for step in plan_steps(spec.member_spec(m), endpoint_kind)] + [SUITE]
    if spec.instructions:
        return [EVALUATE]   # one step: see evaluate_instructions
    steps = []
    if spec.pipeline.given_run:
        pass  # a run file is the system: nothing to index, `retrieve` reads the file
    elif spec.pipeline.rerank.candidates is not None:
        pass  # the candidates are read from their file (the retrieve step): nothing to index
    elif endpoint_kind.startswith("search-"):
        pass  # the team's endpoint retrieves: nothing to index here
    elif endpoint_kind == "openai-embeddings":  # as `irforge eval --endpoint`: the endpoint is the dense encoder
        steps += [INGEST, ENCODE] if spec.pipeline.retriever == "hybrid" else [ENCODE]
    else:
        steps += [INGEST] if spec.pipeline.retriever in ("bm25", "hybrid") else []
        steps += [ENCODE] if spec.pipeline.retriever in ("dense", "hybrid", "sparse") else []
    steps.append(RETRIEVE)
    if spec.has_reranker:
        steps.append(RERANK)
    steps.append(EVALUATE)
    if spec.holes_depth > 0:  # after evaluating, as `irforge eval --fill-holes`: metrics before and after
        steps.append(JUDGE)
    return steps


# -- persisted state --------------------------------------------------------------------------

def tracker_state(tracker: CorpusTracker) -> dict:
    return {"seen": sorted(tracker.seen), "streamed": tracker.streamed, "errors": tracker.errors, "failed": tracker.failed}


def merged_tracker(outputs: dict[str, dict], judged: set[str]) -> CorpusTracker:
    """What every step that streamed the corpus noted, as one tracker."""
    tracker = CorpusTracker(judged=judged)
    for output in outputs.values():
        state = output.get("tracker")
        if state:
            tracker.seen.update(state["seen"])
            tracker.streamed |= state["streamed"]
            tracker.errors.extend(state["errors"])
            tracker.failed += state["failed"]
    return tracker


RUN_FORMAT = "irforge-rankings-1"


def write_run(path: Path, run: Run) -> str:
    """Runs between steps are JSON: floats survive exactly (TREC text is only for the last step).
    Each query's ranking is stored as [doc ids, scores] in rank order, so reading needs no sort."""
    rankings = {}
    for query_id, scores in run.items():
        ranking = Ranking.of(scores)
        rankings[query_id] = [ranking.doc_ids.tolist(), ranking.scores.tolist()]
    with atomic_write(path) as handle:
        json.dump({"format": RUN_FORMAT, "rankings": rankings}, handle)
    return path.name


def read_run(path: Path) -> Run:
    stored = json.loads(path.read_text(encoding="utf-8"))
    if stored.get("format") != RUN_FORMAT:
        return stored  # written before rankings were stored as columns: query id -> {doc id: score}
    return {query_id: Ranking(doc_ids, scores) for query_id, (doc_ids, scores) in stored["rankings"].items()}


class StoredStage:
    """A finished stage seen as a retriever: its stored run, configuration and counts."""

    def __init__(self, output: dict, run: Run, tracker: CorpusTracker | None = None):
        self.name = output["name"]
        self._output = output
        self._run = run
        self._tracker = tracker

    def prepare(self, dataset: BeirDataset, fingerprint: str, tracker: CorpusTracker) -> None:
        if self._tracker is not None:  # what the index-building steps noted while streaming the corpus
            tracker.seen.update(self._tracker.seen)
            tracker.streamed = self._tracker.streamed
            tracker.errors.extend(self._tracker.errors)
            tracker.failed += self._tracker.failed

    def retrieve(self, queries: list[Query], k: int) -> Run:
        return {q.query_id: self._run[q.query_id] for q in queries if q.query_id in self._run}

    def describe(self) -> dict:
        return self._output["describe"]

    def counts(self) -> dict:
        return dict(self._output["counts"])


# -- the steps ----------------------------------------------------------------------------------

def ingest_lexical(ctx: StepContext) -> dict:
    retriever = ctx.lexical()
    corpus_id = corpus_id_for(ctx.dataset.name, ctx.fingerprint, ctx.builder.bm25_settings())
    # Two jobs on the same corpus and settings: the second waits, then finds the index READY. The
    # lock is taken before prepare settles the language (and so the index's own id): one per corpus.
    with ctx.lock(f"bm25:{corpus_id}"):
        tracker = CorpusTracker(judged=ctx.judged)
        retriever.prepare(ctx.dataset, ctx.fingerprint, tracker)
    return {"corpus_id": retriever.corpus_id, "counts": retriever.counts(), "tracker": tracker_state(tracker)}


def encode_vectors(ctx: StepContext) -> dict:
    dense = ctx.dense()   # a SparseRetriever for retriever sparse (or hybrid with sparse)
    collection_id = collection_id_for(ctx.dataset.name, ctx.fingerprint, dense.encoder.identity_key, dense.name)
    # One lock per (corpus, encoder identity): one build of the collection and of its cache rows.
    with ctx.lock(f"{dense.name}:{collection_id}"):
        sharding = ctx.encode_in_shards(dense, collection_id) if ctx.spec.shards > 1 else None
        tracker = CorpusTracker(judged=ctx.judged)
        dense.prepare(ctx.dataset, ctx.fingerprint, tracker)
    return {"collection_id": collection_id, "counts": dense.counts(), "tracker": tracker_state(tracker),
            "sharding": sharding, "latency": latency_of(dense)}


def retrieve(ctx: StepContext) -> dict:
    first = ctx.first_stage()
    # Attach to the indexes the steps before built (found READY: nothing is rebuilt); a search
    # endpoint reads the corpus ids here, so keep what it notes.
    tracker = CorpusTracker(judged=ctx.judged)
    first.prepare(ctx.dataset, ctx.fingerprint, tracker)
    config = ctx.spec.pipeline
    depth = max(config.top_k, config.rerank.depth) if config.has_reranker else config.top_k
    run = first.retrieve(ctx.queries, depth)
    counts = first.counts()
    for step in (INGEST, ENCODE):  # the document work was done (or skipped) by those steps
        counts.update({key: value for key, value in ctx.outputs.get(step, {}).get("counts", {}).items()
                       if not key.startswith("queries_")})
    return {"name": first.name, "describe": first.describe(), "counts": counts, "tracker": tracker_state(tracker),
            "run_file": write_run(ctx.job_dir / "first_stage_run.json", run), "latency": latency_of(first)}


def rerank(ctx: StepContext) -> dict:
    from irforge.pipeline.retrievers.rerank import RerankingRetriever

    stored = ctx.outputs[RETRIEVE]
    first = StoredStage(stored, read_run(ctx.job_dir / stored["run_file"]))
    reranking = RerankingRetriever(first, ctx.reranker(), depth=ctx.spec.pipeline.rerank.depth, progress=ctx.progress)
    reranking.prepare(ctx.dataset, ctx.fingerprint, CorpusTracker(judged=set()))
    run = reranking.retrieve(ctx.queries, ctx.spec.pipeline.top_k)
    return {"name": reranking.name, "describe": reranking.describe(), "counts": reranking.counts(),
            "run_file": write_run(ctx.job_dir / "reranked_run.json", run), "latency": latency_of(reranking)}


def judge_holes(ctx: StepContext) -> dict:
    """As `irforge eval --fill-holes K`: judge the unlabelled documents of each query's top K of
    the evaluated run; the report joins results.json as `holes`, the layer lands beside run.trec."""
    from irforge.judge.holes import (
        HoleFiller,
        HoleSettings,
        join_results,
        write_outputs,
    )

    spec, out_dir = ctx.spec, ctx.results_dir
    final = final_stage_output(ctx)
    config = spec.pipeline
    settings = HoleSettings(depth=config.holes.depth, relevant_from=config.holes.relevant_from, flagged=config.holes.flagged,
                            drop_identical_ids=not config.evaluation.keep_identical_ids, measures=spec.measures)
    judge, where = ctx.judge()
    report, labelled, _ = HoleFiller(judge, settings, ctx.progress).run(
        Path(spec.dataset), read_run(ctx.job_dir / final["run_file"]), spec.split, run_name=str(out_dir / "run.trec"))
    report["store"] = where
    results = read_results(out_dir / "results.json")
    # One new set: results.json with `holes` and the layer it names appear together; run.trec is carried over.
    with OutputSet(out_dir, replaces=("results.json", *LAYER_FILES)) as staging:
        write_outputs(staging, report, labelled, report_name=None)
        join_results(staging, report, results)
    if spec.output:
        copy_results(out_dir, Path(spec.output))
    return {"holes": report["holes"], "judged": report["judged"], "unparsed": report["unparsed"], "failed": report["failed"],
            "metrics_after": report["metrics_after"]}


def step_kind(name: str) -> str:
    """What a step does, without a suite's `<label>/`: `scifact/retrieve` -> `retrieve`."""
    return name.rpartition("/")[2]


def run_step(ctx: StepContext, name: str) -> dict:
    """Run the step called `name`: a suite dataset's step in that dataset's context."""
    label, _, kind = name.rpartition("/")
    return STEPS[kind](ctx.for_member(label) if label else ctx)


def final_metrics(outputs: dict[str, dict]) -> dict:
    """The job record's metrics: the evaluation's, a suite's mean over its datasets."""
    return outputs[SUITE]["mean"] if SUITE in outputs else outputs[EVALUATE]["metrics"]


def job_warnings(outputs: dict[str, dict]) -> tuple[str, ...]:
    """What a job's finished steps could not do although they succeeded, for its record: the same
    cases, in the same words, for which `irforge eval` exits 1."""
    from irforge.judge.holes import not_all_judged

    judged = outputs.get(JUDGE)
    problem = not_all_judged(judged) if judged else ""
    return (f"{JUDGE}: {problem}",) if problem else ()


def job_failure(outputs: dict[str, dict]) -> str:
    """Why a job whose steps all finished failed all the same, "" if it did not: its run (a suite:
    any dataset's) retrieved nothing for more than half the queries, the case in which `irforge
    eval` exits 3 and `irforge bench` marks the dataset. Results are written first, as eval's are."""
    if SUITE in outputs:
        failed = outputs[SUITE].get("failures") or []
        return f"{len(failed)} of the suite's datasets failed: " + "; ".join(failed) if failed else ""
    reason = outputs.get(EVALUATE, {}).get("mostly_empty") or ""
    return f"{EVALUATE}: {reason}" if reason else ""


def final_stage_output(ctx: StepContext) -> dict:
    return ctx.outputs[RERANK] if RERANK in ctx.outputs else ctx.outputs[RETRIEVE]


def evaluate(ctx: StepContext) -> dict:
    if ctx.spec.instructions:
        return evaluate_instructions(ctx)
    final = final_stage_output(ctx)
    stage = StoredStage(final, read_run(ctx.job_dir / final["run_file"]), merged_tracker(ctx.outputs, ctx.judged))
    spec = ctx.spec
    out_dir = ctx.results_dir
    eval_spec = EvalJobSpec(dataset=Path(spec.dataset), out_dir=out_dir, split=spec.split, top_k=spec.pipeline.top_k,
                            measures=spec.measures, drop_identical_ids=not spec.pipeline.evaluation.keep_identical_ids,
                            config=recorded(spec.pipeline))   # recorded whole, as an in-process eval records it
    with OutputSet(out_dir) as staging:  # as `irforge eval` writes OUT: the old set or the new one, never a mix
        results = _evaluate_into(ctx, stage, replace(eval_spec, out_dir=staging))
    if spec.output:
        copy_results(out_dir, Path(spec.output))
    return {"metrics": results["metrics"], "results_dir": str(out_dir), "mostly_empty": mostly_empty(results)}


def _evaluate_into(ctx: StepContext, stage: StoredStage, eval_spec: EvalJobSpec) -> dict:
    job = EvalJob(eval_spec, stage, ctx.evaluator, ctx.mode)
    results = job.evaluate()
    # EvalJob timed only its own evaluation; the job's index and retrieval work ran in earlier steps.
    durations = ctx.durations
    results["timings"] = {
        "index_s": round(durations.get(INGEST, 0.0) + durations.get(ENCODE, 0.0), 3),
        "retrieve_s": round(durations.get(RETRIEVE, 0.0) + durations.get(RERANK, 0.0), 3),
        "evaluate_s": job.timings["evaluate_s"],
        "total_s": round(sum(durations.values()) + job.timings["total_s"], 3),
        "steps_s": {**durations, EVALUATE: job.timings["total_s"]},
    }
    # The stored stage timed nothing: the steps that encoded, retrieved and reranked did.
    results["latency"] = merged_latency([ctx.outputs.get(step, {}).get("latency") for step in (ENCODE, RETRIEVE, RERANK)])
    results["job_id"] = ctx.job_id
    write_json_atomic(eval_spec.out_dir / "results.json", results)
    return results


def evaluate_instructions(ctx: StepContext) -> dict:
    """An instruction-following job in one step, as `irforge eval-instructions` runs it over the
    services: per dimension, index (reused when READY), retrieve every mode, evaluate. A step that
    stops midway is redone whole on resume; the indexes it finished are found READY then."""
    from irforge.instructions.collection import open_instruction_collections
    from irforge.instructions.job import InstructionJob, InstructionJobSpec
    from irforge.instructions.queries import InstructionTemplate

    spec, out_dir = ctx.spec, ctx.results_dir
    config = spec.pipeline
    collections = open_instruction_collections(spec.dataset, spec.split)
    # As `irforge eval-instructions` builds it: reranking the collection's own candidates when it brings them.
    retriever = ctx.instruction_retriever(collections)
    job_spec = InstructionJobSpec(collection=Path(spec.dataset), out_dir=out_dir, split=spec.split, top_k=config.top_k,
                                  measures=spec.measures, template=InstructionTemplate(config.instructions.template),
                                  drop_identical_ids=not config.evaluation.keep_identical_ids,
                                  robustness_k=config.instructions.robustness_k, config=recorded(config))
    # Two jobs on one folder would build the same indexes at once (the corpus service refuses a second writer).
    with ctx.lock(f"instructions:{Path(spec.dataset).resolve()}"), OutputSet(out_dir) as staging:
        job = InstructionJob(replace(job_spec, out_dir=staging), retriever, ctx.evaluator, ctx.mode, collections=collections)
        results = job.evaluate()
        results["job_id"] = ctx.job_id
        write_json_atomic(staging / "results.json", results)
    if spec.output:
        copy_results(out_dir, Path(spec.output))
    return {"metrics": results["metrics"], "results_dir": str(out_dir)}


def suite(ctx: StepContext) -> dict:
    """suite.json and suite.md from the datasets' results, as `irforge bench` writes them (and
    into the spec's output, beside the datasets' folders their evaluate steps copied there)."""
    from irforge.bench.record import EVALUATED, failures, outcome_of, suite_record, write_suite

    spec = ctx.spec
    outcomes = [outcome_of(m.label, m.dataset, m.split, read_results(ctx.results_dir / m.label / "results.json"), EVALUATED)
                for m in spec.datasets]
    record = suite_record(spec.name or "suite", spec.split, list(spec.measures), outcomes)
    record["job_id"] = ctx.job_id
    write_suite(ctx.results_dir, record)
    if spec.output:
        checked(Path(spec.output), "job spec field 'output':")
        write_suite(Path(spec.output), record)
    return {"mean": record["mean"], "results_dir": str(ctx.results_dir), "failures": failures(record)}


def copy_results(source: Path, target: Path) -> None:
    """The job's set into `target` (the spec's output) as one set, like `irforge eval --out`."""
    checked(target, "job spec field 'output':")   # a folder swapped for a link since submission
    with OutputSet(target) as staging:
        for name in result_files(source):
            shutil.copyfile(source / name, staging / name)


STEPS: dict[str, Callable[[StepContext], dict]] = {
    INGEST: ingest_lexical, ENCODE: encode_vectors, RETRIEVE: retrieve, RERANK: rerank, JUDGE: judge_holes,
    EVALUATE: evaluate, SUITE: suite,
}
