"""`irforge eval`: the main job — index a BEIR collection, retrieve for its split, evaluate."""

from __future__ import annotations

import argparse
import io
import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from irforge.cli import build, judge_cmd
from irforge.common.output_set import OutputFolderError, OutputSet, check_output_folder, check_outside
from irforge.common.redact import redact_text
from irforge.corpus.settings import Bm25Settings
from irforge.datasets import resolve_dataset
from irforge.evaluator.measures import DEFAULT_MEASURES, parse_measures
from irforge.pipeline.eval_job import EvalJob, EvalJobSpec
from irforge.pipeline.latency import latency_lines
from irforge.results import Results, describe_retriever
from irforge.pipeline.retrievers import RETRIEVERS


# Where irforge keeps indexes, caches and judgements (and reads the dataset): never inside OUT.
STORES = ("--dataset", "--index-dir", "--vector-dir", "--embedding-cache", "--store")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval", help="evaluate a retriever on a BEIR collection",
        description="Index the corpus (skipping work already done), retrieve for every query of the split, "
        "write OUT/run.trec and OUT/results.json, and print the metric table.",
    )
    parser.add_argument("--dataset", type=Path, required=True,
                        help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), or a downloaded dataset's name, "
                             "e.g. beir/scifact (irforge datasets list)")
    parser.add_argument("--split", default="test", help="the qrels/<split>.tsv to evaluate (default test)")
    parser.add_argument("--out", type=Path, required=True, help="output folder for run.trec and results.json")
    add_pipeline_arguments(parser, DEFAULT_MEASURES)
    parser.add_argument("--fill-holes", type=int, metavar="K",
                        help="after evaluating, judge the unlabelled documents of each query's top K (see judge-holes): "
                             "results.json gets `holes`, OUT gets qrels.judged.tsv")
    judge_cmd.add_judge_arguments(parser)
    parser.set_defaults(handler=run_eval)


def add_pipeline_arguments(parser, default_measures) -> None:
    """The retriever, index, endpoint, reranker and service flags: `irforge eval`'s and
    `irforge eval-instructions`' (one pipeline, one set of flags)."""
    parser.add_argument("--retriever", choices=RETRIEVERS, default="bm25",
                        help="bm25 (default), dense (--model), hybrid (bm25 + dense, fused) or sparse (--model: a SparseEncoder, e.g. SPLADE); --endpoint replaces it")
    parser.add_argument("--top-k", type=int, default=1000, help="documents retrieved per query (default 1000)")
    parser.add_argument("-m", "--measure", dest="measures", action="append", metavar="MEASURE",
                        help=f"measure to report (repeatable; default {' '.join(default_measures)})")
    parser.add_argument("--keep-identical-ids", action="store_true",
                        help="keep retrieved documents whose id equals the query id (BEIR drops them; default: drop)")

    lexical = parser.add_argument_group("BM25 (bm25, hybrid)")
    lexical.add_argument("--backend", choices=("embedded", "elasticsearch"), default="embedded", help="lexical backend when in-process")
    lexical.add_argument("--index-dir", type=Path, help="embedded BM25 indexes (default $IRFORGE_INDEX_DIR or the user data dir)")
    lexical.add_argument("--elasticsearch-url",
                         help="Elasticsearch URL for --backend elasticsearch and --vector-backend elasticsearch "
                              "(default $IRFORGE_ELASTICSEARCH_URL)")
    lexical.add_argument("--k1", type=float, default=Bm25Settings.k1, help=f"BM25 k1 (default {Bm25Settings.k1})")
    lexical.add_argument("--b", type=float, default=Bm25Settings.b, help=f"BM25 b (default {Bm25Settings.b})")

    build.add_dense_arguments(parser)
    build.add_endpoint_arguments(parser)

    remote = parser.add_argument_group("running services")
    remote.add_argument("--server", metavar="HOST:PORT", help="use running irforge services (corpus, evaluator, encoder) at this address")
    remote.add_argument("--corpus-server", metavar="HOST:PORT", help="corpus service address (overrides --server)")
    remote.add_argument("--evaluator-server", metavar="HOST:PORT", help="evaluator service address (overrides --server)")
    remote.add_argument("--encoder-server", metavar="HOST:PORT", help="encoder service address (overrides --server)")


class UsageError(ValueError):
    """Bad flags or inputs, found before any work: the command says so and exits 2."""


def run_eval(args: argparse.Namespace) -> int:
    try:
        _, status = evaluate(args, sys.stdout)
    except (UsageError, OutputFolderError) as error:
        print(f"irforge eval: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    return status


def evaluate(args: argparse.Namespace, out) -> tuple[Results, int]:
    """All of `irforge eval` but the exit: check the flags (UsageError before any work), index,
    retrieve, evaluate, write OUT as one set, print the table on `out` (None: print nothing).
    Returns the results as written to OUT/results.json and the exit status (1 when --fill-holes
    left holes unjudged). `irforge.evaluate` calls this too, so the CLI and Python share one path."""
    try:
        args = with_resolved_dataset(args)
        spec = EvalJobSpec(
            dataset=args.dataset, out_dir=args.out, split=args.split, top_k=args.top_k,
            measures=tuple(args.measures or DEFAULT_MEASURES), drop_identical_ids=not args.keep_identical_ids,
        )
        parse_measures(list(spec.measures))  # fail before any indexing work
        fill_holes = getattr(args, "fill_holes", None)   # callers building their own Namespace may omit it
        if fill_holes is not None and fill_holes < 1:
            raise ValueError(f"--fill-holes must be at least 1, got {fill_holes}")
        if fill_holes is not None:
            judge_cmd.check_judge_choice(args)  # a bad --judge fails before the evaluation, not after it
        settings = pipeline_settings(args)
    except ValueError as error:
        raise UsageError(str(error)) from None
    out = out if out is not None else io.StringIO()
    with ExitStack() as stack:
        retriever, evaluator, mode = open_pipeline(args, settings, stack)
        # Everything OUT gets (with --fill-holes, the judged layer too) is written as one set: a
        # kill at any moment leaves the earlier set or this one, never results of one beside a run of the other.
        status = 0
        with OutputSet(args.out) as staging:
            staged = replace(spec, out_dir=staging)
            results = Results(EvalJob(staged, retriever, evaluator, mode).run(), folder=Path(args.out))
            print_table(results, out)
            if fill_holes is not None:
                status = judge_cmd.fill_holes_after_eval(args, staged, results, run_name=str(args.out / results["files"]["run"]),
                                                         out=out)
    return results, status


def with_resolved_dataset(args: argparse.Namespace) -> argparse.Namespace:
    """A copy of args whose --dataset is a folder: a name (beir/scifact) becomes its downloaded copy
    (irforge.datasets.resolve_dataset; DatasetError, a ValueError, when there is none). A copy, so a
    caller's Namespace (irforge.evaluate, bench) keeps what it gave."""
    return argparse.Namespace(**{**vars(args), "dataset": resolve_dataset(args.dataset)})


def pipeline_settings(args: argparse.Namespace) -> build.Settings:
    """The pipeline flags checked and OUT found writable, with the stores outside it: before any
    work, not after the whole run, when the files could not be written (ValueError otherwise)."""
    settings = build.settings_from_args(args)
    check_output_folder(args.out)
    check_outside(args.out, {flag: getattr(args, flag[2:].replace("-", "_"), None) for flag in STORES})
    return settings


def open_pipeline(args: argparse.Namespace, settings: build.Settings, stack: ExitStack):
    """(retriever, evaluator, mode) for the flags; a bad flag combination or endpoint spec is a
    UsageError, raised before any work."""
    try:
        return build.build_pipeline(args, settings, stack)
    except ValueError as error:
        raise UsageError(str(error)) from None


def print_table(results: dict, out) -> None:
    evaluation = results["evaluation"]
    out.write(f"\n{results['dataset']} · {results['split']} · {describe_retriever(results['retriever'])} · "
              f"{evaluation['queries_evaluated']} queries\n")
    width = max(len(name) for name in results["metrics"])
    out.write(f"{'measure':<{width}}  value\n")
    for name, value in results["metrics"].items():
        out.write(f"{name:<{width}}  {value:.4f}\n")
    problems = results["data"]["qrels_problems"]
    if problems["unknown_queries"] or problems["unknown_documents"]:
        out.write(f"qrels problems: {problems['unknown_queries']} unknown queries, {problems['unknown_documents']} unknown documents\n")
    counts = results["counts"]
    if counts["documents_failed"]:
        out.write(f"documents not indexed: {counts['documents_failed']} (see results.json counts.document_errors)\n")
    work = []
    if counts.get("reindexed_because"):
        out.write(f"bm25 index not reused: {counts['reindexed_because']}\n")
    if "documents_ingested" in counts:
        work.append("bm25 index reused (complete: fingerprint and document count match)" if counts["ingest_skipped"]
                    else f"{counts['documents_ingested']} documents indexed")
    if "documents_encoded" in counts:
        work.append("vectors reused" if counts["vectors_skipped"] else
                    f"{counts['documents_encoded']} documents encoded ({counts['documents_reused_from_cache']} from cache)")
    timings = results["timings"]
    out.write(f"{', '.join(work)} · index {timings['index_s']:.1f}s · retrieve {timings['retrieve_s']:.1f}s · "
              f"evaluate {timings['evaluate_s']:.1f}s\n")
    for line in latency_lines(results.get("latency")):  # results written before latency was recorded have none
        out.write(line + "\n")
    out.write(f"wrote {results['files']['run']} and results.json\n")
