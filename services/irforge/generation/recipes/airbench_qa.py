"""`airbench-qa`: AIR-Bench QA generation over a corpus (../shared/PRODUCT.md §5).

`--docs N` positive documents are sampled from the corpus (seeded: a shuffle of the sorted ids,
the first N); each gets one query through recipes/airbench.py's five stages, and 3-7 generated
hard negatives that join the corpus with label 0. The whole input corpus is the collection's
corpus. Quality control (unless --no-qc) then checks the negatives at threshold 20.
"""

from __future__ import annotations

from irforge.generation.collection import Generated
from irforge.generation.documents import read_documents
from irforge.generation.engine import Engine
from irforge.generation.language import generation_language
from irforge.generation.settings import RecipeSettings
from irforge.generation.recipes.airbench import Options, generate_queries
from irforge.generation.sampling import rng_for

LAYOUT = "beir"
HARD_NEGATIVES = True


def sample(ids: list[str], count: int, seed: int, purpose: str = "positives") -> list[str]:
    ordered = sorted(ids)
    rng_for(seed, purpose, "").shuffle(ordered)
    return ordered[:count]


def generate(engine: Engine, settings: RecipeSettings) -> Generated:
    corpus = read_documents(settings.corpus)
    language = generation_language(settings.corpus, corpus, settings.language)
    by_id = {d.doc_id: d for d in corpus}
    positives = [by_id[i] for i in sample(list(by_id), settings.docs, settings.seed)]
    result = generate_queries(engine, positives, corpus, Options(seed=settings.seed, rewrites=settings.rewrites,
                                                                 negatives=True, templates=settings.templates,
                                                                 language=language))
    result.details = {"positives_sampled": len(positives), "corpus_documents": len(corpus)}
    return result
