"""`irforge qc`: AIR-Bench quality control of a BEIR collection (irforge.judge.qc)."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path

from irforge.cli import build
from irforge.results.render import no_paid_call_note
from irforge.common.redact import redact_text
from irforge.judge.qc.prelabel import Thresholds

DEFAULT_RERANKERS = ("bm25", "dense:{model}")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "qc", help="AIR-Bench quality control: judge labelled positives, hard negatives and likely missing positives",
        description="Recall each query's top documents with the embedding model, re-rank them with every --reranker, "
        "pre-label a document positive when more than half of the rerankers rank it within the threshold, ask the judge, "
        "and write the corrected dataset (BEIR layout) with qc_audit.jsonl and qc_summary.json to --out.",
    )
    parser.add_argument("--dataset", type=Path, required=True, help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    parser.add_argument("--split", default="test", help="the qrels/<split>.tsv to check (default test)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the corrected dataset (written whole or not at all)")
    parser.add_argument("--recall-depth", type=int, default=1000, help="documents recalled per query (default 1000)")
    parser.add_argument("--reranker", dest="rerankers", action="append", metavar="SPEC",
                        help="repeatable: bm25[?k1=..&b=..], dense:MODEL[?max_seq_length=..&query_prefix=..], "
                             "dense:grpc://HOST:PORT, cross-encoder:MODEL, endpoint:SPEC.yaml, listwise:URL?model=NAME "
                             "(default: bm25 and dense:<--model>)")
    parser.add_argument("--threshold", type=int, default=Thresholds.default, help="rank within which a reranker votes positive (default 10)")
    parser.add_argument("--hard-negative-threshold", type=int, default=Thresholds.hard_negative,
                        help="the same for generated hard negatives (default 20)")
    parser.add_argument("--hard-negatives", type=Path, metavar="FILE", help="generated hard negatives: qrels-style TSV or .jsonl (see docs/qc.md)")
    parser.add_argument("--relevant-from", type=int, default=2, help="a judged label at or above this is relevant (default 2)")

    judge = parser.add_argument_group("judge")
    judge.add_argument("--judge", default="embedded", help="embedded (default) or a judge spec YAML file (kind: openai-chat)")
    judge.add_argument("--store", type=Path, help="judgement store (default $IRFORGE_JUDGE_STORE or the user data dir)")
    judge.add_argument("--judge-thresholds", type=Path, metavar="FILE", help="embedded judge thresholds (from irforge judge-calibrate)")

    build.add_encoder_arguments(parser)
    build.add_vector_store_arguments(parser)
    stores = parser.add_argument_group("stores and services")
    stores.add_argument("--embedding-cache", type=Path, help="embedding cache file (default $IRFORGE_CACHE_DIR or the user cache dir)")
    stores.add_argument("--index-dir", type=Path, help="embedded BM25 indexes (default $IRFORGE_INDEX_DIR or the user data dir)")
    stores.add_argument("--encoder-server", metavar="HOST:PORT", help="recall with the encoder of a running `irforge service models`")
    parser.set_defaults(handler=run_qc)


def build_job(args: argparse.Namespace, stack: ExitStack):
    """The QcJob the flags ask for; raises ValueError for a bad flag before any work."""
    from irforge.common.progress import tqdm_progress
    from irforge.corpus.core import CorpusService
    from irforge.corpus.lexical import make_backend
    from irforge.judge.factory import open_judge
    from irforge.judge.qc.job import QcJob, QcSpec
    from irforge.judge.qc.rerankers import ScorerFactory, parse_reranker_spec
    from irforge.judge.qc.writer import check_out_dir
    from irforge.models.cache import EmbeddingCache, default_cache_path
    from irforge.pipeline.retrievers.dense import DenseRetriever

    check_out_dir(args.dataset, args.out)  # before any model loads: refusing costs nothing
    thresholds = Thresholds(default=args.threshold, hard_negative=args.hard_negative_threshold)
    spec = QcSpec(dataset=args.dataset, out_dir=args.out, split=args.split, recall_depth=args.recall_depth,
                  thresholds=thresholds, relevant_from=args.relevant_from, hard_negatives=args.hard_negatives)
    reranker_specs = [parse_reranker_spec(text) for text in (args.rerankers or [s.format(model=args.model) for s in DEFAULT_RERANKERS])]
    repeated = sorted({text for text in args.rerankers or [] if args.rerankers.count(text) > 1})
    if repeated:
        raise ValueError(f"--reranker given twice: {repeated}")
    encoder_spec = build.encoder_spec_from_args(args)

    judge = open_judge(args.judge, args.store, thresholds_path=args.judge_thresholds, cache_path=args.embedding_cache)
    if hasattr(judge, "close"):
        stack.callback(judge.close)
    corpus = CorpusService(make_backend("embedded", index_dir=args.index_dir), build.vector_backend_from_args(args))
    stack.callback(corpus.close)
    cache = EmbeddingCache(args.embedding_cache or default_cache_path())
    stack.callback(cache.close)
    factory = ScorerFactory(corpus=corpus, cache=cache, progress=tqdm_progress, base_encoder=encoder_spec, stack=stack,
                            needed=thresholds.deepest)
    if args.ray and not args.encoder_server:
        encoder, location = build.local_encoder(encoder_spec, True, stack)
    else:
        encoder, location = factory.encoder(encoder_spec, address=args.encoder_server)
    recall = DenseRetriever(corpus, encoder, cache, tqdm_progress, exact=True, encoder_location=location)
    scorers = [factory.build(reranker) for reranker in reranker_specs]
    mode = {"recall_encoder": location, "corpus": "in-process (embedded BM25, " + args.vector_backend + " vectors)"}
    return QcJob(spec, recall, scorers, judge, progress=tqdm_progress, mode=mode)


def run_qc(args: argparse.Namespace) -> int:
    with ExitStack() as stack:
        try:
            job = build_job(args, stack)
        except ValueError as error:
            print(f"irforge qc: error: {redact_text(str(error))}", file=sys.stderr)
            return 2
        try:
            summary = job.run()
        except ValueError as error:  # an OUTDIR refused, a contradictory hard negatives file
            print(f"irforge qc: error: {redact_text(str(error))}", file=sys.stderr)
            return 2
    print_summary(summary, sys.stdout)
    return 0


def print_summary(summary: dict, out) -> None:
    out.write(f"\n{summary['dataset']} · {summary['split']} · quality control of {summary['queries']} queries "
              f"({len(summary['rerankers'])} rerankers, recall depth {summary['recall']['depth']})\n")
    out.write(f"{'case':<18} {'asked':>6} {'undecided':>9}  actions\n")
    for case, counts in summary["cases"].items():
        actions = ", ".join(f"{name} {n}" for name, n in counts.items()
                            if name not in ("asked", "labelled", "undecided") and n)
        out.write(f"{case:<18} {counts['asked']:>6} {counts['undecided']:>9}  {actions or '-'}\n")
    stats = summary["judge"]["stats"]
    out.write(f"queries dropped {len(summary['queries_dropped'])} · documents removed {len(summary['documents_removed'])} · "
              f"positives added {len(summary['positives_added'])}\n")
    backend = summary["judge"]["identity"].get("backend", "?")
    out.write(f"judge {backend}: {stats['calls']} calls{no_paid_call_note(backend, stats['calls'])}, {stats['from_store']} from the store, "
              f"{stats['unparsed']} unparsed, {stats['failed']} failed, ${stats['cost_usd']:.4f}\n")
    out.write(f"wrote {summary['output']} (qc_audit.jsonl: {summary['files']['audit_records']} records)\n")
