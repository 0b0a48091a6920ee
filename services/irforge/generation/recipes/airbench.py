"""AIR-Bench's query generation, shared by the QA and Long-Doc recipes (../shared/PRODUCT.md §5).

Per sampled positive document d+ (query id `q-<doc id>`), five stages, each one engine.run over
every document still going:

  characters   who would find d+ useful (3)
  scenarios    for one of them (drawn), situations in which they would search (3)
  query        for one scenario (drawn), a query with sampled length, type and information used
  rewrite      `rewrites` rewrites in sampled styles, told not to copy d+'s words; the one sharing
               the fewest word 4-grams with d+ becomes the query (ties: the earlier rewrite). Words
               are the analysis room's for the language (irforge.analysis): overlapping character
               bigrams in Chinese, Japanese and Korean (4 of them span 5 characters), PyThaiNLP's
               words in Thai
  negatives    (QA only) 3-7 (drawn) documents that look relevant but do not answer the query,
               added to the corpus with label 0 for it

A query enters the collection only when its whole chain answered (a stopped run keeps the
complete ones). Documents are shown to the LLM as title + text, cut at `max_document_chars`,
quoted as data (templates.SYSTEM_MESSAGE); every stage is asked to write in the collection's
language, by name. Query lengths are counted in words of any script (analysis.word_count).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from irforge.analysis.analyzer import analyzer_for, word_count
from irforge.analysis.detect import Detection
from irforge.generation.collection import Generated
from irforge.generation.documents import Doc
from irforge.generation.engine import Ask, Engine, Stage
from irforge.generation.language import language_name
from irforge.generation.sampling import (
    INFORMATION_RULES,
    LENGTH_RULES,
    NEGATIVES,
    TYPE_RULES,
    query_attributes,
    rng_for,
    styles,
)
from irforge.generation.templates import load_template, system_message

CHARACTERS, SCENARIOS = 3, 3
MAX_DOCUMENT_CHARS = 4000


def _strings(name: str) -> dict:
    return {"type": "object", "additionalProperties": False, "required": [name],
            "properties": {name: {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}}}


QUERY_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["query"],
                "properties": {"query": {"type": "string", "minLength": 1}}}


def negatives_schema(count: int) -> dict:
    document = {"type": "object", "additionalProperties": False, "required": ["title", "text"],
                "properties": {"title": {"type": "string"}, "text": {"type": "string", "minLength": 1}}}
    return {"type": "object", "additionalProperties": False, "required": ["documents"],
            "properties": {"documents": {"type": "array", "items": document, "minItems": count, "maxItems": count}}}


# stage -> (placeholders, schema, max_tokens). The negatives stage asks each query for its own
# number of documents (3-7, drawn): each ask carries the schema with that exact count.
STAGES = {
    "characters": ({"document", "count"}, _strings("characters"), 200),
    "scenarios": ({"document", "character", "count"}, _strings("scenarios"), 400),
    "query": ({"document", "character", "scenario", "query_type", "type_rule", "length_rule", "information_rule"},
              QUERY_SCHEMA, 100),
    "rewrite": ({"document", "query", "style", "index", "query_type", "length_rule"}, QUERY_SCHEMA, 100),
    "negatives": ({"document", "query", "count"}, None, 2500),
}


def stages(names: list[str], templates: Path | None, system: str = "") -> dict[str, Stage]:
    built = {}
    for name in names:
        fields, schema, max_tokens = STAGES[name]
        if name == "negatives":
            schema = negatives_schema(NEGATIVES[1])
            schema["properties"]["documents"]["minItems"] = NEGATIVES[0]
        built[name] = Stage(name, load_template(name, fields, templates), schema, max_tokens, system)
    return built


def words(text: str, language: str) -> list[str]:
    """The words the copy check compares: the language's analysis (normalised, before stopwords
    and stemming): Unicode words, CJK character bigrams, Thai by PyThaiNLP."""
    return analyzer_for(language).words(text)


def copied_ngrams(query: str, document: str, language: str, n: int = 4) -> int:
    """How many of the query's word n-grams appear in the document (0: nothing copied)."""
    def grams(tokens):
        return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}
    return len(grams(words(query, language)) & grams(words(document, language)))


@dataclass
class Options:
    seed: int = 0
    rewrites: int = 3
    negatives: bool = True                  # QA: yes; Long-Doc: no
    templates: Path | None = None
    types: dict[str, int] | None = None     # None: question : problem : claim = 3 : 1 : 1
    language: Detection = field(default_factory=lambda: Detection("en", "assumed"))   # what the queries are written in


def generate_queries(engine: Engine, positives: list[Doc], corpus: list[Doc], options: Options) -> Generated:
    names = ["characters", "scenarios", "query", "rewrite"] + (["negatives"] if options.negatives else [])
    language = options.language.language
    stage = stages(names, options.templates, system_message(language_name(options.language)))
    seed = options.seed
    shown = {d.doc_id: d.full_text[:MAX_DOCUMENT_CHARS] for d in positives}
    qid = {d.doc_id: f"q-{d.doc_id}" for d in positives}
    going = list(positives)

    def step(name: str, ask_of) -> dict[str, dict]:
        """Run stage `name` for every document still going; keep those whose answer parsed."""
        nonlocal going
        outcomes = engine.run(stage[name], [Ask(qid[d.doc_id], ask_of(d)) for d in going])
        answers = {d.doc_id: o for d, o in zip(going, outcomes) if o.status == "ok"}
        going = [d for d in going if d.doc_id in answers]
        return answers

    characters = step("characters", lambda d: {"document": shown[d.doc_id], "count": CHARACTERS})
    character = {d: rng_for(seed, "character", d).choice(o.data["characters"]) for d, o in characters.items()}
    scenarios = step("scenarios", lambda d: {"document": shown[d.doc_id], "character": character[d.doc_id],
                                             "count": SCENARIOS})
    scenario = {d: rng_for(seed, "scenario", d).choice(o.data["scenarios"]) for d, o in scenarios.items()}
    attributes = {d.doc_id: query_attributes(rng_for(seed, "attributes", d.doc_id), options.types or _default_types())
                  for d in positives}

    def query_inputs(d: Doc) -> dict:
        a = attributes[d.doc_id]
        return {"document": shown[d.doc_id], "character": character[d.doc_id], "scenario": scenario[d.doc_id],
                "query_type": a["type"], "type_rule": TYPE_RULES[a["type"]], "length_rule": LENGTH_RULES[a["length"]],
                "information_rule": INFORMATION_RULES[a["information"]]}

    queries = step("query", query_inputs)
    query_text = {d: o.data["query"].strip() for d, o in queries.items()}

    # Rewrites: several asks per document, flattened into one stage run.
    style_of = {d.doc_id: styles(rng_for(seed, "styles", d.doc_id), options.rewrites) for d in going}
    asks, owners = [], []
    for d in going:
        a = attributes[d.doc_id]
        for index, style in enumerate(style_of[d.doc_id], start=1):
            asks.append(Ask(qid[d.doc_id], {"document": shown[d.doc_id], "query": query_text[d.doc_id], "style": style,
                                            "index": index, "query_type": a["type"], "length_rule": LENGTH_RULES[a["length"]]}))
            owners.append((d.doc_id, style))
    chosen: dict[str, tuple[int, str, str, dict]] = {}   # doc -> (copied n-grams, text, style, record)
    for (doc_id, style), outcome in zip(owners, engine.run(stage["rewrite"], asks)):
        if outcome.status != "ok":
            continue
        text = outcome.data["query"].strip()
        copied = copied_ngrams(text, shown[doc_id], language)
        outcome.record["copied_4grams"] = copied
        if doc_id not in chosen or copied < chosen[doc_id][0]:
            chosen[doc_id] = (copied, text, style, outcome.record)
    going = [d for d in going if d.doc_id in chosen]
    for doc_id, (_, _, _, record) in chosen.items():
        record["produced"] = [qid[doc_id]]

    negatives: dict[str, list[Doc]] = {}
    if options.negatives:
        count = {d.doc_id: rng_for(seed, "negatives", d.doc_id).randint(*NEGATIVES) for d in going}
        outcomes = engine.run(stage["negatives"], [
            Ask(qid[d.doc_id], {"document": shown[d.doc_id], "query": chosen[d.doc_id][1], "count": count[d.doc_id]},
                negatives_schema(count[d.doc_id])) for d in going])
        for d, outcome in zip(going, outcomes):
            if outcome.status != "ok":
                continue
            documents = outcome.data["documents"]
            made = [Doc(f"{qid[d.doc_id]}-neg{i}", n["title"].strip(), n["text"].strip()) for i, n in enumerate(documents)]
            outcome.record["produced"] = [m.doc_id for m in made]
            negatives[d.doc_id] = made
        going = [d for d in going if d.doc_id in negatives]

    histograms = {name: Counter() for name in ("length", "type", "information", "style", "negatives", "words")}
    result = Generated(corpus=list(corpus), queries={}, qrels={}, histograms=histograms,
                       incomplete=len(positives) - len(going), language=options.language)
    for d in going:
        query_id, (copied, text, style, _) = qid[d.doc_id], chosen[d.doc_id]
        a = attributes[d.doc_id]
        result.queries[query_id] = {"_id": query_id, "text": text, "metadata": {
            **a, "style": style, "positive": d.doc_id, "copied_4grams": copied,
            "character": character[d.doc_id], "scenario": scenario[d.doc_id], "first_query": query_text[d.doc_id]}}
        result.qrels[query_id] = {d.doc_id: 1}
        for name in ("length", "type", "information"):
            histograms[name][a[name]] += 1
        histograms["style"][style] += 1
        histograms["words"][_length_bucket(word_count(text))] += 1
        if options.negatives:
            made = negatives[d.doc_id]
            result.corpus.extend(made)
            result.hard_negatives[query_id] = [m.doc_id for m in made]
            result.qrels[query_id].update({m.doc_id: 0 for m in made})
            histograms["negatives"][str(len(made))] += 1
    return result


def _default_types() -> dict[str, int]:
    from irforge.generation.sampling import TYPES

    return TYPES


def _length_bucket(count: int) -> str:
    """The words the final query actually has, in the sampled buckets (what the LLM did)."""
    return "<5" if count < 5 else "<10" if count < 10 else "10-20" if count <= 20 else ">=20"
