"""What `irforge generate` hands the generation room: typed values, not the command line's
Namespace. RecipeSettings is what a recipe reads; GenerationQc is how the QC step checks the
result (irforge.generation.qc_step builds a QcConfig from it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RecipeSettings:
    corpus: Path                           # a BEIR folder or a folder of .txt/.md files
    docs: int = 100                        # positive documents (infosearch: core queries) to sample
    seed: int = 0                          # seed of every draw
    rewrites: int = 3                      # AIR-Bench: rewrites per query
    templates: Path | None = None          # folder of <stage>.txt templates replacing the defaults
    chunk_tokens: int = 200                # airbench-longdoc
    chunk_overlap: int = 50
    tokenizer: str = "sentence-transformers/all-MiniLM-L6-v2"
    source_split: str = "test"             # infosearch: the qrels split core queries come from
    dimensions: tuple[str, ...] | None = None   # infosearch: the dimensions to build (None: all six)
    language: str | None = None            # ISO 639-1 code to write in (None: the corpus's, generation.language)


@dataclass(frozen=True)
class GenerationQc:
    """Quality control of a generated BEIR collection: the judge is the generation's LLM spec."""
    llm: Path                              # the judge spec (the generation's --llm)
    model: str = "all-MiniLM-L6-v2"        # the recall embedding model
    rerankers: tuple[str, ...] | None = None    # None: bm25 and dense:<model>
    recall_depth: int = 100
    hard_negative_threshold: int = 20
    store: Path | None = None              # judgement store
    embedding_cache: Path | None = None
    index_dir: Path | None = None
