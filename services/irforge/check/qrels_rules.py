"""The rules over the split's qrels: bad lines, a pair judged twice, judgements of documents or
queries the dataset does not have, and queries no document is relevant to."""

from __future__ import annotations

from irforge.check.dataset_scan import DatasetView
from irforge.check.findings import ERROR, WARNING, Finding, at, examples, plural
from irforge.check.run_scan import BadLine


def _line_examples(view: DatasetView, bad: list[BadLine]) -> list[str]:
    def one(item: BadLine) -> str:
        ids = f" query {item.query_id!r}, doc {item.doc_id!r}:" if item.query_id else ""
        return f"{at(view.qrels.path, item.line)}:{ids} {item.reason}"
    return examples(map(one, bad))


def qrels_findings(view: DatasetView, in_corpus: set[str], relevance_level: int = 1) -> list[Finding]:
    scan = view.qrels
    found = []
    if scan.malformed:
        found.append(Finding("qrels-malformed-lines", ERROR, len(scan.malformed),
                             f"{plural(len(scan.malformed), 'line')} of the qrels cannot be read as 'query-id corpus-id score'",
                             _line_examples(view, scan.malformed)))
    if scan.conflicts:
        found.append(Finding("qrels-conflicting-labels", ERROR, len(scan.conflicts),
                             f"{plural(len(scan.conflicts), 'line')} judge a (query, doc) pair again with another label: "
                             "which one counts would be a guess (irforge refuses the file)", _line_examples(view, scan.conflicts)))
    if scan.duplicates:
        found.append(Finding("qrels-duplicate-pairs", WARNING, len(scan.duplicates),
                             f"{plural(len(scan.duplicates), 'line')} repeat a judgement already in the qrels (same label: "
                             "harmless to the figures, but a sign of a concatenated or merged file)",
                             _line_examples(view, scan.duplicates)))
    unknown_docs = [(q, d) for q, judged in scan.qrels.items() for d in judged if d not in in_corpus]
    if unknown_docs:
        found.append(Finding("qrels-unknown-docs", WARNING, len(unknown_docs),
                             f"{plural(len(unknown_docs), 'judgement')} name a document the corpus does not have "
                             f"({len({d for _, d in unknown_docs})} distinct): no run can retrieve it, so recall cannot reach 1",
                             examples(f"{at(scan.path, scan.first_lines[(q, d)])}: query {q!r}, doc {d!r}" for q, d in unknown_docs)))
    unknown_queries = sorted(q for q in scan.qrels if q not in view.query_ids)
    if unknown_queries:
        none_known = len(unknown_queries) == len(scan.qrels)   # eval refuses such qrels: nothing could be evaluated
        found.append(Finding("qrels-unknown-queries", ERROR if none_known else WARNING, len(unknown_queries),
                             f"{plural(len(unknown_queries), 'query', 'queries')} of the qrels {'is' if len(unknown_queries) == 1 else 'are'} "
                             f"not in {view.dataset.queries_path.name}: no system gets its text, each scores 0 under eval",
                             examples(f"{at(scan.path, _first_line(scan, q))}: query {q!r}" for q in unknown_queries)))
    no_relevant = sorted(q for q, judged in scan.qrels.items() if not any(label >= relevance_level for label in judged.values()))
    if no_relevant:
        found.append(Finding("qrels-no-relevant", WARNING, len(no_relevant),
                             f"{plural(len(no_relevant), 'query', 'queries')} of split {view.split!r} "
                             f"{'has' if len(no_relevant) == 1 else 'have'} no document labelled {relevance_level} or more: "
                             "every system scores 0 there on nDCG, recall and MAP, pulling each mean down alike",
                             examples(f"{at(scan.path, _first_line(scan, q))}: query {q!r}" for q in no_relevant)))
    return found


def _first_line(scan, query_id: str) -> int:
    return min(scan.first_lines[(query_id, d)] for d in scan.qrels[query_id])
