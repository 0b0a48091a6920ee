"""What a recipe costs before it runs: calls, prompt and answer tokens and dollars per N documents,
computed from the stages the recipes declare (their placeholders and answer bounds) and the
templates they would send. Printed by `irforge generate RECIPE --estimate`; docs/generation.md's
table is this function's output (a test keeps them equal).

Prompt tokens are estimated as the template's characters / 4, plus the document where the stage
shows one (capped at MAX_DOCUMENT_CHARS, so 1,000 tokens; a Long-Doc chunk is about 250), plus
60 for the other inputs (a query, a character, a condition), plus the system message every call
carries (its characters / 4). Answer tokens are each stage's `max_tokens`, an upper bound. Re-asks, retries and QC's judge calls come on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from irforge.generation.recipes import airbench, infosearch
from irforge.generation.templates import load_template, system_message

OTHER_INPUT_TOKENS = 60
DOCUMENT_TOKENS = airbench.MAX_DOCUMENT_CHARS // 4
SYSTEM_TOKENS = len(system_message("English")) // 4
LONGDOC_CHUNK_TOKENS = 250          # a 200-token chunk of the MiniLM tokenizer is about 250 tokens of an LLM's


@dataclass(frozen=True)
class StageCost:
    stage: str
    calls_per_document: int
    prompt_tokens: int              # per call
    answer_tokens: int              # per call, at most


def recipe_stages(recipe: str, rewrites: int = 3, dimensions: list[str] | None = None,
                  templates: Path | None = None) -> list[StageCost]:
    if recipe in ("airbench-qa", "airbench-longdoc"):
        names = ["characters", "scenarios", "query", "rewrite"] + (["negatives"] if recipe == "airbench-qa" else [])
        document = DOCUMENT_TOKENS if recipe == "airbench-qa" else LONGDOC_CHUNK_TOKENS
        calls = {"rewrite": rewrites}
        return [_stage(name, *airbench.STAGES[name][::2], calls.get(name, 1), document, templates) for name in names]
    if recipe == "infosearch":
        chosen = dimensions or list(infosearch.DIMENSIONS)
        rewritten = sum(1 for d in chosen if d in infosearch.REWRITTEN)
        calls = {"condition": len(chosen), "instructed_query": len(chosen), "reversed_instruction": len(chosen),
                 "doc_rewrite": rewritten}
        return [_stage(name, fields, max_tokens, calls[name], DOCUMENT_TOKENS, templates)
                for name, (fields, _, max_tokens) in infosearch.STAGES.items() if calls[name]]
    raise ValueError(f"unknown recipe {recipe!r}")


def _stage(name: str, fields: set[str], max_tokens: int, calls: int, document_tokens: int, templates) -> StageCost:
    template = load_template(name, fields, templates)
    prompt = (len(template.text) // 4 + (document_tokens if "document" in fields else 0) + OTHER_INPUT_TOKENS
              + SYSTEM_TOKENS)
    return StageCost(name, calls, prompt, max_tokens)


def estimate(recipe: str, documents: int = 100, prompt_price: float = 0.15, completion_price: float = 0.60,
             **options) -> dict:
    """Totals for `documents` documents (core queries for infosearch); prices in dollars per million tokens."""
    stages = recipe_stages(recipe, **options)
    calls = sum(s.calls_per_document for s in stages) * documents
    prompt = sum(s.calls_per_document * s.prompt_tokens for s in stages) * documents
    answer = sum(s.calls_per_document * s.answer_tokens for s in stages) * documents
    return {"recipe": recipe, "documents": documents, "calls": calls, "prompt_tokens": prompt, "answer_tokens_at_most": answer,
            "cost_usd_at_most": (prompt * prompt_price + answer * completion_price) / 1e6,
            "stages": [s.__dict__ for s in stages]}
