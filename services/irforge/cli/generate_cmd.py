"""`irforge generate RECIPE`: a test collection written by an LLM (irforge.generation, docs/generation.md)."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from irforge.common.redact import redact_text

RECIPE_NAMES = ("airbench-qa", "airbench-longdoc", "infosearch")
DEFAULT_QC_RERANKERS = ("bm25", "dense:{model}")


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
    longdoc = parser.add_argument_group("airbench-longdoc")
    longdoc.add_argument("--chunk-tokens", type=int, default=200, help="tokens per chunk (default 200)")
    longdoc.add_argument("--chunk-overlap", type=int, default=50, help="tokens shared by neighbouring chunks (default 50)")
    longdoc.add_argument("--tokenizer", default="sentence-transformers/all-MiniLM-L6-v2",
                         help="tokenizer counting the tokens: a packaged model name or a folder with tokenizer.json")
    info = parser.add_argument_group("infosearch")
    info.add_argument("--source-split", default="test", help="infosearch: the qrels split core queries come from (default test)")
    info.add_argument("--dimension", dest="dimensions", action="append",
                      choices=("audience", "keyword", "format", "language", "length", "source"),
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


def check_args(args: argparse.Namespace):
    """The spec and the recipe's module; ValueError for anything wrong, before any request."""
    from irforge.common.output_set import check_outside
    from irforge.generation.output import MANIFEST_NAME
    from irforge.generation.recipes import RECIPES
    from irforge.judge.errors import JudgeSpecError
    from irforge.judge.spec import JudgeSpec

    for name in ("docs", "rewrites", "chunk_tokens", "qc_recall_depth", "qc_hard_negative_threshold"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.max_requests is not None and args.max_requests < 1:
        raise ValueError(f"--max-requests must be at least 1, got {args.max_requests}")
    if args.max_cost is not None and not args.max_cost > 0:
        raise ValueError(f"--max-cost must be positive, got {args.max_cost}")
    if not args.corpus.is_dir():
        raise ValueError(f"--corpus {args.corpus}: not a folder")
    if args.templates is not None and not args.templates.is_dir():
        raise ValueError(f"--templates {args.templates}: not a folder")
    check_outside(args.out, {"--corpus": args.corpus, "--cache": args.cache, "--store": args.store,
                             "--embedding-cache": args.embedding_cache, "--index-dir": args.index_dir})
    if args.corpus.resolve() in args.out.resolve().parents or args.out.resolve() in args.corpus.resolve().parents:
        raise ValueError(f"--out {args.out} and --corpus {args.corpus} must not hold one another")
    if args.out.exists() and (not args.out.is_dir() or (any(args.out.iterdir()) and not (args.out / MANIFEST_NAME).is_file())):
        raise ValueError(f"--out {args.out} exists, is not empty and is not an earlier `irforge generate` output: "
                         "refusing to replace it")
    if not args.no_qc and RECIPES[args.recipe].LAYOUT == "beir" and args.qc_rerankers is None:
        args.qc_rerankers = [s.format(model=args.qc_model) for s in DEFAULT_QC_RERANKERS]
    try:
        spec = JudgeSpec.from_file(args.llm)
    except JudgeSpecError as error:
        raise ValueError(str(error)) from None
    return spec, RECIPES[args.recipe]


def recipe_settings(args: argparse.Namespace):
    """What the recipe reads, typed (irforge.generation.settings)."""
    from irforge.generation.settings import RecipeSettings

    return RecipeSettings(corpus=args.corpus, docs=args.docs, seed=args.seed, rewrites=args.rewrites,
                          templates=args.templates, chunk_tokens=args.chunk_tokens, chunk_overlap=args.chunk_overlap,
                          tokenizer=args.tokenizer, source_split=args.source_split,
                          dimensions=tuple(args.dimensions) if args.dimensions else None)


def generation_qc(args: argparse.Namespace):
    """How the QC step checks the generated collection, typed (irforge.generation.settings)."""
    from irforge.generation.settings import GenerationQc

    return GenerationQc(llm=args.llm, model=args.qc_model,
                        rerankers=tuple(args.qc_rerankers) if args.qc_rerankers else None,
                        recall_depth=args.qc_recall_depth, hard_negative_threshold=args.qc_hard_negative_threshold,
                        store=args.store, embedding_cache=args.embedding_cache, index_dir=args.index_dir)


def run_generate(args: argparse.Namespace) -> int:
    from irforge.generation.templates import TemplateError

    if args.estimate:
        return print_estimate(args)
    missing = [flag for flag in ("--corpus", "--llm", "--out") if getattr(args, flag[2:]) is None]
    if missing:
        print(f"irforge generate: error: {', '.join(missing)} required (or --estimate, which sends nothing)", file=sys.stderr)
        return 2
    try:
        spec, recipe = check_args(args)
    except (ValueError, TemplateError) as error:
        print(f"irforge generate: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    try:
        manifest = generate(args, spec, recipe)
    except (ValueError, TemplateError) as error:   # a corpus or template refused on reading
        print(f"irforge generate: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    print_summary(manifest, sys.stdout)
    stopped = manifest["stopped"]
    return 0 if stopped is None or stopped.startswith(("--max-", "not sent: the")) else 1


def print_estimate(args: argparse.Namespace) -> int:
    """`--estimate`: the recipe's cost from its stages and templates (irforge.generation.estimate)."""
    from irforge.generation.estimate import estimate
    from irforge.generation.templates import TemplateError
    from irforge.judge.errors import JudgeSpecError
    from irforge.judge.spec import JudgeSpec

    prices = {}
    try:
        if args.llm is not None:
            spec = JudgeSpec.from_file(args.llm)
            prices = {"prompt_price": spec.price_per_million_prompt_tokens, "completion_price": spec.price_per_million_completion_tokens}
        found = estimate(args.recipe, args.docs, rewrites=args.rewrites, dimensions=args.dimensions, templates=args.templates,
                         **prices)
    except (ValueError, TemplateError, JudgeSpecError) as error:
        print(f"irforge generate: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    print(f"{args.recipe}, {args.docs} documents: {found['calls']:,} calls, {found['prompt_tokens']:,} prompt tokens, "
          f"at most {found['answer_tokens_at_most']:,} answer tokens, at most ${found['cost_usd_at_most']:.2f}")
    for stage in found["stages"]:
        print(f"  {stage['stage']:<22} {stage['calls_per_document']} per document · ~{stage['prompt_tokens']:,} prompt tokens · "
              f"answer <= {stage['answer_tokens']:,}")
    print("(prompt tokens estimated as characters / 4; re-asks, retries and quality control's judge calls come on top)")
    return 0


def generate(args: argparse.Namespace, spec, recipe) -> dict:
    from irforge.common.output_set import OutputSet
    from irforge.common.versions import package_versions
    from irforge.generation.cache import GenerationCache
    from irforge.generation.engine import Engine
    from irforge.generation.output import (
        MANIFEST_NAME,
        write_beir,
        write_instruction_sets,
        write_provenance,
    )
    from irforge.common.progress import tqdm_progress
    from irforge.generation.qc_step import run_quality_control
    from irforge.judge.qc.writer import write_json

    started = datetime.now(UTC)
    cache = GenerationCache(args.cache)
    engine = Engine(spec, cache, max_cost=args.max_cost, max_requests=args.max_requests, progress=tqdm_progress)
    try:
        result = recipe.generate(engine, recipe_settings(args))
    finally:
        engine.close()
        cache.close()
    qc = {"ran": False, "reason": "", "steps": []}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with OutputSet(args.out, replaces=None) as staged:
        if recipe.LAYOUT == "infosearch":
            output = write_instruction_sets(staged, result, args.seed)
            qc["reason"] = "quality control is AIR-Bench's; InfoSearch sets are not checked by it"
        else:
            with tempfile.TemporaryDirectory(prefix=".irforge-generate-", dir=args.out.parent) as work:
                raw = Path(work) / "raw"
                raw.mkdir()
                output = write_beir(raw, result, args.seed)
                if args.no_qc:
                    qc["reason"] = "--no-qc"
                elif engine.stopped is not None:
                    qc["reason"] = f"generation stopped ({engine.stopped}): quality control left for a complete run"
                elif not output["queries"]:
                    qc["reason"] = "no queries"
                else:
                    raw, qc["steps"] = run_quality_control(raw, Path(work), output["splits"], generation_qc(args))
                    qc["ran"] = True
                for path in raw.iterdir():
                    shutil.move(str(path), staged / path.name)
        write_provenance(staged, engine.records)
        manifest = {
            "recipe": args.recipe, "seed": args.seed, "docs": args.docs, "model": spec.model,
            "complete": engine.stopped is None, "stopped": engine.stopped,
            "incomplete_chains": result.incomplete,
            "templates": engine.templates,
            "stages": {name: counts.as_dict() for name, counts in engine.counts.items()},
            "histograms": {name: dict(sorted(counter.items())) for name, counter in result.histograms.items()},
            "cost": {key: value for key, value in engine.describe().items() if key not in ("model", "endpoint")},
            "llm": engine.spec.public(),
            "output": output, "details": result.details, "qc": qc,
            "split": "queries shuffled with the seed, the first fifth (rounded) dev, the rest test (dev : test = 1 : 4)",
            "cache": str(cache.path), "started_at": started.isoformat(timespec="seconds"),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "versions": package_versions(["openai", "jsonschema", "tokenizers"]),
        }
        write_json(staged / MANIFEST_NAME, manifest)
    manifest["path"] = str(args.out)
    return manifest


def print_summary(manifest: dict, out) -> None:
    out.write(f"\n{manifest['recipe']} · {manifest['model']} · seed {manifest['seed']}\n")
    out.write(f"{'stage':<22} {'asked':>6} {'cached':>6} {'ok':>5} {'unparsed':>8} {'failed':>6} {'not sent':>8} {'requests':>8}\n")
    for name, c in manifest["stages"].items():
        out.write(f"{name:<22} {c['asked']:>6} {c['from_cache']:>6} {c['ok']:>5} {c['unparsed']:>8} {c['failed']:>6} "
                  f"{c['not_sent']:>8} {c['requests']:>8}\n")
    cost = manifest["cost"]
    out.write(f"requests {cost['requests']} · tokens {cost['prompt_tokens']} + {cost['completion_tokens']} · "
              f"${cost['cost_usd']:.4f}\n")
    output = manifest["output"]
    out.write(f"queries {output['queries']} ({manifest['incomplete_chains']} chains incomplete)"
              + (f" · splits {output['splits']}" if "splits" in output else "") + "\n")
    for step in manifest["qc"]["steps"]:
        out.write(f"qc {step['split']}: {step['queries']} queries, dropped {step['queries_dropped']}, negatives removed "
                  f"{step['negatives_removed']}, positives added {step['positives_added']} ({step['judge_calls']} judge calls)\n")
    if not manifest["qc"]["ran"]:
        out.write(f"qc not run: {manifest['qc']['reason']}\n")
    if manifest["stopped"]:
        out.write(f"stopped: {manifest['stopped']} (everything answered so far is kept; run again to go on)\n")
    out.write(f"wrote {manifest['path']}\n")
