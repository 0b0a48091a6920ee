"""An instruction-following test collection built from BEIR SciFact, without an LLM.

    irforge build-instructions --source ../shared/data/beir/scifact --out DIR \\
        [--max-queries N] [--distractors N] [--layout infosearch|followir] [--force]

Every SciFact test query (a scientific claim) is asked in three modes over one corpus, as in
InfoSearch: original (no instruction), instructed, reversely instructed. Each relevant abstract d
gets a second version that differs from it in one document-level attribute only, so that both
are about the query (both relevant in the original mode) and the instruction alone decides which
one is wanted. Two dimensions, each in its own sub-folder of OUT:

- keyword: a content term X of d is chosen (the highest tf-idf word of 6+ letters that is not in
  the query nor in d's title and sits in some, at most half, of d's sentences, never in the one
  closest to the query; exact rule in KEYWORD_DESCRIPTION); the added version `<d>-no-<x>` is d
  without the sentences that mention X. Instructed: "only documents that mention X"; reversed:
  "only documents that do not mention X". With several relevant abstracts, one term serves the
  whole query: each abstract is labelled by whether it mentions X, and each one that can lose X
  the same way gets its own -no-<x> version, so every label follows from the instruction.
- length: the added version `<d>-sentence-<k>` is d's title with its k-th sentence only, the one
  sharing most words with the query. Instructed asks for a single sentence or for the full
  abstract, alternating by query; reversed asks for the other one.

Each sub-folder holds corpus.jsonl (BEIR: _id, title, text), queries.jsonl (_id, text,
instruction_og "", instruction_changed, instruction_reversed, dimension; `keywords` = X for the
keyword dimension), qrels_og/test.tsv, qrels_changed/test.tsv and qrels_reversed/test.tsv. With
`--layout followir` the reversed field and folder are left out (FollowIR's two modes).
OUT/BUILD.json says what was built from what: source checksums, options, counts per dimension
and each dimension's labelling rule in words.

Text rules (deterministic, no model, no randomness):
- Sentences: an abstract is split where whitespace follows ".", "?" or "!" and an upper-case
  ASCII letter starts the next sentence (`SENTENCE_BOUNDARY`). SciFact abstracts are sentence
  lists joined with spaces, and a lower-case or digit start ("e.g. the", "et al. 2005", "Fig. 2")
  stays inside the sentence.
- Words (for "mentions X"): maximal runs of ASCII letters that are whole words, i.e. with no
  letter, digit or underscore on either side (`re.findall(r"\\b[A-Za-z]+\\b")`), compared in
  lower case. A document mentions X when X is one of the words of its title or text; this is the
  same as a case-insensitive `\\bX\\b` search.
- Overlap with the query (to choose d's key sentence): distinct lower-cased alphanumeric tokens
  (`[^\\W_]+`, so "A20" and "p53" count) outside a short stop-word list; ties go to the earlier
  sentence.

The SciFact corpus is streamed: a first pass keeps only the relevant abstracts, a second counts
the document frequency of the candidate terms only, a third copies the documents into each
dimension's corpus. OUT is built in a staging folder beside it and renamed into place at the end;
an existing non-empty OUT is refused, and `--force` replaces only an earlier build (a folder whose
BUILD.json this module wrote), never an arbitrary folder. This module decides what to write; the
files are written by `scifact_writer.py`, the command line is `cli/build_instructions_cmd.py`.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irforge.common.files import file_sha256
from irforge.common.output_set import OutputSet
from irforge.data.beir import BeirDataset
from irforge.data.types import Document
from irforge.instructions.scifact_writer import Item, ScifactBuildError, check_out, write_corpora, write_dimension

BUILDER = "irforge.instructions.scifact_build"
FORMAT_VERSION = 1
SPLIT = "test"
LAYOUTS = ("infosearch", "followir")
DIMENSIONS = ("keyword", "length")
MODES = {"infosearch": ("og", "changed", "reversed"), "followir": ("og", "changed")}

SENTENCE_BOUNDARY = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")
WORD = re.compile(r"\b[A-Za-z]+\b")
TOKEN = re.compile(r"[^\W_]+")
MIN_TERM_LENGTH = 6

STOPWORDS = frozenset("""
a about after all also an and any are as at be been being both but by can could did do does
during each few for from had has have having he her here his how i if in into is it its may
more most no nor not of on or other our out over own same she should so some such than that the
their them then there these they this those through to too under up very was we were what when
where which while who whom why will with would you your
""".split())
# Words of six letters or more that say nothing about a document's content: never a keyword.
FUNCTION_WORDS = frozenset("""
across additionally against almost already although always another around because before
behind beside besides between beyond cannot either enough especially further furthermore
hereby herein however indeed instead itself moreover neither nevertheless others otherwise
perhaps rather respectively several should similarly therefore thereby themselves though
through throughout thus toward towards unless whereas whether whichever within without
""".split())

SENTENCE_RULE = ("Abstracts are split into sentences where whitespace follows '.', '?' or '!' and an "
                 f"upper-case ASCII letter starts the next one (regex {SENTENCE_BOUNDARY.pattern}).")
WORD_RULE = ("A document mentions a term when the term is one of the whole words of its title or text, "
             f"compared in lower case (words: regex {WORD.pattern}; the same as a case-insensitive "
             "\\bterm\\b search).")

KEYWORD_DESCRIPTION = (
    "Keyword: for each query, a term X is taken from one of its relevant abstracts d: an ASCII-alphabetic "
    f"word of at least {MIN_TERM_LENGTH} letters that is not in the query, not in d's title and not a "
    "function word, that occurs in at least one and at most half of the sentences of d's text, but not "
    "in d's key sentence (the sentence sharing most words with the query, which therefore stays in both "
    "versions). Among such terms the one with the highest tf-idf is taken (its occurrences in d's text "
    "times log(SciFact corpus size / number of SciFact documents that mention it)), then the one in fewest "
    "sentences of d, then the longest, then the alphabetically first; d is the first relevant abstract, in "
    "qrels order, that has one. The added document <d>-no-<x> is d (same title) without the sentences that "
    "mention X. Every other relevant abstract of the query that mentions X in the same removable way also "
    "gets its <id>-no-<x> version. The query is skipped when no relevant abstract has such a term.")
KEYWORD_LABELS = {
    "og": "every relevant abstract and every added version: 1",
    "changed": "documents that mention X (title or text): 1; those that do not (the -no-<x> versions, and "
               "relevant abstracts without X): 0",
    "reversed": "the complement of changed on the same documents: those that do not mention X: 1; "
                "those that do: 0",
}
LENGTH_DESCRIPTION = (
    "Length: every relevant abstract d of the query gets an added document <d>-sentence-<k>: d's title "
    "and the k-th sentence of d's text only (k counted from 1), the sentence sharing most words with the "
    "query (ties: the earlier one). Queries are taken in qrels order and alternate: the 1st, 3rd, ... "
    "kept query's instruction asks for a single sentence and the reversed one for the full abstract; the "
    "2nd, 4th, ... the other way round. A query is skipped when one of its relevant abstracts has fewer "
    "than two sentences (it would be both a sentence and the full abstract).")
LENGTH_LABELS = {
    "og": "every relevant abstract and every one-sentence version: 1",
    "changed": "the versions of the asked length (one-sentence versions, or full abstracts): 1; the others: 0",
    "reversed": "the complement of changed on the same documents: the versions of the other length: 1",
}

INSTRUCTIONS = {
    "keyword": ('Only documents that mention the term "{term}" are relevant; documents that do not mention '
                "it are not relevant.",
                'Only documents that do not mention the term "{term}" are relevant; documents that mention '
                "it are not relevant."),
    "sentence": ("Only documents whose text is a single sentence are relevant; longer documents, such as "
                 "full abstracts, are not relevant."),
    "abstract": ("Only documents that give the full abstract, several sentences long, are relevant; "
                 "documents whose text is a single sentence are not relevant."),
}


# ---------------------------------------------------------------------------------------------
# Text rules


def split_sentences(text: str) -> list[str]:
    """The sentences of an abstract (see SENTENCE_RULE); each one is a substring of `text`."""
    return [s for s in (part.strip() for part in SENTENCE_BOUNDARY.split(text.strip())) if s]


def words(text: str) -> set[str]:
    """The lower-cased whole ASCII-alphabetic words of `text` (see WORD_RULE)."""
    return {w.lower() for w in WORD.findall(text)}


def mentions(document: Document, term: str) -> bool:
    return term.lower() in words(document.title) | words(document.text)


def content_tokens(text: str) -> set[str]:
    return {t for t in (t.lower() for t in TOKEN.findall(text)) if t not in STOPWORDS}


def key_sentence(sentences: list[str], query: str) -> int:
    """Index of the sentence sharing most content tokens with the query (the earliest on a tie)."""
    wanted = content_tokens(query)
    overlaps = [len(content_tokens(s) & wanted) for s in sentences]
    return overlaps.index(max(overlaps))


@dataclass(frozen=True)
class Abstract:
    """A relevant SciFact abstract, split once."""

    doc: Document
    sentences: tuple[str, ...]
    sentence_words: tuple[frozenset[str], ...]
    title_words: frozenset[str]
    term_counts: Counter[str]

    @classmethod
    def of(cls, doc: Document) -> "Abstract":
        sentences = tuple(split_sentences(doc.text))
        return cls(doc, sentences, tuple(frozenset(words(s)) for s in sentences), frozenset(words(doc.title)),
                   Counter(w.lower() for w in WORD.findall(doc.text)))

    def removable(self, term: str, protected: int) -> bool:
        """Whether `term` can be cut out of the text: it is not in the title nor in sentence
        `protected`, and it is in at least one sentence but at most half of them (the version
        without it keeps most of the abstract, so it stays about the query)."""
        found = sum(term in w for w in self.sentence_words)
        return (term not in self.title_words and term not in self.sentence_words[protected]
                and 1 <= found <= len(self.sentences) // 2)

    def without(self, term: str) -> Document:
        kept = [s for s, w in zip(self.sentences, self.sentence_words) if term not in w]
        return Document(f"{self.doc.doc_id}-no-{term}", self.doc.title, " ".join(kept))

    def sentence_version(self, index: int) -> Document:
        return Document(f"{self.doc.doc_id}-sentence-{index + 1}", self.doc.title, self.sentences[index])


def candidate_terms(abstract: Abstract, query_words: set[str], protected: int) -> set[str]:
    found = set().union(*abstract.sentence_words) if abstract.sentence_words else set()
    return {t for t in found
            if len(t) >= MIN_TERM_LENGTH and t.isascii() and t not in query_words and t not in FUNCTION_WORDS
            and abstract.removable(t, protected)}


# ---------------------------------------------------------------------------------------------
# Per-query plans


def _sentences_with(abstract: Abstract, term: str) -> int:
    return sum(term in w for w in abstract.sentence_words)


def _weight(abstract: Abstract, term: str, df: dict[str, int], documents: int) -> float:
    """tf-idf: the term's occurrences in the abstract's text times log(corpus size / its document count)."""
    return abstract.term_counts[term] * math.log(documents / max(df.get(term, 0), 1))


def plan_keyword(query_id: str, text: str, abstracts: list[Abstract], df: dict[str, int],
                 documents: int) -> Item | str:
    """The keyword item for a query, or the reason it is skipped."""
    query_words = words(text)
    protected = [key_sentence(list(a.sentences), text) for a in abstracts]
    term = None
    for abstract, keep in zip(abstracts, protected):
        terms = candidate_terms(abstract, query_words, keep)
        if terms:
            term = min(terms, key=lambda t: (-_weight(abstract, t, df, documents), _sentences_with(abstract, t),
                                             -len(t), t))
            break
    if term is None:
        return "no term qualifies"
    item = Item(query_id, text, INSTRUCTIONS["keyword"][0].format(term=term),
                INSTRUCTIONS["keyword"][1].format(term=term), extra={"keywords": term})
    for abstract, keep in zip(abstracts, protected):
        doc = abstract.doc
        has = mentions(doc, term)
        item.labels.append((doc.doc_id, 1, int(has), int(not has)))
        if has and abstract.removable(term, keep):
            version = abstract.without(term)
            if mentions(version, term):  # cannot happen: the title and every kept sentence lack the term
                raise ScifactBuildError(f"{version.doc_id} still mentions {term!r}")
            item.added.append((doc.doc_id, version))
            item.labels.append((version.doc_id, 1, 0, 1))
    return item


def plan_length(query_id: str, text: str, abstracts: list[Abstract], position: int) -> Item | str:
    """The length item for the `position`-th kept query (0-based: even asks for a sentence), or why not."""
    if any(len(a.sentences) < 2 for a in abstracts):
        return "a relevant abstract has fewer than two sentences"
    wants_sentence = position % 2 == 0
    asked, other = ("sentence", "abstract") if wants_sentence else ("abstract", "sentence")
    item = Item(query_id, text, INSTRUCTIONS[asked], INSTRUCTIONS[other])
    for abstract in abstracts:
        version = abstract.sentence_version(key_sentence(list(abstract.sentences), text))
        item.added.append((abstract.doc.doc_id, version))
        full, short = (0, 1) if wants_sentence else (1, 0)
        item.labels.append((abstract.doc.doc_id, 1, full, 1 - full))
        item.labels.append((version.doc_id, 1, short, 1 - short))
    return item


# ---------------------------------------------------------------------------------------------
# Build


def _read_source(dataset: BeirDataset) -> tuple[list[tuple[str, str, list[str]]], dict[str, int]]:
    """The test queries in qrels order as (id, text, relevant doc ids in qrels order), and the
    reasons for queries dropped before planning (no text, no relevant document)."""
    qrels = dataset.qrels(SPLIT)
    wanted = set(qrels)
    texts = {q.query_id: q.text for q in dataset.queries() if q.query_id in wanted}
    queries, dropped = [], {}
    for query_id, judged in qrels.items():
        relevant = [doc_id for doc_id, grade in judged.items() if grade >= 1]
        reason = ("not in queries.jsonl" if query_id not in texts else
                  "no relevant document" if not relevant else None)
        if reason:
            dropped[reason] = dropped.get(reason, 0) + 1
            continue
        queries.append((query_id, texts[query_id], relevant))
    return queries, dropped


def build(source: Path, out: Path, *, max_queries: int | None = None, distractors: int | None = None,
          layout: str = "infosearch", force: bool = False) -> dict[str, Any]:
    """Build the collection from the SciFact folder `source` into `out`; returns BUILD.json's content."""
    source, out = Path(source), Path(out)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if max_queries is not None and max_queries < 1:
        raise ValueError(f"max_queries must be at least 1, got {max_queries}")
    if distractors is not None and distractors < 0:
        raise ValueError(f"distractors must be 0 or more, got {distractors}")
    check_out(source, out, force, BUILDER)
    dataset = BeirDataset.open(source)
    queries, dropped = _read_source(dataset)

    # Pass 1 over the corpus: the relevant abstracts only.
    relevant_ids = {doc_id for _, _, docs in queries for doc_id in docs}
    abstracts = {doc.doc_id: Abstract.of(doc) for doc in dataset.corpus() if doc.doc_id in relevant_ids}

    # Pass 2: the document frequency of every term that could be chosen, and nothing else.
    candidates: set[str] = set()
    for _, text, docs in queries:
        query_words = words(text)
        for doc_id in docs:
            if doc_id in abstracts:
                a = abstracts[doc_id]
                candidates |= candidate_terms(a, query_words, key_sentence(list(a.sentences), text))
    df = dict.fromkeys(sorted(candidates), 0)
    documents = 0
    for doc in dataset.corpus():
        documents += 1
        for term in (words(doc.title) | words(doc.text)) & candidates:
            df[term] += 1

    plans: dict[str, list[Item]] = {d: [] for d in DIMENSIONS}
    skips: dict[str, dict[str, int]] = {d: dict(dropped) for d in DIMENSIONS}
    examined = {d: sum(dropped.values()) for d in DIMENSIONS}
    for query_id, text, docs in queries:
        for dimension in DIMENSIONS:
            if max_queries is not None and len(plans[dimension]) >= max_queries:
                continue
            examined[dimension] += 1
            if any(doc_id not in abstracts for doc_id in docs):
                result: Item | str = "a relevant document is not in the corpus"
            elif dimension == "keyword":
                result = plan_keyword(query_id, text, [abstracts[d] for d in docs], df, documents)
            else:
                result = plan_length(query_id, text, [abstracts[d] for d in docs], len(plans[dimension]))
            if isinstance(result, str):
                skips[dimension][result] = skips[dimension].get(result, 0) + 1
            else:
                result.extra = {"dimension": dimension, **result.extra}
                plans[dimension].append(result)
    del abstracts
    empty = [d for d in DIMENSIONS if not plans[d]]
    if empty:
        raise ScifactBuildError(f"no query qualifies for the {', '.join(empty)} dimension in {source}")

    summary: dict[str, Any] = {
        "builder": BUILDER,
        "format_version": FORMAT_VERSION,
        "source": str(source.resolve()),
        "source_corpus_sha256": dataset.corpus_fingerprint(),
        "source_queries_sha256": file_sha256(dataset.queries_path),
        "source_qrels_sha256": file_sha256(dataset.qrels_path(SPLIT)),
        "split": SPLIT,
        "options": {"max_queries": max_queries, "distractors": distractors, "layout": layout},
        "modes": list(MODES[layout]),
        "sentence_splitting": SENTENCE_RULE,
        "word_matching": WORD_RULE,
        "dimensions": {},
    }
    descriptions = {"keyword": (KEYWORD_DESCRIPTION, KEYWORD_LABELS), "length": (LENGTH_DESCRIPTION, LENGTH_LABELS)}
    with OutputSet(out, replaces=None) as staging:
        corpus_counts = write_corpora(dataset, staging, plans, distractors)
        for dimension in DIMENSIONS:
            judgements = write_dimension(staging / dimension, plans[dimension], MODES[layout], SPLIT)
            description, labels = descriptions[dimension]
            summary["dimensions"][dimension] = {
                "description": description,
                "labelling": {mode: labels[mode] for mode in MODES[layout]},
                "queries": len(plans[dimension]),
                "examined": examined[dimension],
                "skipped": sum(skips[dimension].values()),
                "skip_reasons": dict(sorted(skips[dimension].items())),
                **corpus_counts[dimension],
                "judgements": judgements,
            }
        (staging / "BUILD.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return summary
