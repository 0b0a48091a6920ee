"""A job spec: what to evaluate, declaratively. The system is one PipelineConfig (the same typed
configuration `irforge eval` builds from its flags, irforge.config), and the job adds what only a
job has: where to copy its results, sharded encoding, a name, instruction-following, a suite of
datasets. Built from flags, from a YAML file or from the proto (irforge.orchestrator.spec_files);
validated before any work starts.

Paths (dataset, endpoint, candidates, judge, thresholds, output) are on the orchestrator's filesystem: the
job runs there. Options that configure the services (their addresses, stores, backends, the
encoder's prefixes, sequence length, device...) are refused: a job names the model and the
services answer with its full identity (JOB_REFUSED lists them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from irforge.common.allowed_roots import OutsideAllowedRoots, enforced
from irforge.common.output_set import OutputFolderError, check_output_folder
from irforge.config import ConfigError, PipelineConfig, validate, with_options
from irforge.config.options import Leaf, leaves
from irforge.config.values import changed
from irforge.evaluator.measures import MeasureError, parse_measures
from irforge.orchestrator.errors import JobSpecError
from irforge.orchestrator.limits import MAX_LABEL_CHARS, MAX_SHARDS, MAX_SUITE_DATASETS, MAX_TEXT_CHARS

SERVICES_REASON = "these configure the services (`irforge serve` / `irforge service`), not a job; the orchestrator " \
                  "uses its services' settings"
JOB_FIELDS = ("output", "shards", "name", "instructions", "datasets")


def job_refused(leaf: Leaf) -> bool:
    """An option of the services' configuration, refused in a job: the services and stores
    sections, the backends, the stored precision of exact vectors (the corpus service's
    --exact-precision), the judgement store, the encoder's options other than its model."""
    section = leaf.path[0]
    return (section in ("services", "stores") or (section == "encoder" and leaf.path[1] != "model")
            or leaf.path in (("bm25", "backend"), ("vectors", "backend"), ("vectors", "exact_precision"), ("holes", "store")))


# The flat names (irforge.config) of the options a job refuses, with the flags they come from.
JOB_REFUSED: dict[str, str] = {leaf.info.name: leaf.info.flag for leaf in leaves(PipelineConfig) if job_refused(leaf)}
_DOTTED = {leaf.info.flag: "pipeline." + leaf.dotted for leaf in leaves(PipelineConfig)}


def config_error(error: ConfigError, prefix: str = "") -> JobSpecError:
    """A configuration's refusal as a job spec's: naming the pipeline field of the flag it names."""
    flag = re.search(r"--[a-z0-9-]+", str(error))
    where = _DOTTED.get(flag.group(0), "pipeline") if flag else "pipeline"
    return JobSpecError(f"{prefix}job spec field {where!r}: {error}")


@dataclass(frozen=True)
class SuiteMember:
    """One dataset of a suite job: a BEIR folder, its label (folder in the results, row in the table), its split."""
    dataset: str
    label: str
    split: str


@dataclass(frozen=True)
class JobSpec:
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)   # the system, and the dataset it runs on
    output: str = ""
    shards: int = 0
    name: str = ""
    instructions: bool = False            # an instruction-following folder (irforge eval-instructions)
    datasets: tuple[SuiteMember, ...] = ()   # a suite (`irforge bench` as one job); pipeline.dataset is then ""

    @classmethod
    def of(cls, *, output: str = "", shards: int = 0, name: str = "", instructions: bool = False,
           datasets: tuple[SuiteMember, ...] = (), **options) -> JobSpec:
        """A spec from the job's fields and the pipeline's flat options (`dataset=...`,
        `retriever="dense"`, `k1=1.2`, `fill_holes=5`: the Python API's keywords)."""
        try:
            pipeline = with_options(PipelineConfig(), options, "job spec")
        except ConfigError as error:
            raise config_error(error) from None
        return cls(pipeline=pipeline, output=output, shards=shards, name=name, instructions=instructions,
                   datasets=tuple(datasets))

    # -- what the spec asks for ---------------------------------------------------------------
    @property
    def dataset(self) -> str:
        return self.pipeline.dataset

    @property
    def split(self) -> str:
        return self.pipeline.split

    @property
    def measures(self) -> tuple[str, ...]:
        """The measures asked for, else the command's own: eval's defaults, eval-instructions' nDCG@10."""
        return self.pipeline.measures(instructions=self.instructions)

    @property
    def has_reranker(self) -> bool:
        return self.pipeline.has_reranker

    @property
    def holes_depth(self) -> int:
        return self.pipeline.holes.depth or 0

    @property
    def is_suite(self) -> bool:
        return bool(self.datasets)

    def member_spec(self, member: SuiteMember) -> JobSpec:
        """The job one dataset of a suite is: this system on that dataset, its output OUT/<label>."""
        return replace(self, pipeline=replace(self.pipeline, dataset=member.dataset, split=member.split), datasets=(),
                       name=member.label, output=str(Path(self.output) / member.label) if self.output else "")

    def paths(self) -> dict[str, str]:
        """The files and folders the spec names, by field (those given)."""
        p = self.pipeline
        values = {"pipeline.dataset": p.dataset, "pipeline.endpoint.spec": p.endpoint.spec,
                  "pipeline.rerank.endpoint": p.rerank.endpoint, "pipeline.rerank.candidates": p.rerank.candidates,
                  "pipeline.holes.judge": None if p.holes.judge == "embedded" else p.holes.judge,
                  "pipeline.holes.thresholds": p.holes.thresholds, "output": self.output,
                  **{f"pipeline.given.runs[{n}]": run for n, run in enumerate(p.given.runs)}}
        return {name: value for name, value in values.items() if value}

    # -- validation ---------------------------------------------------------------------------
    def validate(self) -> JobSpec:
        """Raise JobSpecError naming the first bad field; the spec itself when it is fine."""
        def bad(where: str, message: str):
            raise JobSpecError(f"job spec field {where!r}: {message}")

        given = changed(self.pipeline)
        self._refuse_credentials(given)
        refused = [name for name in given if name in JOB_REFUSED]
        if refused:
            names = ", ".join(f"{_DOTTED[JOB_REFUSED[n]]!r} ({JOB_REFUSED[n]})" for n in refused)
            raise JobSpecError(f"job spec field{'s' if len(refused) > 1 else ''} {names}: {SERVICES_REASON}")
        if self.is_suite:
            self._validate_suite(bad)
        elif not self.dataset:
            bad("pipeline.dataset", "required (a BEIR folder on the orchestrator's filesystem), or `datasets` for a suite")
        for config in ([self.member_spec(m).pipeline for m in self.datasets] if self.is_suite else [self.pipeline]):
            try:
                validate(config, use="job")
            except ConfigError as error:
                raise config_error(error) from None
        if not 0 <= self.shards <= MAX_SHARDS:
            bad("shards", f"must be within 0..{MAX_SHARDS}, got {self.shards}")
        for where, most in MAX_TEXT_CHARS.items():
            if len(getattr(self, where)) > most:
                bad(where, f"{len(getattr(self, where))} characters; at most {most}")
        if self.shards > 1 and self.pipeline.retriever == "bm25" and self.pipeline.endpoint.spec is None:
            bad("shards", "sharding splits corpus encoding: it needs retriever dense, sparse or hybrid")
        try:
            parse_measures(list(self.measures))
        except MeasureError as error:
            bad("pipeline.evaluation.measures", str(error))
        if self.pipeline.holes.thresholds and self.pipeline.holes.judge != "embedded":
            bad("pipeline.holes.thresholds", "applies to the embedded judge only, not to a judge spec file")
        if self.instructions:
            self._validate_instructions(bad)
        else:
            for name in ("instruction_template", "robustness_k"):
                if name in given:
                    bad(f"pipeline.instructions.{name.replace('instruction_', '')}",
                        "applies to instruction-following jobs (`instructions`), not to this one")
        return self

    def _refuse_credentials(self, given: dict) -> None:
        """A job's spec is stored and shown to every client of the orchestrator (jobs, watch): a URL
        in it must not carry credentials. Keys belong in the endpoint spec's api_key_env (the
        orchestrator's environment), as for spec files."""
        from irforge.common.redact import redact_url

        for leaf in leaves(PipelineConfig):
            value = given.get(leaf.info.name)
            if leaf.info.url and isinstance(value, str) and redact_url(value) != value:
                raise JobSpecError(f"job spec field 'pipeline.{leaf.dotted}' ({leaf.info.flag}): {redact_url(value)} carries "
                                   "credentials, and a job's spec is shown to every client of the orchestrator; put the key "
                                   "in an environment variable the endpoint spec names (api_key_env)")

    def _validate_suite(self, bad) -> None:
        from irforge.bench.suite import LABEL, RESERVED_LABELS

        if self.dataset:
            bad("pipeline.dataset", "give `pipeline.dataset` (one dataset) or `datasets` (a suite), not both")
        if self.instructions:
            bad("instructions", "a suite job runs BEIR datasets; run instruction-following folders one job each")
        if self.holes_depth:
            bad("pipeline.holes.depth", "hole filling is not available for suite jobs; run it on one dataset's job")
        if self.pipeline.given_run:
            bad("pipeline.given.runs", "a run file is one dataset's system: submit each dataset's run as its own job")
        if len(self.datasets) > MAX_SUITE_DATASETS:
            bad("datasets", f"{len(self.datasets)} datasets; a suite job runs at most {MAX_SUITE_DATASETS}")
        seen: dict[str, int] = {}
        for n, member in enumerate(self.datasets):
            if not member.dataset:
                bad(f"datasets[{n}].dataset", "required (a BEIR folder on the orchestrator's filesystem)")
            if not member.split:
                bad(f"datasets[{n}].split", "must not be empty")
            if len(member.label) > MAX_LABEL_CHARS:
                bad(f"datasets[{n}].label", f"{len(member.label)} characters; at most {MAX_LABEL_CHARS}")
            if not LABEL.fullmatch(member.label) or member.label in RESERVED_LABELS:
                bad(f"datasets[{n}].label", f"{member.label!r} cannot name a results folder (letters, digits, '.', '_', "
                    "'+', '-', starting with a letter or digit)")
            if member.label in seen:
                bad(f"datasets[{n}].label", f"{member.label!r} is already used by datasets[{seen[member.label]}]")
            seen[member.label] = n

    def _validate_instructions(self, bad) -> None:
        from irforge.instructions.queries import InstructionTemplate

        if self.holes_depth:
            bad("pipeline.holes.depth", "hole filling is not available for instruction-following jobs")
        if self.shards > 1:
            bad("shards", "sharded encoding is not available for instruction-following jobs")
        try:
            InstructionTemplate(self.pipeline.instructions.template)
        except ValueError as error:
            bad("pipeline.instructions.template", str(error))

    # -- paths --------------------------------------------------------------------------------
    def check_paths(self, allowed_roots: tuple[Path, ...] = ()) -> None:
        """The files the spec names exist where the job runs (called by the orchestrator); with
        `allowed_roots`, every path the job reads or writes resolves inside one of them, so a
        client of a shared platform cannot make it read or overwrite anything else: the spec's
        own paths, and the files it opens through them (the dataset's files, which may be links,
        and the files endpoint and judge specs name). The job checks each again when it opens it
        (irforge.common.allowed_roots), so a link made after submission leads nowhere either."""
        if self.is_suite:
            self._check_suite_paths(allowed_roots)
            return
        if allowed_roots:
            for where, value in self.paths().items():
                if not _inside(Path(value), allowed_roots):
                    points = Path(value).resolve()
                    raise JobSpecError(f"job spec field {where!r}: {value}"
                                       + (f" (it points to {points})" if points != Path(value).absolute() else "")
                                       + f" is outside the orchestrator's allowed roots "
                                       f"({', '.join(str(root) for root in allowed_roots)})")
        folder = Path(self.dataset)
        if self.instructions:
            self._check_instruction_folder()
        elif not (folder / "corpus.jsonl").exists() and not (folder / "corpus.jsonl.gz").exists():
            raise JobSpecError(f"job spec field 'pipeline.dataset': {self.dataset} holds no corpus.jsonl on the "
                               "orchestrator's filesystem")
        qrels = folder / "qrels" / f"{self.split}.tsv"
        if not self.instructions and not qrels.exists():
            raise JobSpecError(f"job spec field 'pipeline.split': {qrels} does not exist")
        for where, value in self.paths().items():
            if where not in ("pipeline.dataset", "output") and not Path(value).is_file():
                raise JobSpecError(f"job spec field {where!r}: no file {value} on the orchestrator's filesystem")
        if self.output:  # refused now, not when the finished job copies its results there
            try:
                check_output_folder(self.output, flag="")
            except OutputFolderError as error:
                raise JobSpecError(f"job spec field 'output': {error}") from None
        if allowed_roots:
            with enforced(allowed_roots):
                self._open_files_inside()

    def _check_suite_paths(self, allowed_roots: tuple[Path, ...]) -> None:
        """Each dataset as its own job would be checked (its folder, split, output), named by its place."""
        if self.output and Path(self.output).exists() and not Path(self.output).is_dir():
            raise JobSpecError(f"job spec field 'output': {self.output} exists and is not a folder")
        for n, member in enumerate(self.datasets):
            try:
                self.member_spec(member).check_paths(allowed_roots)
            except JobSpecError as error:
                raise JobSpecError(f"job spec field 'datasets[{n}]' ({member.label}): {error}") from None

    def _check_instruction_folder(self) -> None:
        from irforge.data.errors import DataFormatError
        from irforge.instructions.collection import open_instruction_collections

        from irforge.builder.pipeline import collection_candidates

        try:
            collections = open_instruction_collections(self.dataset, self.split)
        except (OutsideAllowedRoots, DataFormatError) as error:
            raise JobSpecError(f"job spec field 'pipeline.dataset': {error}") from None
        try:   # a FollowIR folder with a reranker reranks its own candidates: retriever options are refused now
            collection_candidates(self.pipeline, collections, "job")
        except ConfigError as error:
            raise config_error(error) from None

    def _open_files_inside(self) -> None:
        """What the job will open, each through the allowed-roots check (see check_paths)."""
        from irforge.data import BeirDataset
        from irforge.data.errors import DataFormatError
        from irforge.endpoints.errors import EndpointSpecError
        from irforge.endpoints.spec import EndpointSpec
        from irforge.judge.errors import JudgeSpecError
        from irforge.judge.spec import JudgeSpec

        where = "pipeline.dataset"
        paths = self.paths()
        try:
            if self.instructions:
                self._check_instruction_folder()
            else:
                dataset = BeirDataset.open(self.dataset)
                _ = dataset.corpus_path, dataset.queries_path, dataset.qrels_path(self.split)
            for where in ("pipeline.endpoint.spec", "pipeline.rerank.endpoint"):
                if where in paths:
                    EndpointSpec.from_file(paths[where]).check_files()
            where = "pipeline.holes.judge"
            if where in paths:
                JudgeSpec.from_file(paths[where])
        except (OutsideAllowedRoots, DataFormatError, EndpointSpecError, JudgeSpecError) as error:
            raise JobSpecError(f"job spec field {where!r}: {error}") from None

    # -- conversions (irforge.orchestrator.spec_files) -----------------------------------------
    def as_dict(self) -> dict:
        from irforge.orchestrator.spec_files import as_dict

        return as_dict(self)

    @classmethod
    def from_dict(cls, value: dict) -> JobSpec:
        from irforge.orchestrator.spec_files import from_dict

        return from_dict(value)

    def to_proto(self):
        from irforge.orchestrator.spec_files import to_proto

        return to_proto(self)

    @classmethod
    def from_proto(cls, message) -> JobSpec:
        from irforge.orchestrator.spec_files import from_proto

        return from_proto(message)

    @classmethod
    def from_mapping(cls, mapping: dict, source: str = "job spec") -> JobSpec:
        from irforge.orchestrator.spec_files import from_mapping

        return from_mapping(mapping, source)

    @classmethod
    def from_yaml(cls, path: Path) -> JobSpec:
        from irforge.orchestrator.spec_files import from_yaml

        return from_yaml(path)


def suite_members(members: list[tuple[str, str, str]], split: str) -> tuple[SuiteMember, ...]:
    """(dataset, label, split) triples with the defaults filled in: the folder's name, the job's split."""
    from irforge.bench.suite import label_for

    return tuple(SuiteMember(dataset=dataset, label=label or label_for(dataset), split=member_split or split)
                 for dataset, label, member_split in members)


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    resolved = path.resolve()   # symlinks and .. resolved: no way out through either
    return any(resolved.is_relative_to(root.resolve()) for root in roots)
