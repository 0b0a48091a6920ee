"""`irforge report INPUT... --out FILE.html`: one self-contained HTML page (see irforge.reports)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from irforge.reports.inputs import ReportInputError, distinct_systems, load_inputs
from irforge.results import ResultsFileError
from irforge.results.mteb import read_mteb_results


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="one self-contained HTML page from results, a comparison or a suite",
        description="Read results.json (irforge eval, eval-instructions), comparison.json (irforge compare) and "
        "suite.json (irforge bench) files, or folders holding one, and write one HTML file with their tables, "
        "significance markers, per-query difference plots, Judged@k and holes, timings, and every configuration "
        "and version needed to reproduce them. The page loads nothing from elsewhere and works offline.",
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="a results.json, comparison.json or suite.json, or a folder holding one (in that order of preference)")
    parser.add_argument("--out", type=Path, required=True, help="the HTML file to write (replaced atomically)")
    parser.add_argument("--title", help="the page's title (default: the kinds of input and their datasets)")
    parser.add_argument("--mteb", action="append", type=Path, metavar="PATH",
                        help="MTEB results (a TaskResult file, or a model's folder of them): a section with its published "
                             "figures beside each system's, per dataset (means only: MTEB publishes no per-query values); "
                             "repeatable")
    parser.set_defaults(handler=run_report)


def check_out(out: Path) -> None:
    if out.is_dir():
        raise ReportInputError(f"--out {out}: is a folder; give the HTML file's path (e.g. {out / 'report.html'})")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise ReportInputError(f"--out {out}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ReportInputError(f"--out {out}: no permission to write in {parent}")


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def run_report(args: argparse.Namespace) -> int:
    from irforge.reports.page import build_report, write_report   # here: `irforge --help` need not load the page's markup

    try:
        check_out(args.out)
        inputs = load_inputs(args.inputs)   # every input read and checked before anything is written
        published = [result for path in args.mteb or () for result in read_mteb_results(path)]
    except (ReportInputError, ResultsFileError) as error:
        print(f"irforge report: error: {error}", file=sys.stderr)
        return 2
    command = shlex.join(["irforge", "report", *args.inputs, "--out", str(args.out)]
                         + (["--title", args.title] if args.title else [])
                         + [part for path in args.mteb or () for part in ("--mteb", str(path))])
    document = build_report(inputs, args.title, command, published=published)
    write_report(args.out, document)
    # A system on a dataset, counted once however many inputs hold it (a run given directly and inside a comparison).
    runs = len(distinct_systems(inputs))
    print(f"wrote {args.out}: {plural(len(inputs), 'input')}, {plural(runs, 'evaluated run')} (system × dataset), "
          f"{plural(document.count('<svg '), 'plot')}, {len(document.encode('utf-8')) // 1024} KiB")
    return 0
