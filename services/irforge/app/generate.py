"""Generating a test collection with an LLM (`irforge generate RECIPE`, docs/generation.md): the
options are a GenerateRequest; every option is checked before any request (UsageError); the recipe
runs stage by stage through the generation engine, the QC step checks a BEIR result, and OUT gets
the collection with generation.json and provenance.jsonl, whole or not at all. `estimate` costs
the recipe without sending anything."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from irforge.app.errors import UsageError
from irforge.generation.settings import GenerationQc, RecipeSettings

RECIPE_NAMES = ("airbench-qa", "airbench-longdoc", "infosearch")
DIMENSIONS = ("audience", "keyword", "format", "language", "length", "source")
DEFAULT_QC_RERANKERS = ("bm25", "dense:{model}")


@dataclass(frozen=True)
class GenerateRequest:
    """The options of `irforge generate`, typed (the command line's flags, one field each)."""
    recipe: str                                 # one of RECIPE_NAMES
    corpus: Path | None = None                  # a BEIR folder or a folder of .txt/.md files
    llm: Path | None = None                     # the LLM: a judge spec YAML (also QC's judge)
    out: Path | None = None                     # folder for the collection
    docs: int = 100                             # positive documents (infosearch: core queries) to sample
    seed: int = 0
    qc: bool = True                             # False: --no-qc
    max_cost: float | None = None               # USD, at the spec's prices
    max_requests: int | None = None
    cache: Path | None = None                   # generation cache (default: irforge's)
    templates: Path | None = None               # folder of <stage>.txt templates replacing the defaults
    rewrites: int = 3                           # AIR-Bench: rewrites per query
    chunk_tokens: int = 200                     # airbench-longdoc
    chunk_overlap: int = 50
    tokenizer: str = "sentence-transformers/all-MiniLM-L6-v2"
    source_split: str = "test"                  # infosearch
    dimensions: tuple[str, ...] | None = None   # infosearch (None: all six)
    language: str | None = None                 # ISO 639-1 code to write in (None: the corpus's)
    qc_model: str = "all-MiniLM-L6-v2"
    qc_rerankers: tuple[str, ...] | None = None   # None: bm25 and dense:<qc_model> (BEIR recipes)
    qc_recall_depth: int = 100
    qc_hard_negative_threshold: int = 20
    store: Path | None = None                   # QC's judgement store
    embedding_cache: Path | None = None         # QC's embedding cache
    index_dir: Path | None = None               # QC's BM25 indexes

    def recipe_settings(self) -> RecipeSettings:
        """What the recipe reads."""
        return RecipeSettings(corpus=self.corpus, docs=self.docs, seed=self.seed, rewrites=self.rewrites,
                              templates=self.templates, chunk_tokens=self.chunk_tokens, chunk_overlap=self.chunk_overlap,
                              tokenizer=self.tokenizer, source_split=self.source_split,
                              dimensions=tuple(self.dimensions) if self.dimensions else None, language=self.language)

    def generation_qc(self) -> GenerationQc:
        """How the QC step checks the generated collection (the default rerankers spelled out)."""
        rerankers = self.qc_rerankers or tuple(s.format(model=self.qc_model) for s in DEFAULT_QC_RERANKERS)
        return GenerationQc(llm=self.llm, model=self.qc_model, rerankers=rerankers, recall_depth=self.qc_recall_depth,
                            hard_negative_threshold=self.qc_hard_negative_threshold, store=self.store,
                            embedding_cache=self.embedding_cache, index_dir=self.index_dir)


def estimate(request: GenerateRequest) -> dict:
    """`--estimate`: the calls, tokens and cost the recipe needs for request.docs documents, at the
    LLM spec's prices (else gpt-4o-mini's); nothing is sent. UsageError for a spec or templates refused."""
    from irforge.generation.estimate import estimate as recipe_estimate
    from irforge.judge.spec import JudgeSpec

    prices = {}
    try:
        if request.llm is not None:
            spec = JudgeSpec.from_file(request.llm)
            prices = {"prompt_price": spec.price_per_million_prompt_tokens,
                      "completion_price": spec.price_per_million_completion_tokens}
        return recipe_estimate(request.recipe, request.docs, rewrites=request.rewrites,
                               dimensions=list(request.dimensions) if request.dimensions else None,
                               templates=request.templates, **prices)
    except ValueError as error:   # TemplateError and JudgeSpecError are ValueErrors
        raise UsageError(str(error)) from None


def check(request: GenerateRequest):
    """(the LLM spec, the recipe's module); UsageError for anything wrong, before any request."""
    from irforge.common.output_set import check_outside
    from irforge.config.checks import check_values
    from irforge.config.pipeline import Bm25Config
    from irforge.data.generation_manifest import MANIFEST_NAME
    from irforge.generation.recipes import RECIPES
    from irforge.judge.spec import JudgeSpec

    missing = [flag for flag, value in (("--corpus", request.corpus), ("--llm", request.llm), ("--out", request.out))
               if value is None]
    if missing:
        raise UsageError(f"{', '.join(missing)} required (or --estimate, which sends nothing)")
    if request.recipe not in RECIPES:
        raise UsageError(f"unknown recipe {request.recipe!r}: one of {', '.join(RECIPE_NAMES)}")
    for name in ("docs", "rewrites", "chunk_tokens", "qc_recall_depth", "qc_hard_negative_threshold"):
        if getattr(request, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(request, name)}")
    if request.max_requests is not None and request.max_requests < 1:
        raise UsageError(f"--max-requests must be at least 1, got {request.max_requests}")
    if request.max_cost is not None and not request.max_cost > 0:
        raise UsageError(f"--max-cost must be positive, got {request.max_cost}")
    try:   # --language is BM25's option (config.pipeline): one declaration, one check, one message
        check_values(Bm25Config(language=request.language))
    except ValueError as error:
        raise UsageError(str(error)) from None
    corpus, out = Path(request.corpus), Path(request.out)
    if not corpus.is_dir():
        raise UsageError(f"--corpus {request.corpus}: not a folder")
    if request.templates is not None and not Path(request.templates).is_dir():
        raise UsageError(f"--templates {request.templates}: not a folder")
    try:
        check_outside(out, {"--corpus": corpus, "--cache": request.cache, "--store": request.store,
                            "--embedding-cache": request.embedding_cache, "--index-dir": request.index_dir})
        if corpus.resolve() in out.resolve().parents or out.resolve() in corpus.resolve().parents:
            raise UsageError(f"--out {request.out} and --corpus {request.corpus} must not hold one another")
        if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MANIFEST_NAME).is_file())):
            raise UsageError(f"--out {request.out} exists, is not empty and is not an earlier `irforge generate` "
                             "output: refusing to replace it")
        return JudgeSpec.from_file(request.llm), RECIPES[request.recipe]
    except UsageError:
        raise
    except ValueError as error:   # check_outside's refusal, a JudgeSpecError
        raise UsageError(str(error)) from None


def generate(request: GenerateRequest) -> dict:
    """`irforge generate`: check the options (UsageError before any request), generate, check a BEIR
    result with QC (unless request.qc is False), write OUT whole; returns the manifest (generation.json's
    content, with `path`: OUT). With no usable query the manifest says why (incomplete_reason) and OUT
    holds it and provenance.jsonl only, or keeps an earlier collection untouched (then `kept`: True,
    nothing written). A corpus or template refused on reading is a ValueError."""
    spec, recipe = check(request)
    from irforge.common.output_set import OutputSet
    from irforge.common.progress import tqdm_progress
    from irforge.common.versions import package_versions
    from irforge.generation.cache import GenerationCache
    from irforge.generation.engine import Engine
    from irforge.data.generation_manifest import MANIFEST_NAME
    from irforge.generation.output import (answer_summary, no_query_reason, write_beir, write_instruction_sets,
                                           write_provenance)
    from irforge.generation.qc_step import run_quality_control
    from irforge.judge.qc.writer import write_json

    out = Path(request.out)
    started = datetime.now(UTC)
    cache = GenerationCache(request.cache)
    engine = Engine(spec, cache, max_cost=request.max_cost, max_requests=request.max_requests, progress=tqdm_progress)
    try:
        result = recipe.generate(engine, request.recipe_settings())
    finally:
        engine.close()
        cache.close()
    qc = {"ran": False, "reason": "", "steps": []}
    # No usable query (every answer garbage, say): not complete, whatever the stop; nothing to evaluate is
    # written, and an earlier collection in OUT is kept rather than replaced by nothing.
    usable = _query_count(result, recipe.LAYOUT)
    reason = None if usable else no_query_reason(list(engine.counts), engine.records, engine.stopped)
    kept = reason is not None and _holds_collection(out, MANIFEST_NAME)
    manifest = {
        "recipe": request.recipe, "seed": request.seed, "docs": request.docs, "model": spec.model,
        "complete": engine.stopped is None and reason is None, "stopped": engine.stopped, "incomplete_reason": reason,
        "incomplete_chains": result.incomplete,
        "language": result.language.as_dict() if result.language is not None else None,
        "templates": engine.templates,
        "stages": {name: counts.as_dict() for name, counts in engine.counts.items()},
        "answers": answer_summary(engine.records),
        "histograms": {name: dict(sorted(counter.items())) for name, counter in result.histograms.items()},
        "cost": {key: value for key, value in engine.describe().items() if key not in ("model", "endpoint")},
        "llm": engine.spec.public(),
        "output": {"queries": 0}, "details": result.details, "qc": qc,
        "split": "queries shuffled with the seed, the first fifth (rounded) dev, the rest test (dev : test = 1 : 4)",
        "cache": str(cache.path), "started_at": started.isoformat(timespec="seconds"),
    }
    if kept:
        qc["reason"] = "no queries"
        return {**manifest, "path": str(request.out), "kept": True}
    out.parent.mkdir(parents=True, exist_ok=True)
    with OutputSet(out, replaces=None) as staged:
        if reason is not None:
            qc["reason"] = "no queries"
        elif recipe.LAYOUT == "infosearch":
            output = write_instruction_sets(staged, result, request.seed)
            qc["reason"] = "quality control is AIR-Bench's; InfoSearch sets are not checked by it"
        else:
            with tempfile.TemporaryDirectory(prefix=".irforge-generate-", dir=out.parent) as work:
                raw = Path(work) / "raw"
                raw.mkdir()
                output = write_beir(raw, result, request.seed)
                if not request.qc:
                    qc["reason"] = "--no-qc"
                elif engine.stopped is not None:
                    qc["reason"] = f"generation stopped ({engine.stopped}): quality control left for a complete run"
                elif not output["queries"]:
                    qc["reason"] = "no queries"
                else:
                    raw, qc["steps"] = run_quality_control(raw, Path(work), output["splits"], request.generation_qc())
                    qc["ran"] = True
                    if all(step["emptied"] for step in qc["steps"]):   # a collection with nothing to evaluate
                        manifest["complete"] = False
                        manifest["incomplete_reason"] = ("quality control dropped every generated query (the judge "
                                                         "found none relevant to the passage it was written from)")
                for path in raw.iterdir():
                    shutil.move(str(path), staged / path.name)
        write_provenance(staged, engine.records)
        manifest["output"] = output if reason is None else manifest["output"]
        manifest["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        manifest["versions"] = package_versions(["openai", "jsonschema", "tokenizers"])
        write_json(staged / MANIFEST_NAME, manifest)
    return {**manifest, "path": str(request.out)}


def _query_count(result, layout: str) -> int:
    if layout == "infosearch":
        return sum(len(dimension.queries) for dimension in result.dimensions.values())
    return len(result.queries)


def _holds_collection(out: Path, manifest_name: str) -> bool:
    """True when OUT holds an earlier generation with queries (check() refused anything else in OUT)."""
    try:
        import json
        return bool(json.loads((out / manifest_name).read_text(encoding="utf-8"))["output"]["queries"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def finished_cleanly(manifest: dict) -> bool:
    """True when the run completed or stopped at a budget the user set (exit 0); False when it
    stopped on the LLM's failure (exit 1: the answers so far are kept, a re-run goes on) or has
    no usable query at all (exit 1: manifest["incomplete_reason"] says why)."""
    stopped = manifest["stopped"]
    if manifest.get("incomplete_reason"):
        return False
    return stopped is None or stopped.startswith(("--max-", "not sent: the"))


__all__ = ["DIMENSIONS", "GenerateRequest", "RECIPE_NAMES", "check", "estimate", "finished_cleanly", "generate"]
