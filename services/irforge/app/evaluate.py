"""The evaluation use cases: `irforge eval` (a BEIR collection) and `irforge eval-instructions`
(instruction following), from a PipelineConfig through the one builder to the one Results.

Everything is checked before any work (UsageError): the configuration, the measures, the
judge, OUT writable with the stores outside it. OUT is written as one set: a kill at any moment
leaves the earlier set or this one, never results of one beside a run of the other.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from irforge.app.errors import UsageError
from irforge.app.holes import JudgeChoice, fill_holes_after_eval
from irforge.builder.pipeline import PipelineBuilder
from irforge.common.output_set import OutputSet, check_output_folder, check_outside
from irforge.config import PipelineConfig, recorded, validate
from irforge.datasets import resolve_dataset
from irforge.evaluator.measures import parse_measures
from irforge.pipeline.eval_job import EvalJob, EvalJobSpec, mostly_empty
from irforge.results import Results

EXIT_MOSTLY_EMPTY = 3   # results are written, but more than half the queries retrieved nothing


def empty_run_report(results) -> tuple[list[str], bool]:
    """(lines for the printed summary about what analysed or retrieved to nothing; whether more
    than half the queries retrieved nothing, which fails the command: an nDCG of 0.0 with exit 0
    reads as a measurement when it is a failure of analysis)."""
    counts = results.get("counts", {})
    lines = []
    for key, what in (("documents_without_terms", "documents index to no term"),
                      ("queries_without_terms", "queries analyse to no term"),
                      ("queries_without_results", "queries retrieved nothing")):
        if counts.get(key):
            examples = counts.get(f"{key}_examples") or []
            shown = "; ".join(e if isinstance(e, str) else f"{e['query_id']}: {e['text'][:60]!r}" for e in examples[:3])
            lines.append(f"warning: {counts[key]} {what} (e.g. {shown})")
    if counts.get("language_warning"):
        lines.append(f"warning: {counts['language_warning']}")
    reason = mostly_empty(results)
    if reason:
        lines.append(f"error: {reason}")
    return lines, bool(reason)


def checked(config: PipelineConfig, out: str | Path, use: str = "eval") -> PipelineConfig:
    """The configuration validated for `use`, its dataset name resolved to its folder, and OUT
    found writable with the stores outside it: before any work (UsageError otherwise)."""
    try:
        config = dataclasses.replace(config, dataset=str(resolve_dataset(config.dataset)) if config.dataset else "")
        if config.given.runs:   # recorded as a full path: results.json says which file was scored wherever it is read
            config = dataclasses.replace(config, given=dataclasses.replace(
                config.given, runs=tuple(str(Path(run).absolute()) for run in config.given.runs)))
        validate(config, use)
        parse_measures(list(measures_of(config, use)))
        if config.holes.depth is not None:
            judge_choice(config).check()   # a bad --judge fails before the evaluation, not after it
        check_output_folder(out)
        stores = config.stores
        check_outside(out, {"--dataset": config.dataset, "--index-dir": stores.index_dir, "--vector-dir": stores.vector_dir,
                            "--embedding-cache": stores.embedding_cache, "--store": config.holes.store})
    except ValueError as error:
        raise UsageError(str(error)) from None
    return config


def measures_of(config: PipelineConfig, use: str = "eval") -> tuple[str, ...]:
    return config.measures(instructions=use == "eval-instructions")


def judge_choice(config: PipelineConfig) -> JudgeChoice:
    holes = config.holes
    return JudgeChoice(judge=holes.judge, store=holes.store, thresholds=holes.thresholds, relevant_from=holes.relevant_from,
                       flagged=holes.flagged, second_judge=holes.second_judge)


def open_pipeline(config: PipelineConfig, stack: ExitStack, collections=None):
    """(retriever, evaluator, mode) for a checked configuration (`collections`: instruction-following
    ones, whose own candidates a reranker may rerank); what only a file can tell (an endpoint spec's
    kind, a collection's top_ranked.jsonl) is a UsageError here, before any work."""
    try:
        builder = PipelineBuilder(config, stack)
        if config.evaluation.sample is not None and builder.search_endpoint:
            raise UsageError(f"--sample {config.evaluation.sample} does not apply here: a search --endpoint searches "
                             "its own index of the whole corpus, not the sample's documents")
        retriever = builder.retriever() if collections is None else builder.instruction_retriever(collections)
        return retriever, builder.evaluator, builder.mode()
    except ValueError as error:
        raise UsageError(str(error)) from None


def evaluate(config: PipelineConfig, out: str | Path) -> Results:
    """Index, retrieve and evaluate as `irforge eval` does; OUT gets run.trec and results.json (with
    `config`: the configuration whole) and, with holes.depth, the judged layer; returns the results
    (`holes` in them when holes were filled: irforge.judge.holes.not_all_judged says if some failed)."""
    out = Path(out)
    config = checked(config, out, "eval")
    with ExitStack() as stack:
        dataset, sample = sampled(config, stack)
        retriever, evaluator, mode = open_pipeline(config, stack)
        with OutputSet(out) as staging:
            spec = EvalJobSpec(dataset=dataset, out_dir=staging, split=config.split, top_k=config.top_k,
                               measures=measures_of(config), drop_identical_ids=not config.evaluation.keep_identical_ids,
                               config=recorded(config), sample=sample)
            results = Results(EvalJob(spec, retriever, evaluator, mode).run(), folder=out)
            if config.holes.depth is not None:
                fill_holes_after_eval(judge_choice(config), config.holes.depth, spec, results,
                                      run_name=str(out / results["files"]["run"]))
    return results


def sampled(config: PipelineConfig, stack: ExitStack) -> tuple[Path, dict | None]:
    """(the folder to evaluate, results.json's `sample`): the dataset's own folder, or with
    --sample N a seeded sample of it written to a temporary folder removed when `stack` closes."""
    if config.evaluation.sample is None:
        return Path(config.dataset), None
    from irforge.data import BeirDataset
    from irforge.data.sample import write_sample

    temporary = Path(tempfile.mkdtemp(prefix="irforge-sample-"))
    stack.callback(shutil.rmtree, temporary, ignore_errors=True)
    try:
        drawn = write_sample(BeirDataset.open(config.dataset), config.split, config.evaluation.sample,
                             config.evaluation.sample_seed, temporary)
    except ValueError as error:   # SampleError: a sample this collection cannot give
        raise UsageError(str(error)) from None
    print(f"irforge eval: {drawn.record['note']}", file=sys.stderr, flush=True)
    return drawn.folder, drawn.record


def evaluate_instructions(config: PipelineConfig, out: str | Path) -> Results:
    """Instruction-following evaluation as `irforge eval-instructions`: every mode of every query
    retrieved over the full corpus (or, with a reranker, the given or the collection's own
    candidates reranked: FollowIR's protocol), one run per mode and dimension, results.json (with `config`)."""
    from irforge.instructions.collection import open_instruction_collections
    from irforge.instructions.job import InstructionJob, InstructionJobSpec
    from irforge.instructions.queries import InstructionTemplate

    out = Path(out)
    config = checked(config, out, "eval-instructions")
    spec = InstructionJobSpec(collection=Path(config.dataset), out_dir=out, split=config.split, top_k=config.top_k,
                              measures=measures_of(config, "eval-instructions"),
                              template=InstructionTemplate(config.instructions.template),
                              drop_identical_ids=not config.evaluation.keep_identical_ids,
                              robustness_k=config.instructions.robustness_k, config=recorded(config))
    collections = open_instruction_collections(config.dataset, config.split)  # a bad folder fails before any model loads
    with ExitStack() as stack:
        retriever, evaluator, mode = open_pipeline(config, stack, collections)
        with OutputSet(out) as staging:
            job = InstructionJob(dataclasses.replace(spec, out_dir=staging), retriever, evaluator, mode,
                                 collections=collections, announce=lambda line: print(line, file=sys.stderr, flush=True))
            return Results(job.run(), folder=out)
