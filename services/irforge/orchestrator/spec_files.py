"""A JobSpec to and from its other forms: the proto (its `pipeline` a protobuf Struct holding the
PipelineConfig's nested mapping), a YAML file (the proto's JSON mapping: `pipeline: {retriever:
dense, bm25: {k1: 1.2}}`), the job store's dict, and `irforge submit`'s configuration."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

from google.protobuf import json_format

from irforge.common.files import read_yaml
from irforge.config import ConfigError, PipelineConfig, from_mapping as config_from_mapping, to_mapping
from irforge.config.values import changed_mapping
from irforge.datasets import DatasetError, is_dataset_name, resolve_dataset
from irforge.orchestrator.errors import JobSpecError
from irforge.orchestrator.spec import JobSpec, SuiteMember, suite_members
from irforge.v1 import orchestrator_pb2


# -- the job store's copy ---------------------------------------------------------------------

def as_dict(spec: JobSpec) -> dict:
    return {"pipeline": to_mapping(spec.pipeline), "output": spec.output, "shards": spec.shards, "name": spec.name,
            "instructions": spec.instructions, "datasets": [asdict(member) for member in spec.datasets]}


def from_dict(value: dict) -> JobSpec:
    """Back from as_dict() (a record written before jobs held a PipelineConfig: see _legacy)."""
    if "pipeline" not in value:
        return _legacy(value)
    return JobSpec(pipeline=config_from_mapping(PipelineConfig, value["pipeline"], "stored job spec"),
                   output=value.get("output", ""), shards=value.get("shards", 0), name=value.get("name", ""),
                   instructions=value.get("instructions", False),
                   datasets=tuple(SuiteMember(**member) for member in value.get("datasets", ())))


# The flat options of the fields a stored spec had before it held a PipelineConfig.
_LEGACY_NAMES = {"reranker_model": "reranker", "holes_depth": "fill_holes"}
_LEGACY_UNSET = {"model": "", "endpoint": "", "reranker_model": "", "reranker_endpoint": "", "holes_depth": 0,
                 "judge": "", "instruction_template": ""}


def _legacy(value: dict) -> JobSpec:
    options = {_LEGACY_NAMES.get(key, key): item for key, item in value.items()
               if key not in ("output", "shards", "name", "instructions", "datasets") and _LEGACY_UNSET.get(key, ...) != item}
    return JobSpec.of(output=value.get("output", ""), shards=value.get("shards", 0), name=value.get("name", ""),
                      instructions=value.get("instructions", False),
                      datasets=tuple(SuiteMember(**member) for member in value.get("datasets", ())), **options)


# -- proto ------------------------------------------------------------------------------------

def to_proto(spec: JobSpec) -> orchestrator_pb2.JobSpec:
    message = orchestrator_pb2.JobSpec(
        output=spec.output, shards=spec.shards, name=spec.name,
        instructions=orchestrator_pb2.InstructionsSpec(enabled=spec.instructions),
        datasets=[orchestrator_pb2.SuiteDataset(dataset=m.dataset, label=m.label, split=m.split) for m in spec.datasets])
    message.pipeline.update(changed_mapping(spec.pipeline))   # the options chosen; results.json records them all
    return message


def from_proto(message: orchestrator_pb2.JobSpec) -> JobSpec:
    """Unset fields take their defaults; the result is validated."""
    mapping = json_format.MessageToDict(message.pipeline) if message.HasField("pipeline") else {}
    try:
        pipeline = config_from_mapping(PipelineConfig, mapping, "job spec field 'pipeline'")
    except ConfigError as error:
        raise JobSpecError(str(error)) from None
    return JobSpec(
        pipeline=pipeline, output=message.output, shards=message.shards, name=message.name,
        instructions=message.instructions.enabled,
        datasets=suite_members([(m.dataset, m.label, m.split) for m in message.datasets], pipeline.split),
    ).validate()


# -- files ------------------------------------------------------------------------------------

def from_mapping(mapping: dict, source: str = "job spec") -> JobSpec:
    """The JobSpec message's JSON mapping (what a YAML spec file holds)."""
    if not isinstance(mapping, dict):
        raise JobSpecError(f"{source}: expected a mapping of JobSpec fields, got {type(mapping).__name__}")
    try:
        message = json_format.ParseDict(mapping, orchestrator_pb2.JobSpec())
    except json_format.ParseError as error:
        hint = (" (the system's options live under `pipeline:` since jobs embed the pipeline configuration, "
                "e.g. `pipeline: {dataset: DIR, retriever: dense}`)" if "has no field named" in str(error) else "")
        raise JobSpecError(f"{source}: {error}{hint}") from None
    try:
        return from_proto(message)
    except JobSpecError as error:
        raise JobSpecError(f"{source}: {error}") from None


# The pipeline's paths, resolved against a spec file's folder when relative.
PIPELINE_PATHS = (("dataset",), ("endpoint", "spec"), ("rerank", "endpoint"), ("holes", "judge"), ("holes", "thresholds"))


def from_yaml(path: Path) -> JobSpec:
    mapping = read_yaml(path, "job spec", JobSpecError)
    spec = from_mapping(mapping, source=str(path))
    # Relative paths in a spec file mean: relative to the file (resolved where it is submitted).
    base = Path(path).resolve().parent
    return resolved(spec, lambda value: str(base / value) if not Path(value).is_absolute() else value)


def resolved(spec: JobSpec, resolve) -> JobSpec:
    """`spec` with `resolve` applied to every path it names (the embedded judge is no path)."""
    pipeline = spec.pipeline
    for section, *name in PIPELINE_PATHS:
        if not name:
            pipeline = replace(pipeline, dataset=resolve(pipeline.dataset) if pipeline.dataset else pipeline.dataset)
            continue
        part = getattr(pipeline, section)
        value = getattr(part, name[0])
        if value and not (section == "holes" and name[0] == "judge" and value == "embedded"):
            pipeline = replace(pipeline, **{section: replace(part, **{name[0]: resolve(value)})})
    return replace(spec, pipeline=pipeline, output=resolve(spec.output) if spec.output else "",
                   datasets=tuple(replace(m, dataset=resolve(m.dataset)) for m in spec.datasets))


# -- the command line -------------------------------------------------------------------------

def from_config(config: PipelineConfig, *, output: str = "", shards: int = 0, name: str = "", instructions: bool = False,
                datasets: tuple[SuiteMember, ...] = ()) -> JobSpec:
    """A job of `config` (`irforge submit`'s flags, irforge.cli.options): paths resolved here,
    a dataset name (beir/scifact) to the copy downloaded here, as for `irforge eval`; validated."""
    if config.dataset and is_dataset_name(config.dataset):
        try:
            config = replace(config, dataset=str(resolve_dataset(config.dataset)))
        except DatasetError as error:
            raise JobSpecError(str(error)) from None
    spec = JobSpec(pipeline=config, output=output, shards=shards, name=name, instructions=instructions,
                   datasets=tuple(datasets))
    return resolved(spec, lambda value: str(Path(value).resolve())).validate()
