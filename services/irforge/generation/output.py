"""Writing a generated collection: BEIR (or the InfoSearch layout), provenance.jsonl, generation.json.

    folder/corpus.jsonl, queries.jsonl, qrels/dev.tsv, qrels/test.tsv     (BEIR; dev : test = 1 : 4)
    folder/<dimension>/corpus.jsonl, queries.jsonl, qrels_og|changed|reversed/<split>.tsv   (infosearch)
    folder/dataset.json             the language the collection is written in ({"language": "zh"})
    folder/hard_negatives.tsv       generated hard negatives (query-id, corpus-id), what QC is told
    folder/provenance.jsonl         every call: stage, subject, template hash, model, raw answers, status
    folder/generation.json          the manifest (MANIFEST_NAME): recipe, seeds, model, templates,
                                    counts per stage, attribute histograms, cost, QC, splits

`irforge eval` records the manifest's key facts in results.json data.generation
(irforge.data.generation_manifest.generation_facts, which also names the manifest: MANIFEST_NAME).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from irforge.generation.collection import Generated, split_queries
from irforge.generation.language import write_dataset_json

PROVENANCE_NAME = "provenance.jsonl"
HARD_NEGATIVES_NAME = "hard_negatives.tsv"


def write_jsonl(path: Path, rows) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def write_qrels(folder: Path, split_of: dict[str, str], qrels: dict[str, dict[str, int]]) -> dict[str, int]:
    """qrels/<split>.tsv for every split with queries (a split without any has no file: BEIR has no
    empty qrels); lines per split."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = {}
    for split in ("dev", "test"):
        if not any(split_of.get(q) == split for q in qrels):
            continue
        with (folder / f"{split}.tsv").open("w", encoding="utf-8") as handle:
            handle.write("query-id\tcorpus-id\tscore\n")
            lines[split] = 0
            for query_id in sorted(q for q in qrels if split_of.get(q) == split):
                for doc_id, label in sorted(qrels[query_id].items()):
                    handle.write(f"{query_id}\t{doc_id}\t{label}\n")
                    lines[split] += 1
    return lines


def write_beir(folder: Path, generated: Generated, seed: int) -> dict:
    split_of = split_queries(list(generated.queries), seed)
    if generated.language is not None:
        write_dataset_json(folder, generated.language)
    documents = write_jsonl(folder / "corpus.jsonl", (d.as_json() for d in generated.corpus))
    write_jsonl(folder / "queries.jsonl", (generated.queries[q] | {"metadata": {**generated.queries[q]["metadata"],
                                                                               "split": split_of[q]}}
                                           for q in sorted(generated.queries)))
    lines = write_qrels(folder / "qrels", split_of, generated.qrels)
    with (folder / HARD_NEGATIVES_NAME).open("w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\n")
        for query_id in sorted(generated.hard_negatives):
            for doc_id in generated.hard_negatives[query_id]:
                handle.write(f"{query_id}\t{doc_id}\n")
    return {"documents": documents, "queries": len(generated.queries),
            "splits": dict(sorted(Counter(split_of.values()).items())), "qrels_lines": lines,
            "hard_negatives": sum(len(v) for v in generated.hard_negatives.values())}


def write_instruction_sets(folder: Path, sets, seed: int) -> dict:
    counts = {}
    for name, dimension in sets.dimensions.items():
        root = folder / name
        root.mkdir()
        if sets.language is not None:
            write_dataset_json(root, sets.language)
        split_of = split_queries(list(dimension.queries), seed)
        documents = write_jsonl(root / "corpus.jsonl", (d.as_json() for d in [*sets.corpus, *dimension.corpus_additions]))
        write_jsonl(root / "queries.jsonl", (dimension.queries[q] for q in sorted(dimension.queries)))
        for mode, qrels in dimension.qrels.items():
            write_qrels(root / f"qrels_{mode}", split_of, qrels)
        counts[name] = {"documents": documents, "documents_added": len(dimension.corpus_additions),
                        "queries": len(dimension.queries), "splits": dict(sorted(Counter(split_of.values()).items()))}
    return {"dimensions": counts, "queries": sum(c["queries"] for c in counts.values())}


def write_provenance(folder: Path, records: list[dict]) -> int:
    order = sorted(records, key=lambda r: (r["subject"], r["stage"], r["cache_key"]))
    return write_jsonl(folder / PROVENANCE_NAME, order)


def answer_summary(records: list[dict]) -> dict:
    """Every stage's answers together: how many were asked, usable (ok), unusable (unparsed: never
    valid for the stage's schema; failed: no answer), not sent; and the commonest reasons why not."""
    statuses = Counter(record["status"] for record in records)
    unusable = [record for record in records if record["status"] in ("unparsed", "failed")]
    return {"asked": len(records), "ok": statuses["ok"], "unusable": len(unusable), "unparsed": statuses["unparsed"],
            "failed": statuses["failed"], "not_sent": statuses["not_sent"],
            "reasons": dict(Counter(_reason(record["error"]) for record in unusable).most_common(3))}


def describe_unusable(records: list[dict]) -> str:
    """'4 unparsed: not valid after 2 answers; last: not JSON; 1 failed: HTTP 500 ...' (the commonest reason of each)."""
    parts = []
    for status in ("unparsed", "failed"):
        reasons = Counter(_reason(r["error"]) for r in records if r["status"] == status)
        if reasons:
            parts.append(f"{sum(reasons.values())} {status}: {reasons.most_common(1)[0][0]}")
    return "; ".join(parts)


def no_query_reason(stage_order: list[str], records: list[dict], stopped: str | None) -> str:
    """Why a generation has no query: the first stage none of whose answers was usable, or else the
    answers lost along the chains, or the stop that came first. The raw answers are in provenance.jsonl."""
    for stage in stage_order:
        mine = [r for r in records if r["stage"] == stage and r["status"] != "not_sent"]
        if not mine and stopped:
            break
        if mine and not any(r["status"] == "ok" for r in mine):
            return f"no usable query: all {len(mine)} answers of stage {stage} were unusable ({describe_unusable(mine)})"
    summary = answer_summary(records)
    if stopped:
        return f"no usable query: generation stopped ({stopped}) before any chain of stages finished"
    return (f"no usable query: {summary['unusable']} of {summary['asked']} answers were unusable "
            f"({describe_unusable(records)}) and no chain of stages finished")


def _reason(error: str) -> str:
    """An answer's error without its particulars (a parser's line and column), so that alike ones count together."""
    return re.sub(r"\s*\(.*$", "", error or "unknown")[:160]
