"""`airbench-longdoc`: AIR-Bench Long-Doc generation (../shared/PRODUCT.md §5).

The long documents of `--corpus` are split into chunks of 200 tokens with 50 overlap (the
tokenizer is named and its file's sha256 recorded in the manifest; documents.Chunker, which counts
runs of unspaced scripts in characters, Thai in words); the
chunks are the collection's corpus (id `<doc id>-c<k>`, the document's title). `--docs N` chunks
are sampled as positives (seeded) and get one query each, of the question and claim types only
(3 : 1, claims only at 10+ words), with no hard negatives.
"""

from __future__ import annotations

from irforge.generation.collection import Generated
from irforge.generation.documents import Chunker, read_documents
from irforge.generation.engine import Engine
from irforge.generation.language import generation_language
from irforge.generation.settings import RecipeSettings
from irforge.generation.recipes.airbench import Options, generate_queries
from irforge.generation.recipes.airbench_qa import sample

LAYOUT = "beir"
HARD_NEGATIVES = False
TYPES = {"question": 3, "claim": 1}


def generate(engine: Engine, settings: RecipeSettings) -> Generated:
    chunker = Chunker(settings.chunk_tokens, settings.chunk_overlap, settings.tokenizer)
    documents = read_documents(settings.corpus)
    language = generation_language(settings.corpus, documents, settings.language)
    chunks = [chunk for d in documents for chunk in chunker.chunks(d)]
    by_id = {c.doc_id: c for c in chunks}
    positives = [by_id[i] for i in sample(list(by_id), settings.docs, settings.seed)]
    result = generate_queries(engine, positives, chunks, Options(seed=settings.seed, rewrites=settings.rewrites,
                                                                 negatives=False, templates=settings.templates, types=TYPES,
                                                                 language=language))
    result.details = {"chunking": chunker.describe(), "long_documents": len(documents), "chunks": len(chunks),
                      "positives_sampled": len(positives)}
    return result
