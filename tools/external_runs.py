"""Two BM25 runs made outside irforge, for trying `irforge eval/bench --run` on a BEIR folder when no
run from your own stack is at hand: bm25s (Lucene's BM25, English stopwords and Snowball stemming;
note that irforge's embedded BM25 is built on bm25s too) written as a TREC run, and rank_bm25's
BM25Okapi (lower-cased word tokens, no stemming) written as Pyserini/ranx JSON.

    python tools/external_runs.py DATASET OUT [--split test] [--depth 100]

OUT gets bm25s.trec and rank_bm25.json (the split's queries, top DEPTH each).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from rank_bm25 import BM25Okapi

from irforge.data import BeirDataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    source = BeirDataset.open(args.dataset)
    qrels = source.qrels(args.split)
    documents = list(source.corpus())
    queries = [q for q in source.queries() if q.query_id in qrels]
    ids = [d.doc_id for d in documents]
    args.out.mkdir(parents=True, exist_ok=True)

    stemmer = Stemmer.Stemmer("english")
    index = bm25s.BM25()
    index.index(bm25s.tokenize([d.full_text for d in documents], stopwords="en", stemmer=stemmer, show_progress=False),
                show_progress=False)
    found, scores = index.retrieve(bm25s.tokenize([q.text for q in queries], stopwords="en", stemmer=stemmer,
                                                  show_progress=False), k=min(args.depth, len(ids)), show_progress=False)
    with open(args.out / "bm25s.trec", "w") as handle:
        for query, row, row_scores in zip(queries, found, scores):
            for rank, (n, score) in enumerate(zip(row, row_scores), 1):
                handle.write(f"{query.query_id} Q0 {ids[n]} {rank} {float(score)!r} bm25s-{bm25s.__version__}\n")

    def words(text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    okapi = BM25Okapi([words(d.full_text) for d in documents])
    run = {}
    for query in queries:
        query_scores = okapi.get_scores(words(query.text))
        run[query.query_id] = {ids[n]: float(query_scores[n]) for n in np.argsort(-query_scores, kind="stable")[:args.depth]}
    (args.out / "rank_bm25.json").write_text(json.dumps(run))
    print(f"wrote {args.out / 'bm25s.trec'} and {args.out / 'rank_bm25.json'}: {len(queries)} queries, top {args.depth}")


if __name__ == "__main__":
    main()
