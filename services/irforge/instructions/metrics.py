"""Instruction-following metrics: p-MRR (FollowIR), WISE and SICR (InfoSearch), Robustness@k (InstructIR).

Each query is retrieved in several modes over the same corpus: "og" (the original query), "changed"
(query + instruction) and, in InfoSearch's layout, "reversed" (query + negated instruction). The
metrics read where a document sits in each mode's returned list, so every rank here comes from
`irforge.ranking.ranked` (score descending, then document id descending, as trec_eval): the same
run gives the same ranks in p-MRR as in nDCG. A document missing from a returned list gets
rank = list length + 1 and score 0.0 (the papers' convention).

Document sets (label >= 1 is relevant; a document missing from a mode's qrels counts as label 0):
- gold documents (WISE, SICR): relevant in both the og and the changed qrels;
- changed documents (p-MRR): FollowIR's "judged in og, label differs in changed", or InfoSearch's
  "relevant in og, not relevant in changed".

Per-query values are returned as dicts {query_id: value}; a query the metric says nothing about
(no gold document, no changed document) is left out, never counted as 0. Values are raw fractions:
papers print p-MRR, WISE and SICR x100.

Where this differs from the released InfoSearch code (EIT-NLP/InfoSearch, its MTEB fork):
- SICR: the released loop resets its counter for every gold document, so only the LAST gold
  document of a query is counted, and that 0 or 1 is then divided by the number of gold documents
  (a query with gold [complies, fails] gets 0; [fails, complies] gets 1/2). Here every gold
  document counts. `sicr_query_reference` reproduces the released counting for comparison.
- WISE: see `wise_document` (strict `ori_rank < sum_count`, no square root, an unreachable -1).
- Gold documents: the released code takes label == 1 in both og and changed; here label >= 1,
  which is the same on InfoSearch's binary qrels and stays meaningful on graded ones.
- Ranks: the released code sorts on score alone (a stable sort, so ties keep the run's dict order);
  here ties are broken by document id descending.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from irforge.data.types import Qrels, Run
from irforge.ranking import ranked

# Metric names as the evaluation job reports them; other modules import these.
P_MRR = "p-MRR"
P_MRR_INFOSEARCH = "p-MRR[InfoSearch]"
WISE = "WISE"
SICR = "SICR"
METRIC_NAMES = (P_MRR, P_MRR_INFOSEARCH, WISE, SICR)

# Mode names, as keys of the qrels and runs given to `instruction_metrics`.
OG = "og"
CHANGED = "changed"
REVERSED = "reversed"

# Definitions of a query's changed documents (p-MRR).
FOLLOWIR = "followir"
INFOSEARCH = "infosearch"
ChangedDefinition = Literal["followir", "infosearch"]

WISE_K = 20  # the paper's K: ranks beyond it earn only a token reward
RELEVANT = 1  # lowest label that counts as relevant


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one document sits in one query's returned list (rank 1 is the top)."""

    rank: int
    score: float


# ---------------------------------------------------------------------------------------------
# Ranks


def placements(scores: Mapping[str, float], doc_ids: Iterable[str]) -> dict[str, Placement]:
    """Placement of each of `doc_ids` in one returned list, ranking the list once."""
    order = {doc_id: (rank, score) for rank, (doc_id, score) in enumerate(ranked(scores), start=1)}
    missing = (len(scores) + 1, 0.0)  # ranked just below the list, with no score
    out = {}
    for doc_id in doc_ids:
        rank, score = order.get(doc_id, missing)
        out[doc_id] = Placement(rank, float(score))
    return out


def placement(scores: Mapping[str, float], doc_id: str) -> Placement:
    """Rank and score of one document in one returned list (missing: rank len+1, score 0.0)."""
    return placements(scores, [doc_id])[doc_id]


# ---------------------------------------------------------------------------------------------
# Document sets from one query's qrels


def _relevant(label: int) -> bool:
    return label >= RELEVANT


def gold_documents(og: Mapping[str, int], changed: Mapping[str, int]) -> list[str]:
    """Documents relevant in both the og and the changed qrels of a query (InfoSearch's positives), sorted."""
    return sorted(d for d, label in og.items() if _relevant(label) and _relevant(changed.get(d, 0)))


def changed_documents(og: Mapping[str, int], changed: Mapping[str, int], definition: ChangedDefinition) -> list[str]:
    """Documents whose relevance the instruction changes, per FollowIR's or InfoSearch's definition, sorted."""
    if definition == FOLLOWIR:  # any judged label that moves, in either direction (0->1, 2->1, 1->0 ...)
        docs = (d for d, label in og.items() if label != changed.get(d, 0))
    elif definition == INFOSEARCH:  # only documents the instruction makes non-relevant
        docs = (d for d, label in og.items() if _relevant(label) and not _relevant(changed.get(d, 0)))
    else:
        raise ValueError(f"unknown changed-document definition {definition!r}; use {FOLLOWIR!r} or {INFOSEARCH!r}")
    return sorted(docs)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


# ---------------------------------------------------------------------------------------------
# p-MRR (FollowIR)


def p_mrr_document(original_rank: int, instructed_rank: int) -> float:
    """FollowIR's pairwise MRR change of one document: negative when it moved up, positive when down."""
    o, n = original_rank, instructed_rank
    # A changed document should drop once the instruction excludes it: up is punished, down rewarded.
    return n / o - 1 if o > n else 1 - o / n


def p_mrr_query(ori: Mapping[str, float], ins: Mapping[str, float], documents: Sequence[str]) -> float | None:
    """Mean p-MRR over one query's changed documents (None when it has none)."""
    o, n = placements(ori, documents), placements(ins, documents)
    return _mean([p_mrr_document(o[d].rank, n[d].rank) for d in documents])


# ---------------------------------------------------------------------------------------------
# WISE (InfoSearch)


def wise_document(r_ori: int, r_ins: int, r_rev: int, n: int, k: int = WISE_K) -> float:
    """WISE of one gold document from its ranks in the three modes, as the InfoSearch paper defines it.

    `n` is the number of documents relevant in the query's original-mode qrels. A gold document
    should rise (or stay) under the instruction and fall under the reversed one: that earns a
    reward, largest when it reaches rank 1, shrinking with the distance climbed and the rank
    reached, and a token 0.01 beyond rank K. Anything else is penalised, -1 when both modes moved
    it the wrong way.

    The released InfoSearch code (utils.WISE_score) differs in three places; this follows the paper:
    - it gives 1 when `ori_rank < sum_count`: strict, and sum_count is the number of positives
      plus the documents the instruction makes non-relevant, not N (paper: R_ori <= N);
    - its formula omits the square root: (1 - (R_ori - R_ins)/20) * (1/sqrt(R_ins))
      (paper: 1 - sqrt(R_ori - R_ins)/K);
    - its -1 branch tests `ins_rank < ori_rank < rev_rank` inside the else of
      `ins_rank <= ori_rank < rev_rank`, so it can never be reached; a document with
      R_rev < R_ori < R_ins gets (R_ori - R_ins)/R_ins there instead of the paper's -1.
    """
    if r_ins <= r_ori < r_rev:  # the right direction in both modes: reward
        if r_ori <= n and r_ins == 1:
            return 1.0
        if r_ori <= k:
            return (1 - math.sqrt(r_ori - r_ins) / k) / math.sqrt(r_ins)
        return 0.01
    # Penalty, never below -1.
    if r_rev < r_ori < r_ins:  # the wrong direction in both modes
        return -1.0
    if r_ori <= r_ins:  # the instruction pushed it down (or left it while the reversal did not)
        return (r_ori - r_ins) / r_ins
    return (r_rev - r_ori) / r_ori  # the reversed instruction pulled it up (r_rev <= r_ori)


def wise_query(
    ori: Mapping[str, float],
    ins: Mapping[str, float],
    rev: Mapping[str, float],
    gold: Sequence[str],
    n: int,
    k: int = WISE_K,
) -> float | None:
    """Mean WISE over one query's gold documents (None when it has none); `n` = og-mode relevant count."""
    o, i, r = placements(ori, gold), placements(ins, gold), placements(rev, gold)
    return _mean([wise_document(o[d].rank, i[d].rank, r[d].rank, n, k) for d in gold])


# ---------------------------------------------------------------------------------------------
# SICR (InfoSearch)


def sicr_document(ori: Placement, ins: Placement, rev: Placement) -> bool:
    """Whether one gold document complies: up in rank and score when instructed, down when reversed."""
    reversed_ok = ori.rank < rev.rank and ori.score > rev.score
    if ori.rank == 1:
        # Already at the top it cannot move up: staying at rank 1 without losing score counts
        # (the released code's rule for rank 1, kept so results can be set beside it).
        return ins.rank == 1 and ins.score >= ori.score and reversed_ok
    # All strict: an equal score is no evidence the instruction was followed, even if the rank moved.
    return ins.rank < ori.rank and ins.score > ori.score and reversed_ok


def _sicr_flags(
    ori: Mapping[str, float], ins: Mapping[str, float], rev: Mapping[str, float], gold: Sequence[str]
) -> list[bool]:
    o, i, r = placements(ori, gold), placements(ins, gold), placements(rev, gold)
    return [sicr_document(o[d], i[d], r[d]) for d in gold]


def sicr_query(
    ori: Mapping[str, float], ins: Mapping[str, float], rev: Mapping[str, float], gold: Sequence[str]
) -> float | None:
    """Fraction of one query's gold documents that comply (None when it has none)."""
    flags = _sicr_flags(ori, ins, rev, gold)
    return sum(flags) / len(flags) if flags else None


def sicr_query_reference(
    ori: Mapping[str, float], ins: Mapping[str, float], rev: Mapping[str, float], gold: Sequence[str]
) -> float | None:
    """The released InfoSearch code's SICR of one query, for comparison only: do not report it.

    Its per-document counter is reset inside the loop, so only the LAST of `gold` (in the order
    given; the released code uses the og qrels file's order) decides, and that 0 or 1 is divided
    by the number of gold documents. Ranks still follow irforge's tie rule, so only the counting
    differs from `sicr_query`.
    """
    flags = _sicr_flags(ori, ins, rev, gold)
    return flags[-1] / len(flags) if flags else None


# ---------------------------------------------------------------------------------------------
# Robustness@k (InstructIR)


def base_query_id(query_id: str) -> str:
    """InstructIR's core query of an instruction variant: the id before its last underscore."""
    base, sep, _variant = query_id.rpartition("_")
    return base if sep else query_id


def robustness_at_k(
    per_query: Mapping[str, float], group_of: Callable[[str], str] = base_query_id
) -> dict[str, float]:
    """Per core query, the worst (minimum) of its variants' values, e.g. nDCG@k; the caller averages."""
    worst: dict[str, float] = {}
    for query_id, value in per_query.items():
        group = group_of(query_id)
        worst[group] = min(value, worst.get(group, value))
    return worst


# ---------------------------------------------------------------------------------------------
# One dimension / collection


def mean_of(per_query: Mapping[str, float]) -> float | None:
    """Mean over the queries that have a value (None when none has)."""
    return _mean(list(per_query.values()))


def instruction_metrics(
    qrels: Mapping[str, Qrels],
    runs: Mapping[str, Run],
    *,
    queries: Iterable[str],
    k_wise: int = WISE_K,
) -> dict[str, dict[str, float]]:
    """Per-query p-MRR (and, with a "reversed" mode, p-MRR[InfoSearch], WISE, SICR) of one collection.

    `qrels` and `runs` are keyed by mode: "og", "changed" and, in InfoSearch's layout, "reversed".
    A query with no returned list in a mode is read as an empty list, so its documents count as
    missing. Returns metric name -> {query_id: value}; a query the metric cannot score is omitted.
    """
    for mode in (OG, CHANGED):
        if mode not in qrels or mode not in runs:
            raise ValueError(f"instruction metrics need the {mode!r} mode in both qrels and runs")
    infosearch_layout = REVERSED in runs or REVERSED in qrels
    if infosearch_layout and REVERSED not in runs:
        raise ValueError(f"the collection has a {REVERSED!r} mode but no {REVERSED!r} run was given")

    names = (P_MRR, P_MRR_INFOSEARCH, WISE, SICR) if infosearch_layout else (P_MRR,)
    out: dict[str, dict[str, float]] = {name: {} for name in names}

    def keep(name: str, query_id: str, value: float | None) -> None:
        if value is not None:
            out[name][query_id] = value

    for q in queries:
        og, changed = qrels[OG].get(q, {}), qrels[CHANGED].get(q, {})
        ori, ins = runs[OG].get(q, {}), runs[CHANGED].get(q, {})
        keep(P_MRR, q, p_mrr_query(ori, ins, changed_documents(og, changed, FOLLOWIR)))
        if not infosearch_layout:
            continue
        rev = runs[REVERSED].get(q, {})
        gold = gold_documents(og, changed)
        n_relevant = sum(1 for label in og.values() if _relevant(label))
        keep(P_MRR_INFOSEARCH, q, p_mrr_query(ori, ins, changed_documents(og, changed, INFOSEARCH)))
        keep(WISE, q, wise_query(ori, ins, rev, gold, n_relevant, k_wise))
        keep(SICR, q, sicr_query(ori, ins, rev, gold))
    return out
