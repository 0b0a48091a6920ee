"""A seeded sample of a BEIR collection, written as a BEIR folder (`irforge eval --sample N`):
N queries of the split, every document judged for them, and a seeded share of the other
documents (OTHERS_PER_QUERY per sampled query), so a first look at a model takes seconds
instead of the whole corpus's encoding.

The figures of a sample are not the dataset's: fewer distractors make retrieval easier, and N
queries are a noisy mean. results.json records the sample (`sample`) and the table says so.

Deterministic: the same folder, split, N and seed give the same queries and documents (ids are
drawn from sorted lists with random.Random(seed)). Documents are copied as their corpus lines,
byte for byte, so the embedding cache (keyed by text) serves a sample and the full run alike.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from irforge.data.airbench import AIRBENCH
from irforge.data.beir import BeirDataset
from irforge.data.textfile import numbered_lines

# Distractors per sampled query: with SciFact's ~1.1 judged documents a query, `--sample 50`
# keeps 302 of 5,183 documents: a MiniLM dense eval took 2 min 1 s on 2 shared CPU cores at load 9,
# 1/15 of the full corpus's time on the same machine (docs/paths.md). More would be closer to the
# dataset's figures and slower in proportion.
OTHERS_PER_QUERY = 5
DEFAULT_SEED = 0


class SampleError(ValueError):
    """A sample that cannot be drawn from this collection (too few queries, another layout)."""


@dataclass(frozen=True)
class Sample:
    folder: Path            # the sample, a BEIR folder named as the dataset
    record: dict            # results.json's `sample`


def write_sample(source: BeirDataset, split: str, queries: int, seed: int, folder: Path) -> Sample:
    """Draw the sample of `source`'s `split` and write it as folder/<source's name>/."""
    if source.layout is AIRBENCH:
        raise SampleError(f"--sample needs a BEIR-layout folder; {source.root} is in AIR-Bench's layout")
    qrels = source.qrels(split)
    known = {query.query_id for query in source.queries()}   # checks every line, as an eval would
    query_lines = {}
    for _, line in numbered_lines(source.queries_path, "queries file"):
        query_id = _id(line)
        if query_id in qrels and query_id in known:
            query_lines[query_id] = line
    if queries >= len(query_lines):
        raise SampleError(f"--sample {queries}: the {split} split has {len(query_lines)} queries; evaluate them all "
                          "without --sample (a sample must be smaller than the split)")
    chance = random.Random(seed)
    chosen = sorted(chance.sample(sorted(query_lines), queries))
    judged = {doc_id for query_id in chosen for doc_id in qrels[query_id]}
    corpus_ids = [document.doc_id for document in source.corpus()]   # also checks every line, as an eval would
    others = [doc_id for doc_id in corpus_ids if doc_id not in judged]
    kept_others = set(chance.sample(others, min(len(others), OTHERS_PER_QUERY * queries)))
    kept = judged | kept_others

    root = folder / source.name
    (root / "qrels").mkdir(parents=True)
    for extra in source.root.glob("*.json"):   # dataset.json (language), source.json (ir_datasets name)
        shutil.copyfile(extra, root / extra.name)
    written = 0
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as out:
        for _, line in numbered_lines(source.corpus_path, "corpus file"):
            if _id(line) in kept:
                out.write(line.rstrip("\r\n") + "\n")
                written += 1
    with open(root / "queries.jsonl", "w", encoding="utf-8") as out:
        out.writelines(query_lines[query_id].rstrip("\r\n") + "\n" for query_id in chosen)
    with open(root / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for query_id in chosen:
            out.writelines(f"{query_id}\t{doc_id}\t{grade}\n" for doc_id, grade in sorted(qrels[query_id].items()))
    record = {
        "queries": queries, "queries_in_split": len(query_lines), "seed": seed,
        "documents": written, "documents_in_corpus": len(corpus_ids),
        "judged_documents": len(judged & set(corpus_ids)), "other_documents": len(kept_others),
        "others_per_query": OTHERS_PER_QUERY, "source": str(source.root.resolve()),
        "query_ids": chosen,
        "note": banner_text(queries, len(query_lines), written, len(corpus_ids), seed),
    }
    return Sample(root, record)


def banner_text(queries: int, of_queries: int, documents: int, of_documents: int, seed: int) -> str:
    return (f"SAMPLE: {queries:,} of {of_queries:,} queries, {documents:,} of {of_documents:,} documents (seed {seed}): "
            "these figures are not the dataset's")


def _id(line: str) -> str:
    return str(json.loads(line)["_id"])
