"""`irforge metrics QRELS RUN`: a trec_eval-compatible command over the evaluator core.

Prints `measure<TAB>qid|all<TAB>value` lines exactly as trec_eval lays them out (measure name
padded to 22 characters, 4 decimals, counts as integers), so its output diffs against trec_eval's.
What a user should know about the input (which qrels layout was read, qrels queries the run has
no ranking for) goes to stderr, so stdout still diffs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irforge.data import DataFormatError, Qrels, Run, read_trec_run
from irforge.data.qrels_layout import QrelsFile, looks_like_qrels, looks_like_run, read_qrels_file
from irforge.evaluator import EvaluationOptions, Evaluator
from irforge.evaluator.measures import AGGREGATE_ONLY, COUNT_MEASURES, TREC_EVAL_DEFAULT


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "metrics",
        help="trec_eval-compatible evaluation of a TREC run file",
        description="Evaluate a TREC run against qrels (TREC or BEIR layout), printing trec_eval's output format. "
        "Measures by trec_eval name (map, P.5,10, ndcg_cut.10, all_trec) or ir_measures name "
        "(nDCG@10, R@100, RR@10, Judged@10). Without -m: trec_eval's default set.",
    )
    parser.add_argument("qrels", type=Path,
                        help="qrels file: TREC (qid iter docno rel) or BEIR (header query-id corpus-id score, 3 tab-separated columns)")
    parser.add_argument("run", type=Path, help="TREC run file: qid Q0 docno rank score tag")
    parser.add_argument("-m", dest="measures", action="append", metavar="MEASURE", help="measure or measure set (repeatable)")
    parser.add_argument("-q", dest="per_query", action="store_true", help="print per-query values as well as 'all'")
    parser.add_argument("-c", dest="complete", action="store_true", help="average over every qrels query; missing ones score 0")
    parser.add_argument("-M", dest="max_docs", type=int, default=0, metavar="N", help="use at most N documents per query")
    parser.add_argument("-l", dest="relevance_level", type=int, default=1, metavar="N", help="relevance >= N counts as relevant")
    parser.add_argument(
        "--keep-identical-ids", action="store_true",
        help="do not drop retrieved documents whose id equals the query id (BEIR's rule, on by default)",
    )
    parser.set_defaults(handler=run_metrics)


def format_line(name: str, query_id: str, value: float | str) -> str:
    if isinstance(value, str):
        text = value
    elif name in COUNT_MEASURES:
        text = str(int(round(value)))
    else:
        text = f"{value:6.4f}"
    return f"{name:<22}\t{query_id}\t{text}"


def read_qrels_argument(qrels_path: Path, run_path: Path) -> QrelsFile:
    """The qrels in either layout; when they cannot be read and the two files look swapped, the
    error says so (a run given as QRELS fails on its first line, which alone says nothing of the order)."""
    try:
        return read_qrels_file(qrels_path)
    except DataFormatError as error:
        if looks_like_run(qrels_path) and looks_like_qrels(run_path):
            raise DataFormatError(error.path, f"{error.reason}; {qrels_path} looks like a run and {run_path} like qrels: "
                                              "were they given in the wrong order? The order is: irforge metrics QRELS RUN",
                                  error.line) from None
        raise


def unranked_note(qrels: Qrels, run: Run, complete: bool) -> str | None:
    """What happens to qrels queries the run has no ranking for, which changes the averages:
    trec_eval leaves them out, -c (and so `irforge eval`) scores them 0. None when there are none."""
    missing = sorted(set(qrels) - set(run))
    if not missing:
        return None
    one = len(missing) == 1
    examples = ", ".join(repr(q) for q in missing[:3]) + (", ..." if len(missing) > 3 else "")
    note = (f"{len(missing)} of {len(qrels)} qrels queries {'has' if one else 'have'} no ranking in the run "
            f"({'' if one else 'e.g. '}{examples}); ")
    subject, object_ = ("it is", "it") if one else ("they are", "them")
    if complete:
        return note + f"-c counts {object_} as 0"
    return note + f"{subject} left out of the averages (trec_eval's default); -c counts {object_} as 0, as irforge eval does"


def run_metrics(args: argparse.Namespace) -> int:
    try:
        measured = measure(args, sys.stderr)
    except _BadOption as error:
        print(f"irforge metrics: error: {error}", file=sys.stderr)
        return 2
    result, trec_run, measures = measured["result"], measured["run"], measured["measures"]
    wants_runid = any(m in ("runid", "all_trec", "official") for m in measures) or measures == list(TREC_EVAL_DEFAULT)
    out = []
    if args.per_query:
        for query_id in sorted(result.per_query):
            values = result.per_query[query_id]
            out.extend(format_line(n, query_id, values[n]) for n in result.measure_names if n not in AGGREGATE_ONLY)
    if wants_runid:
        out.append(format_line("runid", "all", trec_run.tag))
    out.extend(format_line(n, "all", result.aggregate[n]) for n in result.measure_names)
    sys.stdout.write("\n".join(out) + "\n")
    return 0


class _BadOption(ValueError):
    pass


def measure(args: argparse.Namespace, notes) -> dict:
    """All of `irforge metrics` but the printing: read both files, evaluate. Notes for the user
    (the qrels layout read, unranked qrels queries) go to `notes`; bad options raise ValueError
    before the files are read. `irforge.metrics` calls this too."""
    # Before reading the files, and as this command's error: EvaluationOptions' own check raised a traceback.
    if args.max_docs < 0:
        raise _BadOption(f"-M must be 0 (every document) or more, got {args.max_docs}")
    if args.relevance_level < 1:
        raise _BadOption(f"-l must be at least 1, got {args.relevance_level}")
    measures = args.measures or list(TREC_EVAL_DEFAULT)
    qrels_file = read_qrels_argument(args.qrels, args.run)
    qrels = qrels_file.qrels
    print(f"irforge metrics: read {args.qrels} as {qrels_file.layout}", file=notes)
    trec_run = read_trec_run(args.run)
    options = EvaluationOptions(
        drop_identical_ids=not args.keep_identical_ids,
        complete=args.complete,
        relevance_level=args.relevance_level,
        max_docs_per_query=args.max_docs,
    )
    result = Evaluator().evaluate(qrels, trec_run.run, measures, options)
    if note := unranked_note(qrels, trec_run.run, args.complete):
        print(f"irforge metrics: {note}", file=notes)
    return {"result": result, "run": trec_run, "measures": measures, "options": options, "qrels_layout": qrels_file.layout}
