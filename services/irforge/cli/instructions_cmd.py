"""`irforge eval-instructions`: instruction-following evaluation (InfoSearch, FollowIR, InstructIR)
with the retrievers, endpoints, rerankers and services of `irforge eval`."""

from __future__ import annotations

import argparse
import io
import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from irforge.cli.eval_cmd import UsageError, add_pipeline_arguments, open_pipeline, pipeline_settings, with_resolved_dataset
from irforge.common.output_set import OutputFolderError, OutputSet
from irforge.common.redact import redact_text
from irforge.instructions.collection import open_instruction_collections
from irforge.instructions.job import DEFAULT_INSTRUCTION_MEASURES, InstructionJob, InstructionJobSpec
from irforge.instructions.queries import InstructionTemplate
from irforge.pipeline.latency import latency_lines
from irforge.results import Results

TEMPLATE_HELP = ("how text models (BM25, bi-encoders, rerankers) get query and instruction: a template with {query} "
                 "and {instruction}, e.g. 'Instruct: {instruction}\\nQuery: {query}' (\\n = newline); "
                 "default: query + ' ' + instruction, the InfoSearch/FollowIR convention. Search endpoints always get "
                 "the instruction as its own field")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval-instructions", help="evaluate instruction following (InfoSearch, FollowIR, InstructIR layouts)",
        description="Retrieve every mode of every query (original, instructed, reversely instructed) over the full corpus, "
        "write one TREC run per mode and dimension and OUT/results.json: nDCG per mode against its own qrels, p-MRR, "
        "WISE, SICR (InfoSearch), p-MRR (FollowIR) or Robustness@k (InstructIR). See docs/instructions.md.",
    )
    parser.add_argument("--dataset", type=Path, required=True,
                        help="an instruction-following folder (InfoSearch: qrels_og/ qrels_changed/ qrels_reversed/; FollowIR: "
                             "qrels_og/ qrels_changed/; InstructIR: qrels/ with query ids <base>_<n>), or a folder of "
                             "such folders, one per dimension; or a downloaded dataset's name (irforge datasets list)")
    parser.add_argument("--split", default="test", help="the <split>.tsv of every mode's qrels (default test)")
    parser.add_argument("--out", type=Path, required=True,
                        help="output folder: results.json and one <dimension>.<mode>.trec per dimension and mode")
    parser.add_argument("--instruction-template", metavar="TEMPLATE", help=TEMPLATE_HELP)
    parser.add_argument("--robustness-k", type=int, default=10, help="InstructIR: the k of Robustness@k (default 10)")
    add_pipeline_arguments(parser, DEFAULT_INSTRUCTION_MEASURES)
    parser.set_defaults(handler=run_eval_instructions)

    from irforge.instructions import scifact_build

    builder = subparsers.add_parser(
        "build-instructions", help="build an instruction-following collection from BEIR SciFact, without an LLM",
        description=scifact_build.DESCRIPTION)
    scifact_build.add_arguments(builder)
    builder.set_defaults(handler=lambda args: scifact_build.run(args, "irforge build-instructions"))


def run_eval_instructions(args: argparse.Namespace) -> int:
    try:
        evaluate_instructions(args, sys.stdout)
    except (UsageError, OutputFolderError) as error:
        print(f"irforge eval-instructions: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    return 0


def evaluate_instructions(args: argparse.Namespace, out) -> Results:
    """All of `irforge eval-instructions` but the exit: flags and layout checked before any work,
    OUT written as one set, the table printed on `out` (None: nothing printed)."""
    try:
        args = with_resolved_dataset(args)
        spec = InstructionJobSpec(
            collection=args.dataset, out_dir=args.out, split=args.split, top_k=args.top_k,
            measures=tuple(args.measures or DEFAULT_INSTRUCTION_MEASURES),
            template=InstructionTemplate.from_flag(args.instruction_template),
            drop_identical_ids=not args.keep_identical_ids, robustness_k=args.robustness_k,
        )
        settings = pipeline_settings(args)
    except ValueError as error:
        raise UsageError(str(error)) from None
    collections = open_instruction_collections(args.dataset, args.split)  # a bad folder fails before any model loads
    out = out if out is not None else io.StringIO()
    with ExitStack() as stack:
        retriever, evaluator, mode = open_pipeline(args, settings, stack)
        with OutputSet(args.out) as staging:
            job = InstructionJob(replace(spec, out_dir=staging), retriever, evaluator, mode, collections=collections,
                                 announce=lambda line: print(line, file=sys.stderr, flush=True))
            results = Results(job.run(), folder=Path(args.out))
            print_table(results, out)
    return results


# Printed as the paper tables do: modes' nDCG first, then the instruction-following metrics.
def print_table(results: dict, out) -> None:
    dimensions = results["dimensions"]
    names = list(results["metrics"])
    queries = sum(d["queries"] for d in dimensions.values())
    out.write(f"\n{results['dataset']} · {results['split']} · {results['layout']} layout · "
              f"{results['retriever'].get('name')} · {len(dimensions)} dimension(s), {queries} queries\n")
    columns = [*dimensions, "mean"] if len(dimensions) > 1 else ["value"]
    width = max(len(name) for name in [*names, "measure"])
    widths = [max(len(column), 7) for column in columns]
    out.write(f"{'measure':<{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(columns, widths)) + "\n")
    for name in names:
        cells = [dimensions[d]["metrics"].get(name) for d in dimensions] if len(dimensions) > 1 else []
        cells.append(results["metrics"][name])
        out.write(f"{name:<{width}}  " + "  ".join("—".rjust(w) if v is None else f"{v:>{w}.4f}"
                                                   for v, w in zip(cells, widths)) + "\n")
    if any(name.startswith(("p-MRR", "WISE", "SICR")) for name in names):
        out.write("p-MRR, WISE and SICR are fractions here; papers print them x 100\n")
    timings = results["timings"]
    out.write(f"index {timings['index_s']:.1f}s · retrieve {timings['retrieve_s']:.1f}s · evaluate {timings['evaluate_s']:.1f}s\n")
    for line in latency_lines(results.get("latency")):
        out.write(line + "\n")
    runs = [name for files in results["files"]["runs"].values() for name in files.values()]
    out.write(f"wrote {len(runs)} run files ({runs[0]}, ...) and results.json\n" if len(runs) > 1
              else f"wrote {runs[0]} and results.json\n")
