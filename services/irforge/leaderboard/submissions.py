"""A submission: the bytes a team sent (a run file, an endpoint spec, an irforge configuration),
kept with their SHA-256, counted against the team's daily limit, and turned into an ordinary
orchestrator job on the registered dataset.

- The limit counts every submission of the team's UTC day that got past the limit itself,
  refused ones included: a refused submission still tells its sender something about the
  server (a probing defence), so it costs a place like any other.
- The job (irforge.orchestrator.spec.JobSpec) runs on the registered copy of the dataset:
  a run file is `given.runs` (its stored copy), an endpoint spec `endpoint.spec` (or, in the
  reranking category, `rerank.endpoint`), a configuration its own pipeline with the dataset,
  split and measures set here. The reranking category reranks the dataset's fixed BM25 top 100
  (`rerank.candidates`); a run file there may rank only those candidates.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from irforge.config import ConfigError, PipelineConfig, changed, from_mapping
from irforge.data.errors import DataFormatError
from irforge.leaderboard.errors import LeaderboardError
from irforge.leaderboard.registry import CATEGORIES
from irforge.leaderboard.store import DatasetRecord
from irforge.orchestrator.spec import JobSpec

KINDS = ("run", "endpoint", "config")
STORED_NAMES = {"run": "run.txt", "endpoint": "endpoint.yaml", "config": "config.yaml"}
MAX_SUBMISSION_BYTES = 48 * 1024 * 1024   # under the gRPC message cap (common/grpc_server.py)
ALWAYS_MEASURED = ("Judged@10",)          # beside every score on the board
# A configuration's options a submission sets itself, or refuses: paths and files on the server
# (a team does not share its filesystem), hole filling (it writes labels the team would read),
# a run file (submit it as --run), candidates (the category chooses them).
REFUSED_OPTIONS = {
    "runs": "submit a run file as its own submission (--run)",
    "fill_holes": "hole filling writes labels the team would read; it is refused on leaderboard datasets",
    "candidates": "the reranking category reranks the dataset's own BM25 top 100",
    "endpoint": "submit an endpoint spec as its own submission (--endpoint)",
    "reranker_endpoint": "submit a rerank endpoint spec as its own submission (--endpoint, --category reranking)",
    "judge": "hole filling is refused on leaderboard datasets", "thresholds": "hole filling is refused on leaderboard datasets",
    "second_judge": "hole filling is refused on leaderboard datasets",
}
# An endpoint spec's fields that read the server's files or environment: not a team's to name.
SERVER_SIDE_FIELDS = ("api_key_env", "ca_bundle", "client_cert", "client_key")


def fingerprint(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def utc_day(moment: datetime) -> tuple[datetime, datetime]:
    start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def limit_message(team: str, used: int, limit: int, day_start: datetime, day_end: datetime, now: datetime) -> str:
    left = day_end - now
    hours, minutes = divmod(int(left.total_seconds()) // 60, 60)
    return (f"team {team!r} has used {used} of its {limit} submissions for {day_start:%Y-%m-%d} (UTC day; refused "
            f"submissions count too); the next is accepted from {day_end:%Y-%m-%dT%H:%M:%SZ} (in {hours} h {minutes:02d} min)")


def checked_request(category: str, kind: str, system: str, data: bytes) -> None:
    if category not in CATEGORIES:
        raise LeaderboardError(f"category {category!r}: one of {', '.join(CATEGORIES)}")
    if kind not in KINDS:
        raise LeaderboardError(f"submission kind {kind!r}: one of {', '.join(KINDS)}")
    if not system or len(system) > 100 or not system.isprintable():
        raise LeaderboardError(f"system name {system[:100]!r}: 1 to 100 printable characters")
    if not data:
        raise LeaderboardError(f"the submitted {kind} is empty")
    if len(data) > MAX_SUBMISSION_BYTES:
        raise LeaderboardError(f"the submitted {kind} has {len(data)} bytes; at most {MAX_SUBMISSION_BYTES}")


def measures_for(dataset: DatasetRecord, asked: tuple[str, ...] | None) -> tuple[str, ...]:
    from irforge.evaluator.measures import DEFAULT_MEASURES

    measures = list(asked or DEFAULT_MEASURES)
    return tuple(measures + [m for m in (dataset.main_metric, *ALWAYS_MEASURED) if m not in measures])


def job_spec(dataset: DatasetRecord, data_dir: Path, candidates: Path, *, category: str, kind: str, stored: Path,
             data: bytes, name: str) -> JobSpec:
    """The job of a submission (validated), or LeaderboardError naming what is wrong with it."""
    base = PipelineConfig(dataset=str(data_dir), split=dataset.split)
    if kind == "run":
        _check_run(stored, candidates if category == "reranking" else None)
        pipeline = replace(base, given=replace(base.given, runs=(str(stored),)))
    elif kind == "endpoint":
        pipeline = _endpoint_pipeline(base, category, stored, data, candidates)
    else:
        pipeline = _config_pipeline(base, dataset, category, data, candidates)
    pipeline = replace(pipeline, evaluation=replace(pipeline.evaluation,
                                                    measures=measures_for(dataset, pipeline.evaluation.measures)))
    try:
        return JobSpec(pipeline=pipeline, name=name).validate()
    except ValueError as error:
        raise LeaderboardError(f"the submitted {kind}: {error}".replace(str(stored), f"the submitted {kind}")) from None


def _check_run(stored: Path, candidates: Path | None) -> None:
    from irforge.runs import read_run_file

    try:
        run = read_run_file(stored).run
    except DataFormatError as error:
        raise LeaderboardError(str(error).replace(str(stored), "the submitted run file")) from None
    if candidates is None:
        return
    allowed = read_run_file(candidates).run
    for query_id in sorted(run):
        extra = sorted(set(run[query_id]) - set(allowed.get(query_id, {})))
        if extra:
            raise LeaderboardError(
                f"the submitted run file: query {query_id!r} ranks {len(extra)} document(s) outside its BM25 top "
                f"{len(allowed.get(query_id, {}))} candidates; the reranking category ranks only the dataset's "
                "candidates (`irforge leaderboard candidates DATASET --out FILE`)")


def _endpoint_pipeline(base: PipelineConfig, category: str, stored: Path, data: bytes, candidates: Path) -> PipelineConfig:
    from irforge.endpoints.errors import EndpointSpecError
    from irforge.endpoints.spec import EndpointSpec

    try:
        spec = EndpointSpec.from_dict(_yaml(data, "endpoint spec"), source="the submitted endpoint spec")
    except EndpointSpecError as error:
        raise LeaderboardError(str(error)) from None
    named = [field for field in SERVER_SIDE_FIELDS if getattr(spec, field)]
    if named:
        raise LeaderboardError(f"the submitted endpoint spec: {', '.join(named)} name files or variables on the server, "
                               "which a team's spec may not; ask the operator to set up credentials for your endpoint")
    if category == "reranking":
        if not spec.kind.startswith("rerank-"):
            raise LeaderboardError(f"the submitted endpoint spec: kind {spec.kind} retrieves; the reranking category "
                                   "needs a rerank-http or rerank-grpc endpoint")
        return replace(base, rerank=replace(base.rerank, endpoint=str(stored), candidates=str(candidates)))
    if spec.kind.startswith("rerank-"):
        raise LeaderboardError(f"the submitted endpoint spec: kind {spec.kind} reranks; submit it in the reranking "
                               "category (--category reranking)")
    return replace(base, endpoint=replace(base.endpoint, spec=str(stored)))


def _config_pipeline(base: PipelineConfig, dataset: DatasetRecord, category: str, data: bytes,
                     candidates: Path) -> PipelineConfig:
    mapping = _yaml(data, "configuration")
    if isinstance(mapping, dict) and isinstance(mapping.get("config"), dict):   # a results.json: its `config`
        mapping = mapping["config"]
    try:
        given = from_mapping(PipelineConfig, mapping, "the submitted configuration")
    except ConfigError as error:
        raise LeaderboardError(str(error)) from None
    options = changed(given)
    if options.get("dataset") not in (None, dataset.name):
        raise LeaderboardError(f"the submitted configuration names dataset {options['dataset']!r}; a submission runs on "
                               f"the dataset it is submitted to ({dataset.name!r}): leave `dataset` out")
    if options.get("split") not in (None, dataset.split):
        raise LeaderboardError(f"the submitted configuration names split {options['split']!r}; {dataset.name} is "
                               f"registered with split {dataset.split!r}")
    for option, reason in REFUSED_OPTIONS.items():
        if option in options:
            raise LeaderboardError(f"the submitted configuration sets {option}: {reason}")
    pipeline = replace(given, dataset=base.dataset, split=base.split)
    if category == "reranking":
        if not pipeline.rerank.chosen:
            raise LeaderboardError("the submitted configuration has no reranker (rerank.model or rerank.listwise_llm); "
                                   "the reranking category reranks the dataset's BM25 top 100")
        pipeline = replace(pipeline, rerank=replace(pipeline.rerank, candidates=str(candidates)))
    return pipeline


def _yaml(data: bytes, what: str):
    try:
        return yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise LeaderboardError(f"the submitted {what} is not YAML or JSON: {error}") from None
