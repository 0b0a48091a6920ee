"""`irforge submit | watch | results | jobs | cancel`: evaluation jobs on a running orchestrator
(`irforge serve` on one machine, or the cluster's orchestrator)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irforge.cli.caller import add_caller_arguments, token_from
from irforge.cli.options import add_config_file_option, add_config_options, config_from_args
from irforge.common.extras import require_extra
from irforge.config import PipelineConfig, with_options
from irforge.orchestrator.limits import MAX_JOBS_LISTED, MAX_SHARDS
from irforge.results.reading import read_json_object, read_results
from irforge.results.render import text as results_text

SUBMIT_OWN = ("server",)   # submit's --server is the orchestrator (the services' addresses are refused in a job anyway)


def _whole_number(low: int, high: int):
    """An argparse type: a whole number within low..high (a larger one would not fit the request)."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be within {low}..{high}, got {number}")
        return number
    return parse


def _add_server(parser: argparse.ArgumentParser) -> None:
    add_caller_arguments(parser)


def add_parsers(subparsers) -> None:
    submit = subparsers.add_parser(
        "submit", help="submit an evaluation job to the orchestrator; prints the job id",
        description="Submit a job: the pipeline options of `irforge eval` (every field of the pipeline configuration, "
        "docs/configuration.md; paths are resolved here and must exist on the orchestrator's filesystem; the options "
        "that configure the services are refused), or --spec FILE (YAML: the JobSpec message's fields).",
    )
    submit.add_argument("--out", type=Path, help="also copy results.json and run.trec to this folder on the orchestrator's filesystem")
    add_config_file_option(submit)
    add_config_options(submit, PipelineConfig, exclude=SUBMIT_OWN)
    submit.add_argument("--spec", type=Path, metavar="FILE", help="job spec YAML instead of flags")
    submit.add_argument("--suite", type=Path, metavar="FILE",
                        help="a suite as one job (`irforge bench`'s suite file, docs/bench.md): the flags' system on "
                             "each of its datasets; --out then gets OUT/<label>/ per dataset and suite.json")
    submit.add_argument("--shards", type=_whole_number(0, MAX_SHARDS), default=0,
                        help=f"encode the corpus in this many shards (dense, sparse, hybrid; at most {MAX_SHARDS})")
    submit.add_argument("--name", default="", help="a label for the job")
    submit.add_argument("--instructions", action="store_true",
                        help="an instruction-following job, as `irforge eval-instructions`: --dataset is an InfoSearch, "
                             "FollowIR or InstructIR folder (or a folder of them)")
    _add_server(submit)
    submit.set_defaults(handler=run_submit)

    watch = subparsers.add_parser(
        "watch", help="follow a job with a progress bar; exit 1 if it fails or succeeded with warnings",
        description="Follow a job to its end. If the orchestrator restarts or the connection drops, reconnect and "
        "resume where the watch left off. Exit 0 when the job SUCCEEDED, 1 when it failed, was cancelled or succeeded "
        "with warnings (e.g. holes the judge failed on: the same cases in which `irforge eval` exits 1).")
    watch.add_argument("job_id", metavar="JOB", help="the job id `irforge submit` printed")
    watch.add_argument("--reconnect-timeout", type=float, default=300.0, metavar="SECONDS",
                       help="give up when the orchestrator has not answered for this long (default 300)")
    _add_server(watch)
    watch.set_defaults(handler=run_watch)

    results = subparsers.add_parser("results", help="write a finished job's results.json and run.trec")
    results.add_argument("job_id", metavar="JOB", help="the job id `irforge submit` printed")
    results.add_argument("--out", type=Path, required=True, help="output folder")
    _add_server(results)
    results.set_defaults(handler=run_results)

    jobs = subparsers.add_parser("jobs", help="list the orchestrator's jobs, newest first")
    jobs.add_argument("--limit", type=_whole_number(1, MAX_JOBS_LISTED), default=20,
                      help=f"jobs listed (default 20, at most {MAX_JOBS_LISTED})")
    _add_server(jobs)
    jobs.set_defaults(handler=run_jobs)

    cancel = subparsers.add_parser("cancel", help="cancel a queued or running job")
    cancel.add_argument("job_id", metavar="JOB", help="the job id `irforge submit` printed")
    _add_server(cancel)
    cancel.set_defaults(handler=run_cancel)


def _client(args):
    require_extra("platform", "grpc", f"irforge {args.command} (an orchestrator's client)")
    from irforge.orchestrator.client import OrchestratorClient

    return OrchestratorClient(args.server, token=token_from(args))


def _job_errors():
    from irforge.orchestrator.errors import JobNotFound, JobSpecError, RequestError, ResultsNotReady

    return JobNotFound, JobSpecError, ResultsNotReady, RequestError


def _fail(args, error: Exception) -> int:
    print(f"irforge {args.command}: error: {error}", file=sys.stderr)
    return 2


def run_submit(args: argparse.Namespace) -> int:
    from irforge.orchestrator.spec import JobSpec

    try:
        dataset = getattr(args, "dataset", None)
        if sum(given is not None for given in (args.spec, dataset, args.suite)) > 1:
            raise _job_errors()[1]("give --spec FILE, --suite FILE or --dataset with flags: one of them, not both")
        if args.spec:
            spec = JobSpec.from_yaml(args.spec)
        elif args.suite is not None:
            spec = suite_job_spec(args)
        else:
            spec = submit_spec(args)
            if not spec.dataset:
                raise _job_errors()[1]("give --dataset (and the other `irforge eval` flags) or --spec FILE")
        with _client(args) as client:
            job_id = client.submit(spec)
    except _job_errors() as error:
        return _fail(args, error)
    print(job_id)
    return 0


def submit_spec(args: argparse.Namespace, base=None, datasets=()):
    """The job `irforge submit`'s flags ask for: the pipeline configuration `irforge eval` would
    build from them (irforge.cli.options), and the job's own fields."""
    from irforge.config import ConfigError
    from irforge.orchestrator.spec import config_error
    from irforge.orchestrator.spec_files import from_config

    try:
        config = config_from_args(args, PipelineConfig, base=base, exclude=SUBMIT_OWN)
    except ConfigError as error:
        raise config_error(error) from None
    if datasets and config.dataset:
        raise _job_errors()[1]("--dataset goes without --suite: the suite file names the datasets")
    return from_config(config, output=str(args.out or ""), shards=args.shards or 0, name=args.name or "",
                       instructions=args.instructions, datasets=datasets)


def suite_job_spec(args: argparse.Namespace):
    """`irforge submit --suite FILE`: the suite file's datasets, split, name and measures (-m flags
    first, as in `irforge bench`), with the flags' system."""
    from irforge.bench.suite import SuiteError, load_suite
    from irforge.orchestrator.spec import SuiteMember

    try:
        suite = load_suite(args.suite)
    except SuiteError as error:
        raise _job_errors()[1](str(error)) from None
    if getattr(args, "split", None) is not None:
        raise _job_errors()[1]("--split goes with --dataset; a suite file gives its split (`split:`, per dataset too)")
    if suite.systems:   # one job is one system: the others would be dropped without a word
        raise _job_errors()[1](f"suite file {args.suite}: field 'systems': a suite job runs one system (the flags'); "
                               "run irforge bench --suite for several systems, or submit one job per system")
    if any(entry.run for entry in suite.entries):
        raise _job_errors()[1](f"suite file {args.suite}: its datasets give `run:` files; a suite job does not take "
                               "them yet: submit each dataset's run as its own job (--dataset D --run FILE), or "
                               "run irforge bench --suite")
    members = tuple(SuiteMember(dataset=e.location, label=e.label, split=e.split) for e in suite.entries)
    base = PipelineConfig(split=suite.split)
    if suite.measures and getattr(args, "measures", None) is None:
        base = with_options(base, {"measures": tuple(suite.measures)})
    args = argparse.Namespace(**{**vars(args), "name": args.name or suite.name})
    return submit_spec(args, base=base, datasets=members)


def run_watch(args: argparse.Namespace) -> int:
    from irforge.cli.watch_view import WatchView

    view = WatchView(sys.stderr)
    try:
        with _client(args) as client:
            try:
                for event in client.follow(args.job_id, reconnect_s=args.reconnect_timeout, on_reconnect=view.lost):
                    view.show(event)
            finally:
                view.close()
            job = client.get(args.job_id)
    except _job_errors() as error:
        return _fail(args, error)
    if job.state.value != "SUCCEEDED":
        print(f"job {job.job_id} {job.state.value}" + (f": {job.error}" if job.error else ""), file=sys.stderr)
        return 1
    print(f"job {job.job_id} SUCCEEDED" + (" with warnings" if job.warnings else "")
          + (f"; mean over its {len(job.spec['datasets'])} datasets (irforge results for the table):" if job.spec.get("datasets") else ""))
    # The wire's map has no order: the spec's measure order first, as `irforge eval` prints them.
    from irforge.app.holes import EXIT_NOT_ALL_JUDGED
    from irforge.orchestrator.spec import JobSpec

    measures = JobSpec.from_dict(job.spec).measures
    order = [m for m in measures if m in job.metrics] + sorted(set(job.metrics) - set(measures))
    width = max((len(name) for name in order), default=0)
    for name in order:
        print(f"{name:<{width}}  {job.metrics[name]:.4f}")
    for warning in job.warnings:
        print(f"irforge watch: warning: {warning}", file=sys.stderr)
    return EXIT_NOT_ALL_JUDGED if job.warnings else 0


def run_results(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            client.results(args.job_id, args.out)
    except _job_errors() as error:
        return _fail(args, error)
    if (args.out / "suite.json").exists():
        from irforge.bench.table import suite_table

        from irforge.bench.record import check_suite

        # Files a server sent: read back through the same checks as any results the user gives.
        suite_file = args.out / "suite.json"
        record = read_json_object(suite_file)
        check_suite(record, str(suite_file))
        sys.stdout.write(suite_table(record))
        return 0
    sys.stdout.write(results_text(read_results(args.out / "results.json")))
    return 0


def run_jobs(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            jobs = client.list(args.limit)
    except _job_errors() as error:
        return _fail(args, error)
    from irforge.orchestrator.spec import JobSpec

    for job in jobs:
        spec = JobSpec.from_dict(job.spec)
        running = next((s.name for s in job.steps if s.state == "running"), "")
        where = job.error or running or "; ".join(job.warnings)
        what = f"suite of {len(spec.datasets)}" if spec.is_suite else Path(spec.dataset).name
        print(f"{job.job_id}  {job.state.value:<9}  {job.created_at[:19]}  {what}  "
              f"{spec.pipeline.retriever}  {where}".rstrip())
    return 0


def run_cancel(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            job = client.cancel(args.job_id)
    except _job_errors() as error:
        return _fail(args, error)
    print(f"job {job.job_id} {job.state.value}")
    return 0
