"""An independent BM25 for the multilingual checks: nothing of irforge's analysis, index or evaluator.

Its own tokeniser (NFKC, lowercase, a character-category loop; Chinese, Japanese, Korean and
Thai as character bigrams), the pure-Python Snowball stemmers of `snowballstemmer` (the same
algorithms as PyStemmer's C, another implementation; imported from their modules, as
snowballstemmer.stemmer() hands out PyStemmer when it is installed), no stopwords, rank_bm25's
BM25Okapi (another IDF), and nDCG@10 computed here from its definition.
"""

from __future__ import annotations

import functools
import gzip
import importlib
import json
import math
import unicodedata
from pathlib import Path

from rank_bm25 import BM25Okapi

DATA = Path(__file__).resolve().parent / "data"
STEMMERS = {"ar": "arabic", "de": "german", "el": "greek", "en": "english", "es": "spanish", "hi": "hindi",
            "ro": "romanian", "ru": "russian", "tr": "turkish"}
UNSPACED = ((0x0E00, 0x0E7F), (0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF))


def _unspaced(c: str) -> bool:
    return any(low <= ord(c) <= high for low, high in UNSPACED)


def tokens(text: str, language: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    out, word, run = [], [], []

    def flush():
        if word:
            out.append("".join(word))
            word.clear()
        if run:
            out.extend(["".join(run)] if len(run) == 1 else ["".join(run[i:i + 2]) for i in range(len(run) - 1)])
            run.clear()

    for c in text:
        if _unspaced(c):
            if word:
                out.append("".join(word))
                word.clear()
            run.append(c)
        elif unicodedata.category(c)[0] in "LMN":
            if run:
                flush()
            word.append(c)
        else:
            flush()
    flush()
    stemmer = _stemmer(language)
    return [stemmer.stemWord(t) for t in out] if stemmer else out


@functools.cache
def _stemmer(language: str):
    if language not in STEMMERS:
        return None
    name = STEMMERS[language]
    return getattr(importlib.import_module(f"snowballstemmer.{name}_stemmer"), f"{name.capitalize()}Stemmer")()


def read(folder: Path) -> tuple[list[dict], list[dict], dict[str, set[str]]]:
    corpus = [json.loads(line) for line in gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8")]
    queries = [json.loads(line) for line in gzip.open(folder / "queries.jsonl.gz", "rt", encoding="utf-8")]
    qrels: dict[str, set[str]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query_id, doc_id, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(query_id, set()).add(doc_id)
    return corpus, queries, qrels


def ndcg_at_10(folder: Path, language: str, first: int | None = None) -> dict[str, float]:
    """nDCG@10 per judged query (the `first` ones, or all) of the reference BM25 (k1 0.9, b 0.4)."""
    corpus, queries, qrels = read(folder)
    doc_ids = [d["_id"] for d in corpus]
    bm25 = BM25Okapi([tokens(f"{d.get('title', '')} {d['text']}", language) for d in corpus], k1=0.9, b=0.4)
    per_query = {}
    judged = [q for q in queries if q["_id"] in qrels][:first]
    for query in judged:
        scores = bm25.get_scores(tokens(query["text"], language))
        top = sorted(range(len(doc_ids)), key=lambda i: (-scores[i], doc_ids[i]))[:10]
        relevant = qrels[query["_id"]]
        dcg = sum(1 / math.log2(rank + 2) for rank, i in enumerate(top) if scores[i] > 0 and doc_ids[i] in relevant)
        ideal = sum(1 / math.log2(rank + 2) for rank in range(min(10, len(relevant))))
        per_query[query["_id"]] = dcg / ideal
    return per_query
