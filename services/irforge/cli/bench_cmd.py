"""`irforge bench`: one system over several datasets (a suite), each as `irforge eval` evaluates it,
with a table per dataset and mean (BEIR/MTEB style). See docs/bench.md."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import traceback
from pathlib import Path

from irforge.app.errors import UsageError
from irforge.bench.record import failures
from irforge.bench.suite import Suite, SuiteError, load_suite, suite_from_datasets
from irforge.bench.table import FORMATS, suite_table, systems_table
from irforge.cli.eval_cmd import INSTRUCTION_OPTIONS
from irforge.cli.options import add_config_file_option, add_config_options, config_from_args
from irforge.common.output_set import OutputFolderError, check_outside
from irforge.config import ConfigError, PipelineConfig
from irforge.common.redact import redact_text
from irforge.evaluator.measures import DEFAULT_MEASURES, MeasureError, canonical_name, parse_measures


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench", help="evaluate one system on several datasets (a suite): a table per dataset and mean",
        description="Run `irforge eval` with the same flags on every dataset of a suite: OUT/<label>/ gets each "
        "dataset's run.trec and results.json, OUT/suite.json and OUT/suite.md the table (rows: datasets, columns: "
        "measures, a final Mean row). A dataset whose results.json records the same system and data is reused, "
        "not redone, so an interrupted bench resumes with the next dataset. A suite file's `systems:` benches several "
        "systems in one command, each into OUT/<name>/, the flags the base of each. See docs/bench.md.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--suite", type=Path, metavar="FILE",
                        help="suite file (YAML: name, split, measures, datasets, systems); with `systems:` every system "
                             "is benched into OUT/<name>/; see docs/bench.md")
    source.add_argument("--dataset", action="append", metavar="DIR",
                        help="a dataset (BEIR folder, or a name `irforge eval --dataset` takes); repeat for each, "
                             "labelled by folder name")
    parser.add_argument("--split", help="with --dataset: the qrels/<split>.tsv of every dataset (default test)")
    parser.add_argument("--name", help="the suite's name in suite.json (default: the suite file's `name`, else OUT's folder name)")
    parser.add_argument("--out", type=Path, required=True, help="output folder: OUT/<label>/ per dataset, OUT/suite.json, OUT/suite.md")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="how the final table is printed: text (default), markdown or csv (suite.md is always Markdown)")
    airbench = parser.add_argument_group("AIR-Bench submission (docs/bench.md)")
    airbench.add_argument("--airbench-submission", type=Path, metavar="DIR",
                          help="also write every dataset's run in AIR-Bench's submission layout under DIR "
                               "(DIR/<model>/<reranker>/<task>/<domain>/<language>_<dataset>_<split>.json) and the zip "
                               "its leaderboard takes (the non-dev files); every dataset must be in AIR-Bench's layout")
    airbench.add_argument("--airbench-model", metavar="NAME", help="the model name in the submission (default: the system's)")
    airbench.add_argument("--airbench-reranker", metavar="NAME",
                          help="the reranker name in the submission (default: the system's reranker, else NoReranker)")
    parser.add_argument("--mteb-results", type=Path, metavar="DIR",
                        help="also write each dataset's figures as MTEB's per-task results file, DIR/<Task>.json "
                             "(its TaskResult layout: compare and report --mteb read it beside others)")
    add_config_file_option(parser)
    # The system: every pipeline option but what the suite gives per dataset.
    add_config_options(parser, PipelineConfig, exclude=("dataset", "split", *INSTRUCTION_OPTIONS))
    parser.set_defaults(handler=run_bench_command)


def suite_from_args(args: argparse.Namespace) -> Suite:
    if args.suite is not None:
        if args.split is not None:
            raise SuiteError("--split goes with --dataset; a suite file gives its split (`split:`, per dataset too)")
        suite = load_suite(args.suite)
        return suite if args.name is None else dataclasses.replace(suite, name=args.name)
    return suite_from_datasets(args.dataset, args.split or "test", args.name or Path(args.out).resolve().name)


def bench_measures(args: argparse.Namespace, suite: Suite) -> list[str]:
    """-m flags first, then the suite file's measures, then eval's defaults."""
    measures = list(getattr(args, "measures", None) or suite.measures or DEFAULT_MEASURES)
    parse_measures(measures)   # before any dataset runs
    return [canonical_name(name) for name in measures]


def _run_systems(args: argparse.Namespace, base: PipelineConfig, suite: Suite, measures: list[str], say) -> int:
    """A suite file's `systems:`: each into OUT/<name>/ as its own bench, then one table of systems
    by datasets. The command line's options are the base every system starts from."""
    from irforge.app.bench import run_systems, system_configs
    from irforge.app.evaluate import EXIT_MOSTLY_EMPTY

    if args.airbench_submission is not None or args.mteb_results is not None:
        raise SuiteError("--airbench-submission and --mteb-results write one system's files: with a suite file's "
                         "`systems:`, run bench --suite on one system for them")
    configs = system_configs(base, suite, measures)   # every system validated before any dataset runs
    say(f"irforge bench: {suite.name}: {len(configs)} systems x {len(suite.entries)} datasets -> {args.out}")
    records = run_systems(configs, suite, Path(args.out), measures, say=say)
    print(f"\n{suite.name} · {len(records)} systems · {len(suite.entries)} datasets · wrote "
          f"{', '.join(f'{args.out}/{name}' for name in records)}\n")
    sys.stdout.write(systems_table(records, measures[0], args.format))
    failed = [f"{name}/{line}" for name, record in records.items() for line in failures(record)]
    for line in failed:
        print(f"irforge bench: error: dataset {redact_text(line)}", file=sys.stderr)
    return EXIT_MOSTLY_EMPTY if failed else 0


def run_bench_command(args: argparse.Namespace) -> int:
    # Here, not at the top: `irforge --help` imports every command's module (start-up time).
    from irforge.app.airbench import search_for_submission, unjudged_split
    from irforge.app.bench import (DatasetFailed, check_airbench_suite, check_mteb_suite, run_bench,
                                   write_airbench_submission, write_mteb_results)
    from irforge.app.evaluate import EXIT_MOSTLY_EMPTY
    from irforge.bench.airbench import SubmissionError, check_names
    from irforge.cli.main import USER_ERRORS

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        suite = suite_from_args(args)
        measures = bench_measures(args, suite)
        config = config_from_args(args, PipelineConfig, exclude=("dataset", "split"))   # the suite gives them
        if Path(args.out).exists() and not Path(args.out).is_dir():
            raise OutputFolderError(f"--out {args.out}: exists and is not a folder")
        # A store inside OUT would sit among (or under) the datasets' folders, which runs replace.
        stores = config.stores
        check_outside(args.out, {"--index-dir": stores.index_dir, "--vector-dir": stores.vector_dir,
                                 "--embedding-cache": stores.embedding_cache, "--store": config.holes.store})
        submission = args.airbench_submission
        if submission is None and (args.airbench_model or args.airbench_reranker):
            raise SuiteError("--airbench-model and --airbench-reranker go with --airbench-submission DIR")
        if submission is not None:
            check_names(args.airbench_model or "x", args.airbench_reranker or "x")
            check_airbench_suite(suite)   # before any dataset runs
        if args.mteb_results is not None:
            check_mteb_suite(suite)
        if suite.systems:
            return _run_systems(args, config, suite, measures, say)
        if submission is not None and unjudged_split(suite):   # AIR-Bench's private test qrels: search only
            written = search_for_submission(config, suite, Path(args.out), submission, args.airbench_model,
                                            args.airbench_reranker, say=say)
            for path in written:
                say(f"AIR-Bench submission: wrote {path}")
            print(f"\n{suite.name} · {len(suite.entries)} datasets searched, not evaluated (no qrels for split "
                  f"{suite.entries[0].split}: AIR-Bench's leaderboard scores them) · wrote {submission}")
            return 0
        say(f"irforge bench: {suite.name}: {len(suite.entries)} datasets -> {args.out}")
        record = run_bench(config, suite, Path(args.out), measures, say=say)
        if args.mteb_results is not None:
            for path in write_mteb_results(record, Path(args.out), args.mteb_results):
                say(f"MTEB results: wrote {path}")
        if submission is not None:
            written = write_airbench_submission(record, Path(args.out), submission, args.airbench_model, args.airbench_reranker)
            for path in written:
                say(f"AIR-Bench submission: wrote {path}")
            if not any(path.suffix == ".zip" for path in written):
                say("AIR-Bench submission: no zip: only dev files, which the leaderboard does not take "
                    "(AIR-Bench's zip_results.py leaves *_dev.json out; dev qrels are public, score them here)")
    except (SuiteError, SubmissionError, MeasureError, OutputFolderError, ConfigError, UsageError) as error:
        print(f"irforge bench: error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    except DatasetFailed as failed:
        print(f"irforge bench: error: {redact_text(str(failed))}", file=sys.stderr)
        if isinstance(failed.error, (UsageError, *USER_ERRORS)):
            return 2
        traceback.print_exception(failed.error, file=sys.stderr)   # not the user's doing: the full story
        return 1
    print(f"\n{record['name']} · {len(record['datasets'])} datasets · wrote {args.out}/suite.json and suite.md\n")
    sys.stdout.write(suite_table(record, args.format))
    failed = failures(record)
    for line in failed:   # as `irforge eval` exits on that dataset: written, and not a success
        print(f"irforge bench: error: dataset {redact_text(line)}", file=sys.stderr)
    return EXIT_MOSTLY_EMPTY if failed else 0
