"""Approximate search that states its recall: with --search hnsw, a seeded sample of the queries
is searched exactly too, and recall@k (the share of each query's exact top k that the approximate
top k also holds, averaged over the sample) is recorded beside the metrics. With --target-recall,
the HNSW search width (ef) is the smallest of EF_LADDER whose recall reaches the target on the
sample, or the run is refused with the best recall found. Widths below k are skipped: Qdrant
searches with max(ef, limit), so they all search as ef = k would (SciFact at k = 1,000 measured the
same recall at ef 16 and 128).

Why a sample: exact search of every query would cost what HNSW saves; 100 queries put the
estimate within a few points (binomial, per query k hits), enough to tell 0.99 from 0.73.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import numpy as np

from irforge.corpus.errors import CorpusError

SEED = 0
EF_LADDER = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


class TargetRecallNotReached(CorpusError):
    """--target-recall asks for more than the HNSW graph gives at any search width tried."""


def sample_rows(count: int, size: int, seed: int = SEED) -> np.ndarray:
    """`size` of range(count), drawn without replacement by a seeded generator, in ascending order."""
    if size >= count:
        return np.arange(count)
    return np.sort(np.random.default_rng(seed).choice(count, size=size, replace=False))


def recall_at_k(approximate: Mapping[str, Mapping], exact: Mapping[str, Mapping], k: int) -> float | None:
    """Mean over the queries with an exact answer of |approximate top k ∩ exact top k| / |exact top k|;
    None when no query has one. Both are query id -> ranking (a mapping in rank order)."""
    shares = []
    for query_id, truth in exact.items():
        wanted = list(truth)[:k]
        if wanted:
            found = set(list(approximate.get(query_id, ()))[:k])
            shares.append(len(found.intersection(wanted)) / len(wanted))
    return float(np.mean(shares)) if shares else None


def widths(k: int) -> tuple[int, ...]:
    """The search widths tried for a top k: EF_LADDER from the first at least k (its last at most)."""
    return tuple(ef for ef in EF_LADDER if ef >= k) or EF_LADDER[-1:]


def choose_width(measure: Callable[[int], float | None], target: float, k: int, what: str) -> tuple[int, list[dict]]:
    """(ef, every width tried with its recall): the first of widths(k) whose measured recall reaches
    `target`. Raises TargetRecallNotReached with the best recall found when none does."""
    tried: list[dict] = []
    ladder = widths(k)
    for ef in ladder:
        recall = measure(ef)
        tried.append({"hnsw_ef": ef, f"recall@{k}": recall})
        if recall is None or recall >= target:
            return ef, tried
    best = max(tried, key=lambda t: t[f"recall@{k}"])
    raise TargetRecallNotReached(
        f"--target-recall {target:g}: HNSW search reached at most recall@{k} {best[f'recall@{k}']:.4f} (at --hnsw-ef "
        f"{best['hnsw_ef']}, widths {ladder[0]}..{ladder[-1]} tried) against exact search on {what}; build a "
        f"denser graph (--hnsw-m, --hnsw-ef-construct), lower the target, or use --search exact")


def measured_width(corpus, collection_id: str, query_ids: list[str], vectors: np.ndarray, k: int, *,
                   use_ef: Callable[[int], None], ef: int, sample: int, target: float | None) -> dict | None:
    """Set the collection's HNSW width (`use_ef`): `ef`, or with `target` the one choose_width picks;
    the recall record of results.json (None when no query is sampled). `corpus` is a CorpusService
    (or its client): vector_search(collection, ids, vectors, k, exact)."""
    started = time.perf_counter()
    rows = sample_rows(len(query_ids), sample)
    if not len(rows):
        use_ef(ef)
        return None
    sample_ids = [query_ids[row] for row in rows]
    exact = dict(corpus.vector_search(collection_id, sample_ids, vectors[rows], k, True))

    def measure(width: int) -> float | None:
        use_ef(width)
        return recall_at_k(dict(corpus.vector_search(collection_id, sample_ids, vectors[rows], k, False)), exact, k)

    tried = None
    if target is not None:
        ef, tried = choose_width(measure, target, k, f"{len(rows)} sampled queries (seed {SEED})")
        recall = tried[-1][f"recall@{k}"]
    else:
        recall = measure(ef)
    return {"k": k, f"recall@{k}": recall, "queries_sampled": len(rows), "seed": SEED, "hnsw_ef": ef,
            "against": "exact search of the same vectors", "target": target, **({"tried": tried} if tried else {}),
            "seconds": round(time.perf_counter() - started, 3), "query_ids": sample_ids}


def recall_lines(retriever: dict) -> list[str]:
    """The line eval's table prints under the metrics for each approximate search in `retriever`."""
    lines = []
    for search in _searches(retriever):
        recall = search.get("recall") if isinstance(search, dict) else None
        if not recall:
            continue
        k = recall["k"]
        value = recall[f"recall@{k}"]
        shown = "not measured (no sampled query has an exact answer)" if value is None else f"{value:.4f}"
        target = f", chosen for --target-recall {recall['target']:g}" if recall.get("target") is not None else ""
        lines.append(f"HNSW recall@{k} against exact search: {shown} on {recall['queries_sampled']} sampled queries "
                     f"(seed {recall['seed']}) at ef {recall['hnsw_ef']}{target}")
    return lines


def search_recall(retriever: dict) -> dict | None:
    """results.json's `search_recall`: the (first) approximate search's recall record in `retriever`."""
    for search in _searches(retriever):
        if isinstance(search, dict) and search.get("recall"):
            return search["recall"]
    return None


def _searches(retriever: dict):
    """Every dense retriever's `search` field in a description (itself, a hybrid's side, a first stage)."""
    if not isinstance(retriever, dict):
        return
    if "search" in retriever:
        yield retriever["search"]
    for part in ("dense", "first_stage"):
        if isinstance(retriever.get(part), dict):
            yield from _searches(retriever[part])
    for run in retriever.get("runs") or ():
        yield from _searches(run)
