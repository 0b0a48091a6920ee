"""`irforge agreement`: do two label sets (or two collections) rank the same systems the same way?

Three ways to give the systems' scores under A (the reference: human labels, the original
collection) and under B:
  RUN... --qrels-a FILE... --qrels-b FILE...   the same TREC runs evaluated under two label sets
                                               (a set may be several files: human qrels plus
                                               a judged layer such as qrels.judged.tsv)
  --a RESULTS... --b RESULTS...                results of the same systems, in the same order, on
                                               two collections (an original and its generated or
                                               QC-corrected version)
  --table FILE                                 a TSV/CSV: system, score under A, score under B
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from irforge.compare.agreement import AgreementError, AgreementSettings, agreement
from irforge.compare.systems import ComparisonError, load_results

DEFAULT_MEASURE = "nDCG@10"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "agreement", help="Kendall's tau, tau_AP and Spearman's rho between system rankings under two label sets",
        description="Rank the same systems under label set (or collection) A and B and measure how far the two "
                    "rankings agree: Kendall's tau-b and Spearman's rho with scipy's p-values, tau_AP (top-weighted, "
                    "A as reference) with a randomization p-value.",
    )
    parser.add_argument("runs", nargs="*", metavar="RUN", help="TREC runs, each evaluated under --qrels-a and --qrels-b")
    parser.add_argument("--qrels-a", action="append", type=Path, metavar="FILE",
                        help="label set A (reference), BEIR or TREC qrels; repeat to add a layer (e.g. qrels.judged.tsv)")
    parser.add_argument("--qrels-b", action="append", type=Path, metavar="FILE", help="label set B; repeat to add layers")
    parser.add_argument("--a", dest="results_a", nargs="+", metavar="RESULTS", help="results folders of the systems under A")
    parser.add_argument("--b", dest="results_b", nargs="+", metavar="RESULTS", help="results of the same systems under B, same order")
    parser.add_argument("--table", type=Path, help="TSV or CSV with a header: system, score under A, score under B")
    parser.add_argument("--lower-is-better", action="store_true", help="--table holds ranks (1 = best), not scores")
    parser.add_argument("-m", "--measure", default=DEFAULT_MEASURE, help=f"the measure that ranks systems (default {DEFAULT_MEASURE})")
    parser.add_argument("--keep-identical-ids", action="store_true", help="RUN inputs: keep documents whose id equals the query id")
    parser.add_argument("--permutations", type=int, default=AgreementSettings.permutations,
                        help="random orders for tau_AP's p-value (default 10000)")
    parser.add_argument("--seed", type=int, default=AgreementSettings.seed, help="seed of tau_AP's randomization (default 0)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="what to print (default text)")
    parser.set_defaults(handler=run_agreement)


def run_agreement(args: argparse.Namespace) -> int:
    try:
        result = agreement_from_args(args)
    except (AgreementError, ComparisonError) as error:
        print(f"irforge agreement: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(result, indent=1) + "\n" if args.format == "json" else describe(result))
    return 0


def agreement_from_args(args: argparse.Namespace) -> dict:
    forms = [bool(args.runs or args.qrels_a or args.qrels_b), bool(args.results_a or args.results_b), args.table is not None]
    if args.lower_is_better and not forms[2]:
        raise AgreementError("--lower-is-better applies to --table only (measures from runs and results are scores)")
    if sum(forms) != 1:
        raise AgreementError("give one of: RUN... with --qrels-a and --qrels-b; --a RESULTS... --b RESULTS...; or --table FILE")
    if args.permutations < 100:
        raise AgreementError(f"--permutations must be at least 100, got {args.permutations}")
    if forms[0]:
        systems, a, b, source = _from_runs(args)
    elif forms[1]:
        systems, a, b, source = _from_results(args)
    else:
        systems, a, b, source = _from_table(args.table, args.lower_is_better)
    result = agreement(systems, a, b, AgreementSettings(args.permutations, args.seed), lower_is_better=args.lower_is_better)
    return {"kind": "agreement", "measure": None if forms[2] else args.measure, "source": source, **result}


def describe(result: dict) -> str:
    width = max(len("system"), *(len(name) for name in result["ranks"]))
    lines = [f"{result['systems']} systems" + (f" ranked by {result['measure']}" if result["measure"] else "") + f" ({result['source']})",
             f"{'system':<{width}} {'A':>10} {'rank':>5} {'B':>10} {'rank':>5}"]
    for name, r in sorted(result["ranks"].items(), key=lambda item: item[1]["A"]):
        lines.append(f"{name:<{width}} {r['score_A']:>10.4f} {r['A']:>5} {r['score_B']:>10.4f} {r['B']:>5}")
    k, s, t = result["kendall_tau"], result["spearman_rho"], result["tau_ap"]
    lines += [f"Kendall's tau   {k['value']:+.4f}  p = {k['p']:.2g}",
              f"Spearman's rho  {s['value']:+.4f}  p = {s['p']:.2g}",
              f"tau_AP (A ref.) {t['value']:+.4f}  p = {t['p']:.2g} ({t['permutations']} random orders, seed {t['seed']})"]
    return "\n".join(lines) + "\n"


def _from_runs(args) -> tuple[list[str], list[float], list[float], str]:
    from irforge.compare.systems import load_run

    if not (args.runs and args.qrels_a and args.qrels_b):
        raise AgreementError("RUN inputs need both --qrels-a and --qrels-b")
    label_sets = {side: _merged_qrels(files) for side, files in (("A", args.qrels_a), ("B", args.qrels_b))}
    scored = {side: [load_run(run, qrels, side, [args.measure], args.keep_identical_ids) for run in args.runs]
              for side, qrels in label_sets.items()}
    names = [system.label for system in scored["A"]]
    scores = {side: [system.record["metrics"][args.measure] for system in systems] for side, systems in scored.items()}
    source = f"A: {' + '.join(map(str, args.qrels_a))}; B: {' + '.join(map(str, args.qrels_b))}"
    return names, scores["A"], scores["B"], source


def _merged_qrels(files: list[Path]):
    """A label set given as several files: the first, then layers whose pairs must be new or agree."""
    from irforge.data.qrels_layout import read_qrels_file

    merged: dict[str, dict[str, int]] = {}
    for path in files:
        for query_id, judged in read_qrels_file(path).qrels.items():
            target = merged.setdefault(query_id, {})
            for doc_id, label in judged.items():
                if target.get(doc_id, label) != label:
                    raise AgreementError(f"{path}: ({query_id}, {doc_id}) is labelled {label} here and {target[doc_id]} "
                                         "in an earlier file of the same label set")
                target[doc_id] = label
    return merged


def _from_results(args) -> tuple[list[str], list[float], list[float], str]:
    if not (args.results_a and args.results_b):
        raise AgreementError("--a and --b go together")
    if len(args.results_a) != len(args.results_b):
        raise AgreementError(f"--a has {len(args.results_a)} results and --b {len(args.results_b)}: the same systems, same order")
    sides = {}
    for side, paths in (("A", args.results_a), ("B", args.results_b)):
        sides[side] = [load_results(path) for path in paths]
        for system in sides[side]:
            if args.measure not in system.record.get("metrics", {}):
                raise AgreementError(f"{system.source}: no {args.measure} in its metrics")
    names = [s.label for s in sides["A"]]
    return (names, [s.record["metrics"][args.measure] for s in sides["A"]],
            [s.record["metrics"][args.measure] for s in sides["B"]], "results under A vs under B")


def _from_table(path: Path, lower_is_better: bool) -> tuple[list[str], list[float], list[float], str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise AgreementError(f"{path}: cannot be read ({error.strerror})") from None
    rows = [row for row in csv.reader(text.splitlines(), delimiter="\t" if "\t" in text else ",") if row and row[0].strip()]
    if len(rows) < 2 or len(rows[0]) != 3:
        raise AgreementError(f"{path}: expected a header and rows of three columns (system, A, B)")
    names, a, b = [], [], []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != 3:
            raise AgreementError(f"{path}:{number}: expected 3 columns, got {len(row)}")
        try:
            values = [float(row[1]), float(row[2])]
        except ValueError:
            raise AgreementError(f"{path}:{number}: {row[1]!r} or {row[2]!r} is not a number") from None
        names.append(row[0].strip())
        a.append(values[0])
        b.append(values[1])
    return names, a, b, f"{path} ({'ranks' if lower_is_better else 'scores'}; columns {rows[0][1]!r} and {rows[0][2]!r})"
