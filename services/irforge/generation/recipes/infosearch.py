"""`infosearch`: InfoSearch instruction sets from an existing BEIR collection (../shared/PRODUCT.md §6).

`--corpus` is a BEIR folder with queries and qrels (`--source-split`, default test). `--docs N`
core queries with a positive are sampled (seeded); each one's gold document g is its highest
labelled positive (ties: the smallest id). For each `--dimension`:

  condition              a condition on g's <dimension> that g satisfies
  instructed_query       the instruction a user adds to the query for it (instruction_changed)
  reversed_instruction   the same request negated (instruction_reversed)
  doc_rewrite            (format, length, source, language only) g' = g rewritten so that it does
                         not meet the condition, same subject (id `<g>-<dimension>`)

Labels, per InfoSearch's modes: og {g: 1, g': 1}, changed {g: 1, g': 0}, reversed {g: 0, g': 1}
(audience and keyword, which need no rewrite: og {g: 1}, changed {g: 1}, reversed {g: 0}). The
other positives of a core query stay in the corpus unlabelled: whether they meet the condition is
not known. Every stage is asked to write in the corpus's language (generation.language; the
language dimension's rewrite is asked for another one by its condition). Written in the InfoSearch layout irforge evaluates (instructions/collection.py): one
sub-folder per dimension with corpus.jsonl, queries.jsonl (`instruction_og` "",
`instruction_changed`, `instruction_reversed`, `dimension`), qrels_og/, qrels_changed/,
qrels_reversed/<split>.tsv. A query enters a dimension only when its whole chain answered.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from irforge.analysis.detect import Detection
from irforge.data import BeirDataset
from irforge.generation.documents import Doc
from irforge.generation.engine import Ask, Engine, Stage
from irforge.generation.recipes.airbench import MAX_DOCUMENT_CHARS
from irforge.generation.recipes.airbench_qa import sample
from irforge.generation.settings import RecipeSettings
from irforge.generation.language import generation_language, language_name
from irforge.generation.templates import load_template, system_message

LAYOUT = "infosearch"
HARD_NEGATIVES = False
DIMENSIONS = {
    "audience": "who the document is written for: experts, practitioners, students, the general public",
    "keyword": "a specific term the document mentions",
    "format": "how the text is laid out: prose, a list of points, questions and answers, a table",
    "language": "the language it is written in",
    "length": "how long it is: a sentence, a paragraph, a long text",
    "source": "what kind of publication it comes from: a research article, news, a forum post, an encyclopedia",
}
REWRITTEN = ("format", "language", "length", "source")


def _object(**properties) -> dict:
    return {"type": "object", "additionalProperties": False, "required": sorted(properties),
            "properties": {name: {"type": "string", "minLength": 1 if name != "title" else 0} for name in properties}}


STAGES = {
    "condition": ({"query", "document", "dimension", "dimension_rule"}, _object(condition=1), 100),
    "instructed_query": ({"query", "condition"}, _object(instruction=1), 100),
    "reversed_instruction": ({"query", "instruction"}, _object(instruction=1), 100),
    "doc_rewrite": ({"document", "condition", "dimension", "dimension_rule"}, _object(title=1, text=1), 1500),
}


@dataclass
class Dimension:
    corpus_additions: list[Doc] = field(default_factory=list)
    queries: dict[str, dict] = field(default_factory=dict)
    qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=lambda: {m: {} for m in ("og", "changed", "reversed")})


@dataclass
class InstructionSets:
    corpus: list[Doc]
    dimensions: dict[str, Dimension]
    histograms: dict[str, Counter]
    details: dict
    incomplete: int
    language: Detection | None = None

    @property
    def queries(self) -> dict[str, dict]:
        """Every dimension's queries, keyed `<dimension>/<query id>` (counts, provenance)."""
        return {f"{name}/{q}": query for name, dim in self.dimensions.items() for q, query in dim.queries.items()}


def generate(engine: Engine, settings: RecipeSettings) -> InstructionSets:
    dataset = BeirDataset.open(settings.corpus)
    qrels = dataset.qrels(settings.source_split)
    texts = {q.query_id: q.text for q in dataset.queries()}
    corpus = [Doc(d.doc_id, d.title, d.text) for d in dataset.corpus()]
    language = generation_language(settings.corpus, corpus, settings.language)
    by_id = {d.doc_id: d for d in corpus}
    with_gold = {q: judged for q, judged in qrels.items() if q in texts and any(v > 0 and d in by_id for d, v in judged.items())}
    core = sample(list(with_gold), settings.docs, settings.seed, purpose="core-queries")
    gold = {q: min((d for d, v in with_gold[q].items() if v > 0 and d in by_id), key=lambda d: (-with_gold[q][d], d))
            for q in core}
    # One core query per gold document: a rewrite of g is made for one query's condition and
    # labelled for that query; a second query sharing g would get labels for another's rewrite.
    taken: dict[str, str] = {}
    for q in core:
        taken.setdefault(gold[q], q)
    shared_gold = len(core) - len(taken)
    core = [q for q in core if taken[gold[q]] == q]
    system = system_message(language_name(language))
    stage = {name: Stage(name, load_template(name, fields, settings.templates), schema, tokens, system)
             for name, (fields, schema, tokens) in STAGES.items()}
    dimensions = list(settings.dimensions or DIMENSIONS)
    shown = {q: by_id[gold[q]].full_text[:MAX_DOCUMENT_CHARS] for q in core}
    sets, histograms, incomplete = {}, {"dimension": Counter()}, 0
    for name in dimensions:
        rule, subject = DIMENSIONS[name], (lambda q, name=name: f"{name}/{q}")
        going = list(core)

        def step(stage_name, inputs_of):
            nonlocal going
            outcomes = engine.run(stage[stage_name], [Ask(subject(q), inputs_of(q)) for q in going])
            answers = {q: o for q, o in zip(going, outcomes) if o.status == "ok"}
            going = [q for q in going if q in answers]
            return answers

        condition = step("condition", lambda q: {"query": texts[q], "document": shown[q], "dimension": name,
                                                 "dimension_rule": rule})
        instructed = step("instructed_query", lambda q: {"query": texts[q], "condition": condition[q].data["condition"]})
        reversed_ = step("reversed_instruction", lambda q: {"query": texts[q],
                                                            "instruction": instructed[q].data["instruction"]})
        rewrites = step("doc_rewrite", lambda q: {"document": shown[q], "condition": condition[q].data["condition"],
                                                  "dimension": name, "dimension_rule": rule}) if name in REWRITTEN else {}
        dimension = Dimension()
        for q in going:
            g = gold[q]
            instructed[q].record["produced"] = [f"{name}/{q}"]
            dimension.queries[q] = {"_id": q, "text": texts[q], "instruction_og": "",
                                    "instruction_changed": instructed[q].data["instruction"].strip(),
                                    "instruction_reversed": reversed_[q].data["instruction"].strip(),
                                    "dimension": name, "metadata": {"gold": g, "condition": condition[q].data["condition"]}}
            labels = {"og": {g: 1}, "changed": {g: 1}, "reversed": {g: 0}}
            if name in REWRITTEN:
                other = Doc(f"{g}-{name}", rewrites[q].data["title"].strip(), rewrites[q].data["text"].strip())
                if other.doc_id not in {d.doc_id for d in dimension.corpus_additions}:
                    dimension.corpus_additions.append(other)
                rewrites[q].record["produced"] = [other.doc_id]
                labels["og"][other.doc_id], labels["changed"][other.doc_id], labels["reversed"][other.doc_id] = 1, 0, 1
            for mode, judged in labels.items():
                dimension.qrels[mode][q] = judged
        histograms["dimension"][name] = len(going)
        incomplete += len(core) - len(going)
        sets[name] = dimension
    return InstructionSets(corpus, sets, histograms, {"core_queries": len(core), "skipped_sharing_a_gold_document": shared_gold,
                                                      "source_split": settings.source_split,
                                                      "dimensions": dimensions}, incomplete, language)
