"""The rules over a run's rankings, as eval ranks them (irforge.ranking's tie rule: score
descending, then doc id descending, as trec_eval): ties that straddle a cutoff, and the share of
each query's top 10 that the qrels judge."""

from __future__ import annotations

import math
from dataclasses import dataclass

from irforge.check.findings import INFO, WARNING, Finding, at, examples, plural
from irforge.check.run_scan import RunScan
from irforge.evaluator.depth import top_ranking
from irforge.evaluator.engines.judged import judged_at_k
from irforge.ranking import ranked

CUTOFFS = (10, 100, 1000)   # where the field's measures cut: @10, @100, @1000
JUDGED_DEPTH = 10


def as_scored(scan: RunScan, keep_identical_ids: bool) -> dict[str, dict[str, float]]:
    """The run as eval scores it: BEIR's identical-id rule applied unless kept."""
    run = dict(scan.scores)   # the scan's own dicts stay as read
    if not keep_identical_ids:
        for query_id, scores in run.items():
            if query_id in scores:
                run[query_id] = {doc_id: score for doc_id, score in scores.items() if doc_id != query_id}
    return run


@dataclass(frozen=True)
class StraddlingTie:
    """One query whose documents at ranks k and k+1 share a score: `group` is every document
    with that score in tie-rule order, the first `inside` of them in the top k."""
    query_id: str
    score: float
    first_rank: int
    group: tuple[str, ...]
    inside: int
    file_disagrees: bool   # the file's own rank column puts another set of the group in the top k


def straddling_ties(scan: RunScan, run: dict[str, dict[str, float]], cutoffs=CUTOFFS) -> dict[int, list[StraddlingTie]]:
    """Per cutoff k, the queries whose ranks k and k+1 share a score (each query sorted once)."""
    ties: dict[int, list[StraddlingTie]] = {k: [] for k in cutoffs}
    for query_id in sorted(run):
        ordered = None
        for k in cutoffs:
            scores = run[query_id]
            if len(scores) <= k:
                continue
            ordered = ordered or ranked(scores)
            if ordered[k - 1][1] == ordered[k][1]:
                ties[k].append(_tie(scan, query_id, ordered, k))
    return ties


def _tie(scan: RunScan, query_id: str, ordered: list[tuple[str, float]], k: int) -> StraddlingTie:
    score = ordered[k - 1][1]
    start, end = k - 1, k
    while start > 0 and ordered[start - 1][1] == score:
        start -= 1
    while end + 1 < len(ordered) and ordered[end + 1][1] == score:
        end += 1
    group = tuple(doc_id for doc_id, _ in ordered[start:end + 1])
    inside = k - start
    ranks = [scan.rank_of(query_id, doc_id) for doc_id in group]
    disagrees = None not in ranks and {d for _, d in sorted(zip(ranks, group))[:inside]} != set(group[:inside])
    return StraddlingTie(query_id, score, start + 1, group, inside, disagrees)


def _shown(ids: tuple[str, ...], limit: int = 3) -> str:
    return ", ".join(repr(d) for d in ids[:limit]) + (", ..." if len(ids) > limit else "")


def tie_findings(scan: RunScan, run: dict[str, dict[str, float]], cutoffs=CUTOFFS) -> list[Finding]:
    found = []
    for k, ties in straddling_ties(scan, run, cutoffs).items():
        longer = sum(len(scores) > k for scores in run.values())
        if not ties:
            continue
        disagree = sum(t.file_disagrees for t in ties)
        message = (f"{len(ties)} of {plural(longer, 'query', 'queries')} ranked beyond {k} have a tie across rank {k}: "
                   f"the tie rule (score descending, then doc id descending, as trec_eval) keeps the larger doc ids "
                   f"(compared as strings, as trec_eval's strcmp) in the top {k}; ")
        message += (f"the file's own rank column keeps another set in {plural(disagree, 'query', 'queries')} "
                    "(a tool that trusts the ranks scores those differently)" if disagree else
                    "the file's rank column agrees with it")

        def example(tie: StraddlingTie) -> str:
            last = tie.first_rank + len(tie.group) - 1
            line = scan.line_of(tie.query_id, tie.group[0])
            return (f"{at(scan.path, line)}: query {tie.query_id!r}: {len(tie.group)} docs at score {tie.score!r}, "
                    f"ranks {tie.first_rank}-{last}; kept {_shown(tie.group[:tie.inside])}; cut {_shown(tie.group[tie.inside:])}"
                    + ("; the file's ranks keep others" if tie.file_disagrees else ""))
        found.append(Finding(f"run-ties-at-{k}", WARNING, len(ties), message, examples(map(example, ties)),
                             {"cutoff": k, "queries_ranked_beyond": longer, "tied_documents": sum(len(t.group) for t in ties),
                              "file_ranks_disagree": disagree}))
    return found


def judged_finding(scan: RunScan, run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]],
                   k: int = JUDGED_DEPTH) -> Finding | None:
    """Judged@k (as eval computes it: a ranking shorter than k divided by its own length) over the
    run's queries the split judges. Low values mean the figures rest on unjudged documents."""
    shares = {}
    for query_id in sorted(run):
        if query_id in qrels:
            top = top_ranking(run[query_id], k)
            shares[query_id] = (judged_at_k(qrels[query_id], top, k), len(top))
    if not shares:
        return None
    mean = math.fsum(share for share, _ in shares.values()) / len(shares)
    low = sorted(shares, key=lambda q: (shares[q][0], q))
    below_half = sum(share < 0.5 for share, _ in shares.values())
    return Finding(f"run-judged-at-{k}", INFO, len(shares),
                   f"judged@{k} {mean:.4f}: the share of each query's top {k} that the qrels label, mean over the run's "
                   f"{plural(len(shares), 'judged query', 'judged queries')}; {below_half} under 0.5",
                   examples(f"query {q!r}: {round(shares[q][0] * shares[q][1])} of {shares[q][1]} judged"
                            for q in low),
                   {"judged_at_k": mean, "k": k, "queries": len(shares), "under_half": below_half})
