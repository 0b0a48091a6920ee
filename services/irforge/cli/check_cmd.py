"""`irforge check DATASET [RUN...]`: the run/qrels/corpus linter. Parse -> irforge.app.check ->
print the table; exit 1 when any finding is an error, 0 otherwise, 2 when an input cannot be read."""

from __future__ import annotations

import argparse
import sys

from irforge.app.errors import UsageError
from irforge.runs import RUN_FORMATS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "check", help="lint runs, qrels and corpus ids before scoring (exit 1 on errors)",
        description="Check a dataset's split (qrels against corpus and queries) and each RUN against it: ids unknown "
        "to the corpus or queries, queries of another split or missing, duplicate (query, doc) pairs, NaN/inf or "
        "non-numeric scores, malformed lines, ties across the cutoffs 10/100/1000 and how the tie rule (score "
        "descending, then doc id descending, as trec_eval) resolves them, a query scored against its own id "
        "(BEIR's rule), judged@10. Prints a table; exit 1 when any finding is an error, 0 otherwise.")
    parser.add_argument("dataset", metavar="DATASET",
                        help="a BEIR folder or a downloaded dataset's name (as --dataset takes: beir/scifact)")
    parser.add_argument("runs", nargs="*", metavar="RUN",
                        help="run files: TREC (qid Q0 docno rank score tag), Pyserini/Anserini/ranx JSON, TSV "
                             "(qid docno score) or MS MARCO (qid docno rank), .gz or not")
    parser.add_argument("--run-format", choices=RUN_FORMATS, default="auto",
                        help="the runs' layout (default: auto, found from the first line)")
    parser.add_argument("--split", default="test", help="the qrels split to check against (default: test)")
    parser.add_argument("--keep-identical-ids", action="store_true",
                        help="check the runs as eval --keep-identical-ids scores them (default: BEIR's rule drops a "
                             "document whose id is its query's)")
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE (atomically)")
    parser.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    from irforge.app.check import check_runs
    from irforge.check import table_lines

    try:
        report = check_runs(args.dataset, args.runs, split=args.split, run_format=args.run_format,
                            keep_identical_ids=args.keep_identical_ids,
                            json_path=args.json)
    except UsageError as error:
        print(f"irforge check: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write("\n".join(table_lines(report)) + "\n")
    return 1 if report.has_errors else 0
