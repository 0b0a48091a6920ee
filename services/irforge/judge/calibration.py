"""Calibration: how well a judge agrees with existing human labels, and the embedded judge's fit.

    irforge judge-calibrate --dataset DIR --sample N [--judge embedded|FILE] --out OUTDIR

1. Sample. Strata = the human levels (0 and each positive level of the split's qrels); each
   stratum gets an equal share of N (what a stratum lacks goes to the others). Non-positives are
   the qrels' judged-0 entries; when there are too few (SciFact's qrels hold positives only),
   documents BM25 retrieves in the top NEGATIVE_DEPTH for the query that carry no label are taken
   as non-relevant. That assumption is not always true (such documents are exactly the holes a
   judge exists to find), so agreement on them is a lower bound; calibration.json counts them.
2. Split by query (seeded): the fit part and the held-out part never share a query.
3. Embedded judge: fit the thresholds on the fit part (fit_thresholds), judge everything with them.
   Any other judge: nothing is fitted, the whole sample is held out.
4. Report agreement on the held-out part (the honest number) and on the fit part.

Scales: human levels are the dataset's (SciFact 0/1, NFCorpus 0/1/2); judge labels are 0-3.
Binary agreement: human level >= 1 vs judge label >= relevant_from. Graded agreement compares on
the judge's 0-3 scale after mapping human levels onto it (human_to_judge_scale). The confusion
matrix is human levels (rows, the dataset's own) x judge labels 0-3 (columns).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from irforge.judge.errors import JudgeError

NEGATIVE_DEPTH = 10           # BM25 depth from which unlabelled documents are drawn as non-relevant (where holes are)
JUDGE_LEVELS = (0, 1, 2, 3)


class CalibrationError(JudgeError, ValueError):
    """The sample cannot be drawn or scored (no positives, too few pairs, bad sample size)."""


# --- agreement ---------------------------------------------------------------------------------


def cohen_kappa(confusion: np.ndarray, weights: str | None = None) -> float | None:
    """Cohen's kappa of a square confusion matrix (rows: rater A, columns: rater B, same
    categories in the same order). weights None: unweighted; "linear" / "quadratic": weighted
    kappa for ordinal categories. None when undefined (chance agreement is total: both raters
    used one and the same category only)."""
    matrix = np.asarray(confusion, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"kappa needs a square confusion matrix, got shape {matrix.shape}")
    total = matrix.sum()
    if total == 0:
        return None
    size = matrix.shape[0]
    index = np.arange(size)
    if weights is None:
        disagreement = (index[:, None] != index[None, :]).astype(float)
    elif weights == "linear":
        disagreement = np.abs(index[:, None] - index[None, :]) / max(size - 1, 1)
    elif weights == "quadratic":
        disagreement = ((index[:, None] - index[None, :]) / max(size - 1, 1)) ** 2
    else:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    observed = (disagreement * matrix).sum() / total
    expected = (disagreement * np.outer(matrix.sum(axis=1), matrix.sum(axis=0))).sum() / total ** 2
    if expected == 0:
        return None
    return float(1.0 - observed / expected)


def confusion_matrix(rows: Sequence[int], columns: Sequence[int], row_levels: Sequence[int],
                     column_levels: Sequence[int]) -> np.ndarray:
    matrix = np.zeros((len(row_levels), len(column_levels)), dtype=int)
    row_index = {level: i for i, level in enumerate(row_levels)}
    column_index = {level: i for i, level in enumerate(column_levels)}
    for a, b in zip(rows, columns, strict=True):
        matrix[row_index[a], column_index[b]] += 1
    return matrix


def human_to_judge_scale(human_levels: Sequence[int], relevant_from: int) -> dict[int, int]:
    """Human level -> 0-3: 0 -> 0; the positive levels 1..H spread over relevant_from..3 (the top
    level always 3). SciFact (H=1): 1 -> 3. NFCorpus (H=2), relevant_from 2: 1 -> 2, 2 -> 3."""
    top = max(human_levels)
    mapping = {level: 0 for level in human_levels if level <= 0}
    for level in (h for h in human_levels if h > 0):
        mapping[level] = 3 if top == 1 else relevant_from + round((level - 1) * (3 - relevant_from) / (top - 1))
    return mapping


def agreement(human: Sequence[int], judge: Sequence[int], human_levels: Sequence[int], relevant_from: int) -> dict:
    """accuracy (binary), kappa_binary, kappa_graded (+ weighted), confusion, for one set of pairs."""
    if not human:
        return {"pairs": 0, "accuracy": None, "kappa_binary": None, "kappa_graded": None}
    human_binary = [int(h >= 1) for h in human]
    judge_binary = [int(j >= relevant_from) for j in judge]
    binary = confusion_matrix(human_binary, judge_binary, (0, 1), (0, 1))
    scale = human_to_judge_scale(human_levels, relevant_from)
    graded = confusion_matrix([scale[h] for h in human], judge, JUDGE_LEVELS, JUDGE_LEVELS)
    return {
        "pairs": len(human),
        "accuracy": float(np.trace(binary) / binary.sum()),
        "accuracy_graded": float(np.trace(graded) / graded.sum()),
        "kappa_binary": cohen_kappa(binary),
        "kappa_graded": cohen_kappa(graded),
        "kappa_graded_quadratic": cohen_kappa(graded, "quadratic"),
        "confusion": confusion_matrix(human, judge, sorted(human_levels), JUDGE_LEVELS).tolist(),
        "confusion_binary": binary.tolist(),
    }


# --- fitting the embedded judge's thresholds ---------------------------------------------------


def _best_binary_cut(scores: np.ndarray, relevant: np.ndarray) -> float:
    """The cut (score >= cut counts as relevant) maximising binary kappa; ties -> higher
    accuracy, then the lowest cut. Candidates: midpoints between consecutive distinct scores."""
    distinct = np.unique(scores)
    candidates = (distinct[:-1] + distinct[1:]) / 2.0 if len(distinct) > 1 else distinct
    best, best_key = float(candidates[0]), None
    for cut in candidates:
        predicted = scores >= cut
        matrix = confusion_matrix(relevant.astype(int), predicted.astype(int), (0, 1), (0, 1))
        kappa = cohen_kappa(matrix)
        key = (-math.inf if kappa is None else kappa, float(np.trace(matrix)))
        if best_key is None or key > best_key:
            best, best_key = float(cut), key
    return best


def _quantile_cuts(values: np.ndarray, count: int, low: float, high: float) -> list[float]:
    """`count` cut points splitting `values` (within [low, high)) into equal-count groups."""
    if count == 0:
        return []
    if len(values) == 0:
        return [low + (high - low) * (i + 1) / (count + 1) for i in range(count)]
    return [float(np.quantile(values, (i + 1) / (count + 1))) for i in range(count)]


def fit_thresholds(scores: Sequence[float], relevant: Sequence[bool], relevant_from: int = 2) -> tuple[float, float, float]:
    """Three ascending cuts. The relevant/not-relevant boundary (cut number relevant_from) is
    fitted to the human labels (max binary kappa). Binary human labels say nothing about the
    other boundaries, so they split each side into equal-count groups (with relevant_from 2: t1 is
    the median score below t2, t3 the median score at or above it). Deterministic."""
    scores = np.asarray(scores, dtype=float)
    relevant = np.asarray(relevant, dtype=bool)
    if len(scores) < 2 or relevant.all() or not relevant.any():
        raise CalibrationError("fitting thresholds needs both relevant and non-relevant pairs")
    if not 1 <= relevant_from <= 3:
        raise CalibrationError(f"relevant_from must be 1, 2 or 3, got {relevant_from}")
    boundary = _best_binary_cut(scores, relevant)
    span = float(scores.max() - scores.min()) or 1.0
    below = _quantile_cuts(scores[scores < boundary], relevant_from - 1, boundary - span, boundary)
    above = _quantile_cuts(scores[scores >= boundary], 3 - relevant_from, boundary, boundary + span)
    cuts = below + [boundary] + above
    # Strictly ascending even when a side has a single distinct score (cuts below the boundary
    # are always below it, so this never moves the fitted boundary up).
    for i in range(1, 3):
        if cuts[i] <= cuts[i - 1]:
            cuts[i] = float(np.nextafter(cuts[i - 1], np.inf))
    return (cuts[0], cuts[1], cuts[2])


# --- sampling ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelledPair:
    query_id: str
    doc_id: str
    human: int            # the dataset's level (0 for unlabelled BM25 documents)
    source: str           # "qrels" or "bm25-unlabelled"


def stratified_sample(strata: dict[int, list[LabelledPair]], size: int, seed: int) -> list[LabelledPair]:
    """An equal share of `size` per stratum (level), the shortfall of small strata given to the
    others in level order; within a stratum a seeded uniform sample. Sorted output."""
    if size <= 0:
        raise CalibrationError(f"--sample must be positive, got {size}")
    rng = random.Random(seed)
    pools = {level: sorted(pairs, key=lambda p: (p.query_id, p.doc_id)) for level, pairs in sorted(strata.items()) if pairs}
    quotas = {level: 0 for level in pools}
    remaining = min(size, sum(len(p) for p in pools.values()))
    while remaining:
        open_levels = [level for level in pools if quotas[level] < len(pools[level])]
        share = max(remaining // len(open_levels), 1)
        for level in open_levels:
            grant = min(share, len(pools[level]) - quotas[level], remaining)
            quotas[level] += grant
            remaining -= grant
    chosen = [pair for level, pool in pools.items() for pair in rng.sample(pool, quotas[level])]
    return sorted(chosen, key=lambda p: (p.query_id, p.doc_id))


def split_by_query(pairs: Sequence[LabelledPair], seed: int, held_out_share: float = 0.5) -> tuple[list[LabelledPair], list[LabelledPair]]:
    """(fit, held-out): a seeded shuffle of the query ids, the first share of them held out."""
    query_ids = sorted({p.query_id for p in pairs})
    random.Random(seed + 1).shuffle(query_ids)
    held = set(query_ids[: round(len(query_ids) * held_out_share)])
    return [p for p in pairs if p.query_id not in held], [p for p in pairs if p.query_id in held]


# A negatives run: (dataset, queries, depth) -> query id -> doc id -> score, BM25's top `depth`.
# The use case supplies it (irforge.app.calibration builds it with the one builder).
NegativesRun = Callable[[object, list, int], dict[str, dict[str, float]]]


def labelled_strata(qrels: dict[str, dict[str, int]], negatives_run: dict[str, dict[str, float]] | None) -> dict[int, list[LabelledPair]]:
    """Pairs by human level. Level 0 holds the qrels' judged-0 entries and, when a BM25 run is
    given, its unlabelled documents (never the query's own id, which BEIR drops)."""
    strata: dict[int, list[LabelledPair]] = {0: []}
    for query_id, judged in qrels.items():
        for doc_id, level in judged.items():
            strata.setdefault(max(level, 0), []).append(LabelledPair(query_id, doc_id, max(level, 0), "qrels"))
    for query_id, scores in (negatives_run or {}).items():
        judged = qrels.get(query_id, {})
        strata[0].extend(LabelledPair(query_id, doc_id, 0, "bm25-unlabelled")
                         for doc_id in scores if doc_id not in judged and doc_id != query_id)
    return strata


# --- the command -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CalibrationSettings:
    sample: int
    split: str = "test"
    seed: int = 13
    relevant_from: int = 2
    held_out_share: float = 0.5

    def __post_init__(self):
        if isinstance(self.sample, bool) or not isinstance(self.sample, int) or self.sample < 4:
            raise CalibrationError(f"--sample must be a whole number of at least 4 pairs, got {self.sample!r}")
        if self.relevant_from not in (1, 2, 3):
            raise CalibrationError(f"--relevant-from must be 1, 2 or 3, got {self.relevant_from!r}")
        if not 0.0 < self.held_out_share < 1.0:
            raise CalibrationError(f"the held-out share must be within (0, 1), got {self.held_out_share}")


def sampled_pairs(dataset, sample: list[LabelledPair], queries: dict[str, str], *,
                  error: type[Exception] = CalibrationError, what: str = "labelled") -> list:
    """The judge pairs of a drawn sample, their documents read in one pass over the corpus;
    `error` (naming the documents `what`) when a sampled document is not in the corpus."""
    from irforge.judge.base import JudgePair

    wanted = {p.doc_id for p in sample}
    documents = {d.doc_id: d.full_text for d in dataset.corpus() if d.doc_id in wanted}
    missing = sorted(wanted - set(documents))
    if missing:
        raise error(f"{dataset.corpus_path}: {len(missing)} {what} documents are not in the corpus "
                    f"(e.g. {missing[0]!r}); the qrels and corpus disagree")
    return [JudgePair(p.query_id, queries[p.query_id], p.doc_id, documents[p.doc_id]) for p in sample]


def calibrate(dataset_dir, settings: CalibrationSettings, backend, store=None, *, negatives_run: NegativesRun,
              progress=None) -> tuple[dict, object | None]:
    """Judge a stratified sample of human labels; fit the embedded judge's thresholds on the fit
    part. `negatives_run` retrieves the unlabelled documents that stand in for non-relevant ones
    when the qrels hold too few judged-0 pairs. Returns (the calibration.json content, the fitted
    Thresholds or None)."""
    from irforge.common.versions import package_versions
    from irforge.data import BeirDataset
    from irforge.judge.backends.embedded import EmbeddedJudge, Thresholds
    from irforge.judge.core import JudgeCore

    dataset = BeirDataset.open(dataset_dir)
    qrels = dataset.qrels(settings.split)
    queries = {q.query_id: q.text for q in dataset.queries() if q.query_id in qrels}
    qrels = {q: judged for q, judged in qrels.items() if q in queries}
    if not any(level > 0 for judged in qrels.values() for level in judged.values()):
        raise CalibrationError(f"{dataset.qrels_path(settings.split)}: no positive labels to calibrate against")
    judged_zero = sum(level <= 0 for judged in qrels.values() for level in judged.values())
    negatives = None
    if judged_zero < settings.sample:  # too few judged non-relevant pairs: unlabelled BM25 documents stand in
        negatives = negatives_run(dataset, [_query(q, t) for q, t in sorted(queries.items())], NEGATIVE_DEPTH)
    sample = stratified_sample(labelled_strata(qrels, negatives), settings.sample, settings.seed)
    fit_part, held_part = split_by_query(sample, settings.seed, settings.held_out_share)
    pairs = sampled_pairs(dataset, sample, queries)
    position = {(p.query_id, p.doc_id): i for i, p in enumerate(sample)}
    human_levels = sorted({0} | {level for judged in qrels.values() for level in judged.values() if level > 0})

    fitted = None
    if isinstance(backend, EmbeddedJudge):
        fit_scores = backend.scores([pairs[position[p.query_id, p.doc_id]] for p in fit_part])
        cuts = fit_thresholds(fit_scores, [p.human >= 1 for p in fit_part], settings.relevant_from)
        old = backend.thresholds
        fitted = Thresholds(cuts, model=old.model, score=old.score, cross_encoder=old.cross_encoder, fitted={
            "dataset": dataset.name, "split": settings.split, "pairs": len(fit_part), "seed": settings.seed,
            "relevant_from": settings.relevant_from, "sample": settings.sample,
            "how": "cut relevant_from maximises binary Cohen's kappa on the fit part; the other cuts split each side "
                   "into equal-count groups",
        }, source="fitted")
        backend = backend.with_thresholds(fitted)
    else:  # nothing fitted: every pair is held out
        fit_part, held_part = [], sample

    core = JudgeCore(backend, store)
    outcome = core.judge(pairs, progress)
    labels = {(j.query_id, j.doc_id): j.label for j in outcome.judgements}

    def agree(part: list[LabelledPair]) -> dict:
        part = [p for p in part if labels[p.query_id, p.doc_id] is not None]
        return agreement([p.human for p in part], [labels[p.query_id, p.doc_id] for p in part], human_levels,
                         settings.relevant_from)

    held = agree(held_part)
    report = {
        "dataset": dataset.name, "split": settings.split,
        # The headline numbers are the held-out part's: thresholds never saw those queries.
        "accuracy": held["accuracy"], "kappa_binary": held["kappa_binary"], "kappa_graded": held["kappa_graded"],
        "confusion": held.get("confusion"),
        "confusion_axes": {"rows": f"human level {human_levels} (the dataset's scale)", "columns": "judge label 0-3"},
        "held_out": held, "fit": agree(fit_part) if fit_part else None, "all": agree(sample),
        "relevant_from": settings.relevant_from,
        "binary_rule": f"human level >= 1 vs judge label >= {settings.relevant_from}",
        "human_to_judge_scale": {str(k): v for k, v in human_to_judge_scale(human_levels, settings.relevant_from).items()},
        "sample": {
            "requested": settings.sample, "drawn": len(sample), "seed": settings.seed,
            "queries": len({p.query_id for p in sample}), "fit_pairs": len(fit_part), "held_out_pairs": len(held_part),
            "by_level": {str(level): sum(p.human == level for p in sample) for level in human_levels},
            "by_source": {source: sum(p.source == source for p in sample) for source in ("qrels", "bm25-unlabelled")},
            "negatives": (f"unlabelled documents in BM25's top {NEGATIVE_DEPTH} taken as non-relevant (the qrels hold "
                          f"{judged_zero} judged-0 pairs); some may be relevant, so agreement is a lower bound")
                         if negatives is not None else "the qrels' judged-0 pairs",
        },
        "judge": {**core.identity(), "judge_id": core.judge_id},
        "thresholds": fitted.as_dict() if fitted is not None else None,
        "stats": outcome.stats.as_dict(),
        "not_labelled": outcome.stats.unparsed + outcome.stats.failed,
        "versions": package_versions(["pytrec_eval-terrier", "sentence-transformers", "openai"]),
    }
    return report, fitted


def _query(query_id: str, text: str):
    from irforge.data.types import Query

    return Query(query_id=query_id, text=text)
