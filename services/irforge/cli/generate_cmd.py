"""`irforge generate RECIPE`: a test collection written by an LLM (irforge.generation, docs/generation.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irforge.app.generate import DIMENSIONS, RECIPE_NAMES
from irforge.cli.options import add_config_options
from irforge.common.redact import redact_text
from irforge.config.options import leaves_by_name
from irforge.config.pipeline import Bm25Config


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "generate", help="generate a test collection with an LLM (AIR-Bench QA / Long-Doc, InfoSearch)",
        description="Sample documents, ask the LLM for queries (and hard negatives or instructions) stage by stage, "
        "check the result with `irforge qc` (unless --no-qc) and write the collection to --out with generation.json "
        "and provenance.jsonl. Every answer is cached: an interrupted run resumes, a re-run costs nothing.")
    parser.add_argument("recipe", choices=RECIPE_NAMES, help="what to generate")
    parser.add_argument("--corpus", type=Path,
                        help="the documents: a BEIR folder (corpus.jsonl; infosearch also needs queries and qrels) "
                             "or a folder of .txt/.md files")
    parser.add_argument("--llm", type=Path, metavar="SPEC",
                        help="the LLM: a judge spec YAML (kind: openai-chat, url, model, api_key_env, budgets, prices)")
    parser.add_argument("--out", type=Path, help="folder for the collection (written whole or not at all)")
    parser.add_argument("--estimate", action="store_true",
                        help="print the calls, tokens and cost the recipe needs for --docs documents (at --llm's prices, "
                             "else gpt-4o-mini's) and stop: nothing is sent")
    parser.add_argument("--docs", type=int, default=100, help="positive documents (infosearch: core queries) to sample (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every draw: documents, attributes, styles, split (default 0)")
    parser.add_argument("--no-qc", action="store_true", help="skip quality control (irforge qc) of the result")
    parser.add_argument("--max-cost", type=float, metavar="USD", help="stop sending once this much is spent (at the spec's prices)")
    parser.add_argument("--max-requests", type=int, metavar="N", help="stop after this many requests (retries and re-asks count)")
    parser.add_argument("--cache", type=Path, metavar="FILE",
                        help="generation cache (default $IRFORGE_CACHE_DIR/generation.sqlite3 or the user cache dir)")
    parser.add_argument("--templates", type=Path, metavar="DIR", help="folder of <stage>.txt prompt templates replacing the defaults")
    parser.add_argument("--rewrites", type=int, default=3, help="AIR-Bench: rewrites per query, in sampled styles (default 3)")
    # --language as declared once for BM25 (config.pipeline.Bm25Config): the language the prompts ask
    # for and generation.json and the collection's dataset.json record (default: the corpus's).
    add_config_options(parser, Bm25Config, exclude=tuple(n for n in leaves_by_name(Bm25Config) if n != "language"))
    longdoc = parser.add_argument_group("airbench-longdoc")
    longdoc.add_argument("--chunk-tokens", type=int, default=200, help="tokens per chunk (default 200)")
    longdoc.add_argument("--chunk-overlap", type=int, default=50, help="tokens shared by neighbouring chunks (default 50)")
    longdoc.add_argument("--tokenizer", default="sentence-transformers/all-MiniLM-L6-v2",
                         help="tokenizer counting the tokens: a packaged model name or a folder with tokenizer.json")
    info = parser.add_argument_group("infosearch")
    info.add_argument("--source-split", default="test", help="infosearch: the qrels split core queries come from (default test)")
    info.add_argument("--dimension", dest="dimensions", action="append",
                      choices=DIMENSIONS,
                      help="infosearch: repeatable; the dimensions to build (default all six)")
    qc = parser.add_argument_group("quality control (irforge qc)")
    qc.add_argument("--qc-model", default="all-MiniLM-L6-v2", help="QC's recall embedding model (default all-MiniLM-L6-v2)")
    qc.add_argument("--qc-reranker", dest="qc_rerankers", action="append", metavar="SPEC",
                    help="repeatable: QC rerankers, as irforge qc --reranker (default bm25 and dense:<--qc-model>)")
    qc.add_argument("--qc-recall-depth", type=int, default=100, help="documents QC recalls per query (default 100)")
    qc.add_argument("--qc-hard-negative-threshold", type=int, default=20,
                    help="rank within which a reranker votes a generated hard negative positive (default 20)")
    qc.add_argument("--store", type=Path, help="QC's judgement store (default $IRFORGE_JUDGE_STORE or the user data dir)")
    qc.add_argument("--embedding-cache", type=Path, help="QC's embedding cache (default as irforge qc)")
    qc.add_argument("--index-dir", type=Path, help="QC's BM25 indexes (default as irforge qc)")
    parser.set_defaults(handler=run_generate)


def request_of(args: argparse.Namespace):
    """The command line's options as the use case's GenerateRequest."""
    from irforge.app.generate import GenerateRequest

    return GenerateRequest(
        recipe=args.recipe, corpus=args.corpus, llm=args.llm, out=args.out, docs=args.docs, seed=args.seed,
        qc=not args.no_qc, max_cost=args.max_cost, max_requests=args.max_requests, cache=args.cache,
        templates=args.templates, rewrites=args.rewrites, chunk_tokens=args.chunk_tokens,
        chunk_overlap=args.chunk_overlap, tokenizer=args.tokenizer, source_split=args.source_split,
        dimensions=tuple(args.dimensions) if args.dimensions else None, qc_model=args.qc_model,
        qc_rerankers=tuple(args.qc_rerankers) if args.qc_rerankers else None, qc_recall_depth=args.qc_recall_depth,
        qc_hard_negative_threshold=args.qc_hard_negative_threshold, store=args.store,
        embedding_cache=args.embedding_cache, index_dir=args.index_dir, language=getattr(args, "language", None))


def run_generate(args: argparse.Namespace) -> int:
    from irforge.app.generate import finished_cleanly, generate

    request = request_of(args)
    if args.estimate:
        return print_estimate(request)
    try:
        manifest = generate(request)
    except ValueError as error:   # an option refused (UsageError), a corpus or template refused on reading
        print(f"irforge generate: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    print_summary(manifest, sys.stdout)
    if manifest["incomplete_reason"]:
        where = (f"{manifest['path']} keeps the earlier collection (nothing written)" if manifest.get("kept") else
                 f"{manifest['path']} holds the corpus, QC's audit and no qrels" if manifest["qc"]["ran"] else
                 f"{manifest['path']} holds only generation.json and provenance.jsonl (the raw answers)")
        print(f"irforge generate: error: {manifest['incomplete_reason']}; {where}. The answers are cached: a re-run with "
              "the same model and templates gets the same ones", file=sys.stderr)
    return 0 if finished_cleanly(manifest) else 1


def print_estimate(request) -> int:
    """`--estimate`: the recipe's cost from its stages and templates; nothing is sent."""
    from irforge.app.generate import estimate

    try:
        found = estimate(request)
    except ValueError as error:
        print(f"irforge generate: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    print(f"{request.recipe}, {request.docs} documents: {found['calls']:,} calls, {found['prompt_tokens']:,} prompt tokens, "
          f"at most {found['answer_tokens_at_most']:,} answer tokens, at most ${found['cost_usd_at_most']:.2f}")
    for stage in found["stages"]:
        print(f"  {stage['stage']:<22} {stage['calls_per_document']} per document · ~{stage['prompt_tokens']:,} prompt tokens · "
              f"answer <= {stage['answer_tokens']:,}")
    print("(prompt tokens estimated as characters / 4; re-asks, retries and quality control's judge calls come on top)")
    return 0


def print_summary(manifest: dict, out) -> None:
    language = manifest.get("language") or {}
    out.write(f"\n{manifest['recipe']} · {manifest['model']} · seed {manifest['seed']}"
              + (f" · language {language['language']} ({language['how']})" if language else "") + "\n")
    out.write(f"{'stage':<22} {'asked':>6} {'cached':>6} {'ok':>5} {'unparsed':>8} {'failed':>6} {'not sent':>8} {'requests':>8}\n")
    for name, c in manifest["stages"].items():
        out.write(f"{name:<22} {c['asked']:>6} {c['from_cache']:>6} {c['ok']:>5} {c['unparsed']:>8} {c['failed']:>6} "
                  f"{c['not_sent']:>8} {c['requests']:>8}\n")
    cost = manifest["cost"]
    out.write(f"requests {cost['requests']} · tokens {cost['prompt_tokens']} + {cost['completion_tokens']} · "
              f"${cost['cost_usd']:.4f}\n")
    answers = manifest["answers"]
    if answers["unusable"]:
        out.write(f"answers unusable: {answers['unusable']} of {answers['asked']} ({answers['unparsed']} unparsed, "
                  f"{answers['failed']} failed): " + " | ".join(f"{n}x {why}" for why, n in answers["reasons"].items()) + "\n")
    output = manifest["output"]
    out.write(f"queries {output['queries']} ({manifest['incomplete_chains']} chains incomplete)"
              + (f" · splits {output['splits']}" if "splits" in output else "") + "\n")
    for step in manifest["qc"]["steps"]:
        out.write(f"qc {step['split']}: {step['queries']} queries, dropped {step['queries_dropped']}, negatives removed "
                  f"{step['negatives_removed']}, positives added {step['positives_added']} ({step['judge_calls']} judge calls)"
                  + (f"; every {step['split']} query dropped: the collection has no {step['split']} split" if step.get("emptied") else "")
                  + "\n")
    if not manifest["qc"]["ran"]:
        out.write(f"qc not run: {manifest['qc']['reason']}\n")
    if manifest["stopped"]:
        out.write(f"stopped: {manifest['stopped']} (everything answered so far is kept; run again to go on)\n")
    out.write(f"kept {manifest['path']} as it was\n" if manifest.get("kept") else f"wrote {manifest['path']}\n")
