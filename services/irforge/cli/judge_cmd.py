"""`irforge judge-holes`, `irforge judge-calibrate` and `irforge judge-audit`: the judge's commands
over a BEIR dataset.

All take `--judge embedded` (default: the local encoder judge) or `--judge FILE` (an LLM judge
spec, YAML) and `--store PATH` (the judgement store; default $IRFORGE_JUDGE_STORE or the user data
dir), so a pair judged once by the same judge is never paid for again.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from irforge.cli.options import add_config_options
from irforge.config import HolesConfig, PipelineConfig
from irforge.common.redact import redact_text
from irforge.evaluator.measures import DEFAULT_MEASURES
from irforge.judge.base import DEFAULT_RELEVANT_FROM


def add_judge_arguments(parser: argparse.ArgumentParser, *, depth_flag: str = "--depth") -> None:
    """--judge, --store, --thresholds, --relevant-from (`irforge eval --fill-holes` has them as pipeline options)."""
    group = parser.add_argument_group("judge")
    group.add_argument("--judge", default="embedded", metavar="embedded|FILE",
                       help="'embedded' (the local encoder judge, default) or a judge spec YAML (kind: openai-chat)")
    group.add_argument("--store", type=Path, help="judgement store (default $IRFORGE_JUDGE_STORE or the user data dir)")
    group.add_argument("--thresholds", type=Path,
                       help="embedded judge thresholds file (default $IRFORGE_JUDGE_THRESHOLDS, the user data dir, "
                            "else the built-in ones)")
    group.add_argument("--relevant-from", type=int, default=DEFAULT_RELEVANT_FROM, choices=(1, 2, 3),
                       help=f"judge labels at or above this count as relevant (default {DEFAULT_RELEVANT_FROM})")


def add_parser(subparsers) -> None:
    holes = subparsers.add_parser(
        "judge-holes", help="judge the unlabelled documents of a run's top-k (a separate qrels layer)",
        description="Find every (query, document) of the run's top DEPTH with no label in the split's qrels, judge "
                    "only those, write OUT/qrels.judged.tsv (+ provenance) and OUT/holes.json with metrics before and "
                    "after (Judged@k, Hole@k). The original qrels are never modified.")
    holes.add_argument("--dataset", type=Path, required=True, help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    holes.add_argument("--run", type=Path, required=True, help="TREC run file (qid Q0 docid rank score tag)")
    holes.add_argument("--depth", type=int, default=10, help="judge holes within each query's top DEPTH (default 10)")
    holes.add_argument("--split", default="test", help="the qrels/<split>.tsv whose holes are judged (default test)")
    holes.add_argument("--out", type=Path, required=True, help="output folder")
    holes.add_argument("-m", "--measure", dest="measures", action="append", metavar="MEASURE",
                       help=f"measure to report (repeatable; default {' '.join(DEFAULT_MEASURES)} + Judged@DEPTH)")
    holes.add_argument("--keep-identical-ids", action="store_true",
                       help="keep retrieved documents whose id equals the query id (BEIR drops them; default: drop)")
    add_judge_arguments(holes)
    # --flagged and --second-judge: declared once, in the pipeline's HolesConfig (eval --fill-holes has them too).
    add_config_options(holes, PipelineConfig, sections=("holes",),
                       exclude=("fill_holes", "judge", "store", "thresholds", "relevant_from"))
    holes.set_defaults(handler=run_holes)

    calibrate = subparsers.add_parser(
        "judge-calibrate", help="agreement of a judge with human labels; fits the embedded judge's thresholds",
        description="Judge a stratified sample of the split's human labels (positives and non-positives; unlabelled "
                    "BM25 documents stand in when the qrels hold too few judged-0 pairs), split by query into a fit "
                    "and a held-out part, fit the embedded judge's thresholds on the fit part and write them to "
                    "OUT/embedded-thresholds.json (and to the default location with --save-default), and "
                    "write OUT/calibration.json (accuracy, Cohen's kappa binary and graded, confusion).")
    calibrate.add_argument("--dataset", type=Path, required=True, help="BEIR folder whose human labels the judge is compared with")
    calibrate.add_argument("--split", default="test", help="the qrels/<split>.tsv to sample (default test)")
    calibrate.add_argument("--sample", type=int, required=True, help="pairs to judge (split evenly over the human levels)")
    calibrate.add_argument("--seed", type=int, default=13, help="seed of the sample and the fit/held-out split (default 13)")
    calibrate.add_argument("--out", type=Path, required=True, help="output folder for calibration.json and the fitted thresholds")
    calibrate.add_argument("--cross-encoder", metavar="MODEL",
                           help="embedded judge: also score with this cross-encoder (a model folder); the fitted "
                                "thresholds then name it")
    saving = calibrate.add_mutually_exclusive_group()
    saving.add_argument("--save-default", action="store_true",
                        help="also save the fitted thresholds to the default location ($IRFORGE_JUDGE_THRESHOLDS or the "
                             "user data dir), which every later embedded judge then uses; without it they go to OUT only")
    # Once needed to keep the default untouched, now what happens anyway: still accepted for scripts that pass it.
    saving.add_argument("--no-save-default", action="store_true", help=argparse.SUPPRESS)
    calibrate.add_argument("--index-dir", type=Path, help="BM25 indexes for the negatives (default $IRFORGE_INDEX_DIR or the user data dir)")
    add_judge_arguments(calibrate)
    calibrate.set_defaults(handler=run_calibrate)
    add_audit_parser(subparsers)


def add_audit_parser(subparsers) -> None:
    from irforge.judge.audit import DEFAULT_NEGATIVES_DEPTH, DEFAULT_SAMPLE
    from irforge.judge.manipulations import MANIPULATIONS, describe

    audit = subparsers.add_parser(
        "judge-audit", help="how many labels known manipulations (injected instructions...) let documents flip",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Judge a seeded sample of the split's (query, document) pairs as they are, then once per known manipulation "
            "injected into the document, and report per manipulation: pairs, labels raised, labels that crossed into "
            "relevant (--relevant-from), the flip rate with a 95% Wilson interval, the mean label change, how many "
            "injected documents hole filling's screening flags (never labelled) and the flips that pass the screen. "
            "OUT/judge-audit.json holds it all. Injected documents never answer for the real ones in the judgement "
            "store (it keys by text).", 100),
        epilog="manipulations:\n  " + "\n  ".join(describe(MANIPULATIONS)))
    audit.add_argument("--dataset", type=Path, required=True, help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    audit.add_argument("--split", default="test", help="the qrels/<split>.tsv to sample (default test)")
    audit.add_argument("--sample", type=int, default=DEFAULT_SAMPLE,
                       help=f"pairs to judge, an equal share per human level (default {DEFAULT_SAMPLE}); each is "
                            f"judged once clean and once per manipulation")
    audit.add_argument("--seed", type=int, default=13, help="seed of the sample (default 13)")
    audit.add_argument("--negatives-depth", type=int, default=DEFAULT_NEGATIVES_DEPTH, metavar="K",
                       help=f"unlabelled documents of BM25's top K per query join the non-relevant level (default "
                            f"{DEFAULT_NEGATIVES_DEPTH}: where hole filling judges)")
    audit.add_argument("--manipulation", dest="manipulations", action="append", metavar="NAME",
                       help="audit only this manipulation (repeatable; default all, listed below)")
    audit.add_argument("--out", type=Path, required=True, help="output folder for judge-audit.json")
    audit.add_argument("--index-dir", type=Path, help="BM25 indexes (default $IRFORGE_INDEX_DIR or the user data dir)")
    add_judge_arguments(audit)
    audit.set_defaults(handler=run_audit)


def judge_choice(args: argparse.Namespace):
    from irforge.app.holes import JudgeChoice

    holes = HolesConfig()   # judge-calibrate has no --flagged; argparse checked the choices
    return JudgeChoice(judge=args.judge, store=str(args.store) if args.store else None,
                       thresholds=str(args.thresholds) if args.thresholds else None, relevant_from=args.relevant_from,
                       flagged=getattr(args, "flagged", holes.flagged),
                       second_judge=getattr(args, "second_judge", holes.second_judge))


def run_holes(args: argparse.Namespace) -> int:
    from irforge.app.holes import EXIT_NOT_ALL_JUDGED, judge_holes
    from irforge.judge.holes import not_all_judged
    from irforge.results.render import holes_lines

    try:
        report = judge_holes(args.dataset, args.run, depth=args.depth, out=args.out, split=args.split,
                             measures=args.measures, keep_identical_ids=args.keep_identical_ids, choice=judge_choice(args))
    except ValueError as error:
        print(f"irforge judge-holes: error: {error}", file=sys.stderr)
        return 2
    print("\n".join(holes_lines(report)))
    print(f"wrote {args.out / 'holes.json'}" + (f" and {report['files']['judged_qrels']}" if report["files"]["judged_qrels"] else ""))
    if problem := not_all_judged(report):
        print(f"irforge judge-holes: {problem}", file=sys.stderr)
        return EXIT_NOT_ALL_JUDGED
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from irforge.app.calibration import REPORT, THRESHOLDS, judge_calibrate
    from irforge.app.errors import UsageError

    try:
        report = judge_calibrate(args.dataset, sample=args.sample, out=args.out, split=args.split, seed=args.seed,
                                 cross_encoder=args.cross_encoder, save_default=args.save_default,
                                 index_dir=args.index_dir, choice=judge_choice(args))
    except UsageError as error:
        print(f"irforge judge-calibrate: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    held = report["held_out"]
    print(f"\n{report['dataset']} · {report['split']} · {report['sample']['drawn']} pairs "
          f"({report['sample']['held_out_pairs']} held out) · judge {report['judge']['backend']} {report['judge']['model']}")
    for name in ("accuracy", "kappa_binary", "kappa_graded"):
        value = held[name]
        print(f"{name:<13} {'n/a' if value is None else f'{value:.4f}'} (held out)")
    if report["thresholds"] is not None:
        print_thresholds_written(report["thresholds"]["thresholds"], args.out / THRESHOLDS,
                                 report["files"].get("default_thresholds"))
    print(f"wrote {args.out / REPORT}")
    return 0


def run_audit(args: argparse.Namespace) -> int:
    from irforge.app.errors import UsageError
    from irforge.app.holes import EXIT_NOT_ALL_JUDGED
    from irforge.app.judge_audit import REPORT, judge_audit
    from irforge.judge.audit import audit_lines

    try:
        report = judge_audit(args.dataset, out=args.out, sample=args.sample, seed=args.seed, split=args.split,
                             manipulations=args.manipulations, negatives_depth=args.negatives_depth,
                             index_dir=args.index_dir, choice=judge_choice(args))
    except UsageError as error:
        print(f"irforge judge-audit: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    print("\n".join(audit_lines(report)))
    print(f"wrote {args.out / REPORT}")
    if report["not_labelled"]:
        print(f"irforge judge-audit: {report['not_labelled']} judgements were unparsed or failed; those pairs are left "
              f"out of the figures (run again to retry them)", file=sys.stderr)
        return EXIT_NOT_ALL_JUDGED
    return 0


def print_thresholds_written(cuts, out_file: Path, default_written: str | None) -> None:
    from irforge.judge.backends.embedded import default_thresholds_path

    print(f"thresholds {', '.join(f'{c:.4f}' for c in cuts)}: wrote {out_file}")
    if default_written:
        print(f"wrote {default_written} (the default: the embedded judge now uses them)")
    else:
        print(f"not saved as the default ({default_thresholds_path()}): pass --save-default, "
              f"or --thresholds {out_file} to use them")
