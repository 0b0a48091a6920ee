"""`irforge leaderboard datasets|candidates|submit|submissions|show` (a team's commands) and
`irforge admin dataset register` (an operator's): the Leaderboard service of a running
orchestrator (`irforge serve`, or the cluster's). docs/leaderboard.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from irforge.cli.caller import add_caller_arguments as _add_server
from irforge.common.extras import require_extra

KINDS = ("run", "endpoint", "config")


def _errors():
    from irforge.accounts.errors import USER_ERRORS as ACCOUNT_ERRORS
    from irforge.leaderboard.board import BoardError
    from irforge.leaderboard.errors import DatasetNotFound, LeaderboardError, LimitReached, SubmissionNotFound
    from irforge.orchestrator.errors import JobSpecError

    return (LeaderboardError, LimitReached, DatasetNotFound, SubmissionNotFound, BoardError, JobSpecError, *ACCOUNT_ERRORS)


def _fail(args, error: Exception) -> int:
    print(f"irforge {args.command}: error: {error}", file=sys.stderr)
    return 2


def _client(args):
    require_extra("platform", "grpc", "irforge leaderboard (the leaderboard's client)")
    from irforge.cli.caller import token_from
    from irforge.leaderboard.client import LeaderboardClient

    return LeaderboardClient(args.server, token=token_from(args))


def add_parsers(subparsers) -> None:
    board = subparsers.add_parser("leaderboard", help="submit to the platform's leaderboard and read it (docs/leaderboard.md)",
                                  description="Closed-book datasets, your submissions and the board, on a running orchestrator.")
    commands = board.add_subparsers(dest="leaderboard_command", required=True, metavar="COMMAND")

    datasets = commands.add_parser("datasets", help="the registered datasets: task, main metric, language, closed or open")
    _add_server(datasets)
    datasets.set_defaults(handler=run_datasets)

    candidates = commands.add_parser("candidates", help="download a dataset's fixed BM25 top 100 (the reranking category's "
                                     "candidates; a TREC run, no label in it)")
    candidates.add_argument("dataset", metavar="NAME", help="the registered dataset (irforge leaderboard datasets)")
    candidates.add_argument("--out", type=Path, required=True, metavar="FILE", help="where to write the TREC run")
    _add_server(candidates)
    candidates.set_defaults(handler=run_candidates)

    submit = commands.add_parser("submit", help="submit a system to a dataset: a run file, an endpoint spec or a configuration",
                                 description="Each submission counts against your team's daily limit, refused ones "
                                 "included, and is kept with its SHA-256. Prints its job's id (follow it with `irforge "
                                 "watch JOB`).")
    submit.add_argument("--dataset", required=True, metavar="NAME", help="the registered dataset to submit to")
    submit.add_argument("--system", required=True, metavar="NAME", help="your name for the system (a board row)")
    submit.add_argument("--category", choices=("retrieval", "reranking"), default="retrieval",
                        help="retrieval (default), or reranking the dataset's BM25 top 100")
    given = submit.add_mutually_exclusive_group(required=True)
    given.add_argument("--run", type=Path, metavar="FILE", help="a run file (TREC, JSON, TSV, MS MARCO)")
    given.add_argument("--endpoint", type=Path, metavar="SPEC", help="an endpoint spec YAML (docs/endpoints.md)")
    given.add_argument("--config", type=Path, metavar="FILE", help="an irforge pipeline configuration (YAML/JSON; no dataset)")
    _add_server(submit)
    submit.set_defaults(handler=run_submit)

    listed = commands.add_parser("submissions", help="your submissions (an operator's: everyone's), newest first")
    listed.add_argument("--json", action="store_true", help="one JSON object per submission")
    _add_server(listed)
    listed.set_defaults(handler=run_submissions)

    show = commands.add_parser("show", help="the board: systems x datasets, main metric (Judged@10), mean and rank")
    show.add_argument("--category", choices=("retrieval", "reranking"), help="only this category's rows (default both)")
    show.add_argument("--dataset", action="append", dest="datasets", metavar="NAME", help="only these datasets (repeatable)")
    show.add_argument("--language", metavar="CODE", help="only datasets in this language (ISO 639-1)")
    show.add_argument("--task", metavar="TASK", help="only datasets of this task (qa, long-doc, ...)")
    show.add_argument("--since", metavar="DATE", help="only submissions made on or after this ISO date or time (UTC)")
    show.add_argument("--until", metavar="DATE", help="only submissions made on or before this ISO date or time (UTC)")
    show.add_argument("--baseline", metavar="TEAM/SYSTEM", help="test every row against this one too (a letter per cell)")
    shape = show.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="the board as JSON")
    shape.add_argument("--markdown", action="store_true", help="the board as a Markdown table")
    _add_server(show)
    show.set_defaults(handler=run_show)


def add_admin_parsers(areas) -> None:
    """`irforge admin dataset ...`, under the admin command irforge.cli.admin_cmd makes."""
    dataset = areas.add_parser("dataset", help="closed-book datasets")
    actions = dataset.add_subparsers(dest="dataset_command", required=True, metavar="ACTION")
    register = actions.add_parser("register", help="copy a BEIR folder on the server into the leaderboard and compute "
                                  "its BM25 top 100 once",
                                  description="The folder is read on the orchestrator's filesystem; its corpus, queries "
                                  "and the split's qrels are copied into the state dir, where the qrels stay.")
    register.add_argument("name", metavar="NAME", help="the dataset's name on the board (lower-case letters, digits, . _ -)")
    register.add_argument("--from", dest="source", required=True, metavar="FOLDER", help="a BEIR folder on the server")
    register.add_argument("--split", default="test", help="the qrels/<split>.tsv to copy and evaluate (default test)")
    register.add_argument("--task", default="qa", help="qa (main metric nDCG@10) or long-doc (R@10), as AIR-Bench")
    register.add_argument("--main-metric", metavar="MEASURE", help="instead of the task's")
    register.add_argument("--language", default="en", metavar="CODE",
                          help="ISO 639-1 code: BM25's analysis for the candidates, and a board filter (default en)")
    openness = register.add_mutually_exclusive_group()
    openness.add_argument("--closed", dest="closed", action="store_true", default=True,
                          help="qrels hidden from teams (the default)")
    openness.add_argument("--open", dest="closed", action="store_false", help="qrels not hidden: per-query values shown")
    register.add_argument("--per-query", choices=("withheld", "coarsened", "shown"),
                          help="what teams see per query (default: withheld when closed, shown when open)")
    _add_server(register)
    register.set_defaults(handler=run_register)


def run_register(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            # As `irforge submit`'s paths: resolved where typed, read on the orchestrator's filesystem.
            dataset = client.register_dataset(args.name, str(Path(args.source).resolve()), split=args.split, task=args.task,
                                              main_metric=args.main_metric, language=args.language, closed=args.closed,
                                              per_query=args.per_query)
    except _errors() as error:
        return _fail(args, error)
    print(f"registered {dataset.name}: {dataset.queries} queries, {dataset.documents} documents, "
          f"{'closed' if dataset.closed else 'open'} (per-query: {dataset.per_query}), main metric {dataset.main_metric}; "
          f"BM25 top {dataset.candidates_depth} candidates sha256 {dataset.candidates_sha256}")
    return 0


def run_datasets(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            datasets = client.datasets()
    except _errors() as error:
        return _fail(args, error)
    for d in datasets:
        print(f"{d.name}  {d.split}  {d.task}  {d.main_metric}  {d.language}  {'closed' if d.closed else 'open'}  "
              f"per-query {d.per_query}  {d.queries} queries  {d.documents} documents")
    return 0


def run_candidates(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            client.candidates(args.dataset, args.out)
    except _errors() as error:
        return _fail(args, error)
    print(f"wrote {args.out}")
    return 0


def run_submit(args: argparse.Namespace) -> int:
    kind, path = next((k, getattr(args, k)) for k in KINDS if getattr(args, k) is not None)
    try:
        data = path.read_bytes()
    except OSError as error:
        return _fail(args, f"--{kind} {path}: {error.strerror or error}")
    try:
        with _client(args) as client:
            submission = client.submit(dataset=args.dataset, system=args.system, category=args.category, kind=kind, data=data)
    except _errors() as error:
        return _fail(args, error)
    # The job id alone on stdout, as `irforge submit` prints it: JOB=$(irforge leaderboard submit ...).
    print(submission.job_id)
    print(f"submission {submission.submission_id} (sha256 {submission.fingerprint}): job {submission.job_id} "
          f"{submission.state}; follow it with `irforge watch {submission.job_id}`", file=sys.stderr)
    return 0


def run_submissions(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            submissions = client.submissions()
    except _errors() as error:
        return _fail(args, error)
    from google.protobuf import json_format

    for s in submissions:
        if args.json:
            print(json.dumps(json_format.MessageToDict(s, preserving_proto_field_name=True), sort_keys=True))
            continue
        value = f"{s.main_metric} {s.metrics[s.main_metric]:.4f}" if s.main_metric in s.metrics else ""
        print(f"{s.submission_id}  {s.created[:19]}  {s.dataset}  {s.category}  {s.team}/{s.system}  {s.kind}  "
              f"{s.state}  {value}  {s.error}".rstrip())
    return 0


def run_show(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            board, text = client.board(category=args.category, datasets=args.datasets, language=args.language,
                                       task=args.task, since=args.since, until=args.until, baseline=args.baseline,
                                       text_format="markdown" if args.markdown else "text")
    except _errors() as error:
        return _fail(args, error)
    print(json.dumps(board, indent=2, sort_keys=True) if args.json else text, end="\n" if args.json else "")
    return 0
