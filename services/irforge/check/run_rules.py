"""The rules over one run's lines and ids: bad lines, ids the dataset does not have, queries of
the wrong split or missing, and a query scored against its own id (BEIR's rule)."""

from __future__ import annotations

from irforge.check.dataset_scan import DatasetView
from irforge.check.findings import ERROR, WARNING, Finding, at, examples, plural
from irforge.check.run_scan import BadLine, RunScan


def _line_examples(scan: RunScan, bad: list[BadLine]) -> list[str]:
    def one(item: BadLine) -> str:
        ids = f" query {item.query_id!r}, doc {item.doc_id!r}:" if item.query_id else ""
        return f"{at(scan.path, item.line)}:{ids} {item.reason}"
    return examples(map(one, bad))


def line_findings(scan: RunScan) -> list[Finding]:
    """Malformed lines, scores that rank nowhere, a (query, doc) pair written twice: each makes the
    one run reader (and so eval, metrics, compare) refuse the file."""
    found = []
    if scan.malformed:
        found.append(Finding("run-malformed-lines", ERROR, len(scan.malformed),
                             f"{plural(len(scan.malformed), 'line')} of {scan.lines} cannot be read as "
                             "'qid Q0 docno rank score tag'", _line_examples(scan, scan.malformed)))
    if scan.bad_scores:
        not_finite = sum("not finite" in b.reason for b in scan.bad_scores)
        found.append(Finding("run-bad-scores", ERROR, len(scan.bad_scores),
                             f"{plural(len(scan.bad_scores), 'line')} with a score that ranks nowhere "
                             f"({not_finite} NaN or infinite, {len(scan.bad_scores) - not_finite} not a number)",
                             _line_examples(scan, scan.bad_scores),
                             {"not_finite": not_finite, "not_a_number": len(scan.bad_scores) - not_finite}))
    if scan.duplicates:
        differing = sum("the same score" not in b.reason for b in scan.duplicates)
        found.append(Finding("run-duplicate-pairs", ERROR, len(scan.duplicates),
                             f"{plural(len(scan.duplicates), 'line')} repeat a (query, doc) pair already in the run "
                             f"({differing} with another score): which score counts would be a guess",
                             _line_examples(scan, scan.duplicates), {"with_another_score": differing}))
    return found


def id_findings(scan: RunScan, view: DatasetView, in_corpus: set[str], keep_identical_ids: bool) -> list[Finding]:
    return [f for f in (_unknown_documents(scan, in_corpus, keep_identical_ids), _unknown_queries(scan, view),
                        *_split_findings(scan, view), _identical_ids(scan, in_corpus, keep_identical_ids)) if f is not None]


def _unknown_documents(scan: RunScan, in_corpus: set[str], keep_identical_ids: bool) -> Finding | None:
    """Documents the corpus lacks, among those scored: a query's own id, dropped by BEIR's rule,
    is the identical-id finding's (Pyserini's --remove-query runs hold such ids by design)."""
    unknown = [(q, d, scan.line_of(q, d)) for q, docs in scan.scores.items() for d in docs
               if d not in in_corpus and (keep_identical_ids or d != q)]
    if not unknown:
        return None
    distinct = len({d for _, d, _ in unknown})
    queries = len({q for q, _, _ in unknown})
    everything = " (every one: a run of another collection or corpus version?)" if len(unknown) == scan.pairs else \
        " (another corpus version?)"
    return Finding("run-unknown-docs", ERROR, len(unknown),
                   f"{len(unknown)} of {scan.pairs} (query, doc) pairs name a document the corpus does not have"
                   f"{everything}: {plural(distinct, 'distinct id')} in {plural(queries, 'query', 'queries')}; "
                   "such a document can never be judged relevant",
                   examples(f"{at(scan.path, line)}: query {q!r}, doc {d!r}" for q, d, line in unknown),
                   {"distinct_docs": distinct, "queries": queries})


def _first_line(scan: RunScan, query_id: str) -> int:
    return min(scan.line_numbers[query_id].values(), default=0)


def _unknown_queries(scan: RunScan, view: DatasetView) -> Finding | None:
    unknown = sorted(q for q in scan.scores if q not in view.query_ids)
    if not unknown:
        return None
    name = view.dataset.queries_path.name
    return Finding("run-unknown-queries", ERROR, len(unknown),
                   f"{plural(len(unknown), 'query', 'queries')} of the run {'is' if len(unknown) == 1 else 'are'} "
                   f"not in {name} (another dataset's run?)",
                   examples(f"{at(scan.path, _first_line(scan, q))}: query {q!r}" for q in unknown))


def _split_findings(scan: RunScan, view: DatasetView) -> list[Finding]:
    """Run queries the split does not judge (trec_eval ignores them) and split queries the run has
    no line for (eval scores them 0, trec_eval leaves them out). None of the run's queries in the
    split at all is the classic wrong-split run: nothing could be evaluated."""
    split = view.split_queries
    known = [q for q in scan.scores if q in view.query_ids]
    outside = sorted(q for q in known if q not in split)
    found = []
    wrong = False
    if outside:
        others = view.splits_of(outside)
        where = ("; judged in " + ", ".join(f"split {name!r} ({n})" for name, n in others.items()) if others else
                 f"; {'it is' if len(outside) == 1 else 'all are'} in {view.dataset.queries_path.name}, judged in no split "
                 "this folder has: another split's queries?")
        wrong = not any(q in split for q in scan.scores)
        code, severity = ("run-wrong-split", ERROR) if wrong else ("run-queries-outside-split", WARNING)
        lead = (f"none of the run's {plural(len(scan.scores), 'query', 'queries')} is judged in split {view.split!r}"
                if wrong else f"{plural(len(outside), 'query', 'queries')} of the run {'is' if len(outside) == 1 else 'are'} "
                              f"not judged in split {view.split!r} (left out of every measure)")
        found.append(Finding(code, severity, len(outside), lead + where,
                             examples(f"{at(scan.path, _first_line(scan, q))}: query {q!r}" for q in outside),
                             {"other_splits": others} if others else {}))
    missing = sorted(q for q in split if q not in scan.scores)
    if missing and not wrong:   # the wrong split's missing queries are said above
        found.append(Finding("run-missing-queries", WARNING, len(missing),
                             f"{len(missing)} of the {len(split)} queries of split {view.split!r} have no line in the "
                             "run: irforge eval scores them 0, trec_eval without -c leaves them out, so the two disagree",
                             examples(f"query {q!r}" for q in missing)))
    return found


def _identical_ids(scan: RunScan, in_corpus: set[str], keep_identical_ids: bool) -> Finding | None:
    """BEIR drops a retrieved document whose id is its query's id (the query scored against itself,
    as in ArguAna or Quora where queries are corpus documents too); irforge eval and metrics do the
    same unless --keep-identical-ids, so the run as a file and the run as scored differ."""
    hits = [(q, scan.line_of(q, q)) for q in scan.scores if q in scan.scores[q]]
    if not hits:
        return None
    then = ("kept, as --keep-identical-ids asks: each counts as retrieved, relevant only if the qrels say so"
            if keep_identical_ids else
            "dropped before scoring (BEIR's rule, irforge's default; --keep-identical-ids keeps them), "
            "so the file's ranks below it move up one")
    absent = sum(q not in in_corpus for q, _ in hits)
    if absent and not keep_identical_ids:
        then += f"; {absent} of these ids {'is' if absent == 1 else 'are'} not in the corpus at all"
    return Finding("run-identical-ids", WARNING, len(hits),
                   f"{plural(len(hits), 'query', 'queries')} retrieved {'its' if len(hits) == 1 else 'their'} own id: {then}",
                   examples(f"{at(scan.path, line)}: query {q!r}, doc {q!r}" for q, line in hits))
