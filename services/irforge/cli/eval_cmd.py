"""`irforge eval`: the main job — index a BEIR collection, retrieve for its split, evaluate."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path

from irforge.corpus.lexical import BACKENDS, make_backend
from irforge.corpus.core import CorpusService
from irforge.corpus.settings import Bm25Settings
from irforge.evaluator.core import Evaluator
from irforge.evaluator.measures import DEFAULT_MEASURES, parse_measures
from irforge.pipeline.eval_job import RETRIEVERS, EvalJob, EvalJobSpec


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval", help="evaluate a retriever on a BEIR collection",
        description="Index the corpus (skipping work already done), retrieve for every query of the split, "
        "write OUT/run.trec and OUT/results.json, and print the metric table.",
    )
    parser.add_argument("--dataset", type=Path, required=True, help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    parser.add_argument("--retriever", choices=RETRIEVERS, default="bm25")
    parser.add_argument("--split", default="test")
    parser.add_argument("--top-k", type=int, default=1000, help="documents retrieved per query (default 1000)")
    parser.add_argument("--out", type=Path, required=True, help="output folder for run.trec and results.json")
    parser.add_argument("--backend", choices=BACKENDS, default="embedded", help="lexical backend when running in-process")
    parser.add_argument("--index-dir", type=Path, help="embedded indexes (default $IRFORGE_INDEX_DIR or the user data dir)")
    parser.add_argument("--elasticsearch-url", help="Elasticsearch URL (default $IRFORGE_ELASTICSEARCH_URL)")
    parser.add_argument("--k1", type=float, default=Bm25Settings.k1, help=f"BM25 k1 (default {Bm25Settings.k1})")
    parser.add_argument("--b", type=float, default=Bm25Settings.b, help=f"BM25 b (default {Bm25Settings.b})")
    parser.add_argument("-m", "--measure", dest="measures", action="append", metavar="MEASURE",
                        help=f"measure to report (repeatable; default {' '.join(DEFAULT_MEASURES)})")
    parser.add_argument("--keep-identical-ids", action="store_true",
                        help="keep retrieved documents whose id equals the query id (BEIR drops them; default: drop)")
    parser.add_argument("--server", metavar="HOST:PORT", help="use running irforge services (corpus + evaluator) at this address")
    parser.add_argument("--corpus-server", metavar="HOST:PORT", help="corpus service address (overrides --server)")
    parser.add_argument("--evaluator-server", metavar="HOST:PORT", help="evaluator service address (overrides --server)")
    parser.set_defaults(handler=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    try:
        spec = EvalJobSpec(
            dataset=args.dataset, out_dir=args.out, split=args.split, retriever=args.retriever, top_k=args.top_k,
            bm25=Bm25Settings(k1=args.k1, b=args.b), measures=tuple(args.measures or DEFAULT_MEASURES),
            drop_identical_ids=not args.keep_identical_ids,
        )
        parse_measures(list(spec.measures))  # fail before any indexing work
    except ValueError as error:
        print(f"irforge eval: error: {error}", file=sys.stderr)
        return 2
    with ExitStack() as stack:
        corpus_address = args.corpus_server or args.server
        evaluator_address = args.evaluator_server or args.server
        if corpus_address:
            from irforge.corpus.client import RemoteCorpus

            corpus = RemoteCorpus(corpus_address)
        else:
            corpus = CorpusService(make_backend(args.backend, index_dir=args.index_dir, elasticsearch_url=args.elasticsearch_url))
        stack.callback(corpus.close)
        if evaluator_address:
            from irforge.evaluator.client import RemoteEvaluator

            evaluator = RemoteEvaluator(evaluator_address)
            stack.callback(evaluator.close)
        else:
            evaluator = Evaluator()
        mode = "in-process" if not (corpus_address or evaluator_address) else f"corpus={corpus_address or 'in-process'} evaluator={evaluator_address or 'in-process'}"
        results = EvalJob(spec, corpus, evaluator, mode).run()
    print_table(results, sys.stdout)
    return 0


def print_table(results: dict, out) -> None:
    retriever = results["retriever"]
    settings = ", ".join(f"{key}={retriever[key]}" for key in ("k1", "b") if key in retriever)
    evaluation = results["evaluation"]
    out.write(
        f"\n{results['dataset']} · {results['split']} · {retriever['name']} ({retriever['backend']}"
        f"{', ' + settings if settings else ''}) · {evaluation['queries_evaluated']} queries\n"
    )
    width = max(len(name) for name in results["metrics"])
    out.write(f"{'measure':<{width}}  value\n")
    for name, value in results["metrics"].items():
        out.write(f"{name:<{width}}  {value:.4f}\n")
    problems = results["data"]["qrels_problems"]
    if problems["unknown_queries"] or problems["unknown_documents"]:
        out.write(f"qrels problems: {problems['unknown_queries']} unknown queries, {problems['unknown_documents']} unknown documents\n")
    if results["counts"]["documents_failed"]:
        out.write(f"documents that failed to index: {results['counts']['documents_failed']} (see results.json)\n")
    timings = results["timings"]
    out.write(
        f"ingest {timings['ingest_s']:.1f}s{' (index reused)' if results['counts']['ingest_skipped'] else ''} · "
        f"retrieve {timings['retrieve_s']:.1f}s · evaluate {timings['evaluate_s']:.1f}s\n"
    )
    out.write(f"wrote {results['files']['run']} and results.json\n")
