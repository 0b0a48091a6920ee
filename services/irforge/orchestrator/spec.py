"""A job spec: what to evaluate, declaratively. Built from `irforge eval`'s flags, from a YAML
file (the JobSpec message's JSON mapping), or from the proto; validated before any work starts.

Paths (dataset, endpoint, judge, output) are on the orchestrator's filesystem: the job runs there.
Encoder options (prefixes, sequence length, device) and backends are the services' configuration,
not a job's: a job names the model and the services answer with its full identity.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import yaml
from google.protobuf import json_format

from irforge.common.allowed_roots import OutsideAllowedRoots, enforced
from irforge.common.checks import minimum_problem, range_problem
from irforge.common.output_set import OutputFolderError, check_output_folder
from irforge.corpus.settings import B_RANGE, K1_RANGE, Bm25Settings
from irforge.corpus.vectors.base import HNSW_MINIMUMS, HnswSettings
from irforge.datasets import DatasetError, is_dataset_name, resolve_dataset
from irforge.evaluator.measures import DEFAULT_MEASURES, MeasureError, parse_measures
from irforge.orchestrator.errors import JobSpecError
from irforge.pipeline.retrievers import RETRIEVERS
from irforge.pipeline.retrievers.hybrid import RRF_K_RANGE, weights_problem
from irforge.v1 import orchestrator_pb2

DEFAULT_RERANK_DEPTH = 100
INSTRUCTION_MEASURES = ("nDCG@10",)   # irforge.instructions.job's default, without importing the job here


@dataclass(frozen=True)
class SuiteMember:
    """One dataset of a suite job: a BEIR folder, its label (folder in the results, row in the table), its split."""
    dataset: str
    label: str
    split: str


@dataclass(frozen=True)
class JobSpec:
    dataset: str
    split: str = "test"
    retriever: str = "bm25"
    k1: float = Bm25Settings.k1
    b: float = Bm25Settings.b
    model: str = ""                       # "" = the only model the models service serves
    search: str = "exact"
    hnsw_m: int = HnswSettings.m
    hnsw_ef_construct: int = HnswSettings.ef_construct
    hnsw_ef: int = HnswSettings.ef_search
    fusion: str = "rrf"
    rrf_k: float = 60.0
    fusion_weights: tuple[float, float] = (1.0, 1.0)
    hybrid_with: str = "dense"            # hybrid: fuse BM25 with the dense run, or with the sparse one
    endpoint: str = ""
    reranker_model: str = ""
    reranker_endpoint: str = ""
    rerank_depth: int = DEFAULT_RERANK_DEPTH
    measures: tuple[str, ...] = DEFAULT_MEASURES
    top_k: int = 1000
    keep_identical_ids: bool = False
    holes_depth: int = 0
    judge: str = ""
    output: str = ""
    shards: int = 0
    name: str = ""
    instructions: bool = False            # an instruction-following folder (irforge eval-instructions)
    instruction_template: str = ""        # "" = query + " " + instruction
    robustness_k: int = 10
    datasets: tuple[SuiteMember, ...] = ()   # a suite (`irforge bench` as one job); `dataset` is then ""

    # -- what the spec asks for ---------------------------------------------------------------
    @property
    def has_reranker(self) -> bool:
        return bool(self.reranker_model or self.reranker_endpoint)

    @property
    def is_suite(self) -> bool:
        return bool(self.datasets)

    def member_spec(self, member: SuiteMember) -> JobSpec:
        """The job one dataset of a suite is: this system on that dataset, its output OUT/<label>."""
        return replace(self, dataset=member.dataset, split=member.split, datasets=(), name=member.label,
                       output=str(Path(self.output) / member.label) if self.output else "")

    def validate(self) -> JobSpec:
        """Raise JobSpecError naming the first bad field; the spec itself when it is fine."""
        def bad(field: str, message: str):
            raise JobSpecError(f"job spec field {field!r}: {message}")

        if self.is_suite:
            self._validate_suite(bad)
        elif not self.dataset:
            bad("dataset", "required (a BEIR folder on the orchestrator's filesystem), or `datasets` for a suite")
        if self.retriever not in RETRIEVERS:
            bad("retriever", f"{self.retriever!r} is not one of {', '.join(RETRIEVERS)}")
        if not self.split:
            bad("split", "must not be empty")
        if self.top_k <= 0:
            bad("top_k", f"must be positive, got {self.top_k}")
        if self.search not in ("exact", "hnsw"):
            bad("dense.search", f"{self.search!r} is not exact or hnsw")
        if self.fusion not in ("rrf", "linear"):
            bad("fusion.method", f"{self.fusion!r} is not rrf or linear")
        if self.hybrid_with not in ("dense", "sparse"):
            bad("fusion.hybrid_with", f"{self.hybrid_with!r} is not dense or sparse")
        if len(self.fusion_weights) != 2:
            bad("fusion.weights", f"needs two weights (bm25, dense), got {list(self.fusion_weights)}")
        if weights_problem(self.fusion_weights):
            bad("fusion.weights", f"must be finite numbers >= 0, not both 0; got {list(self.fusion_weights)}")
        numbers = [("bm25.k1", range_problem(self.k1, *K1_RANGE)), ("bm25.b", range_problem(self.b, *B_RANGE)),
                   ("fusion.rrf_k", range_problem(self.rrf_k, *RRF_K_RANGE))]   # the ranges `irforge eval` checks
        numbers += [(f"dense.{field}", minimum_problem(getattr(self, field), HNSW_MINIMUMS[least]))
                    for field, least in (("hnsw_m", "m"), ("hnsw_ef_construct", "ef_construct"), ("hnsw_ef", "ef_search"))]
        for field, problem in numbers:
            if problem:
                bad(field, problem)
        if self.reranker_model and self.reranker_endpoint:
            bad("reranker", "give either model or endpoint, not both")
        if self.rerank_depth < 1:
            bad("reranker.depth", f"must be at least 1, got {self.rerank_depth}")
        if self.holes_depth < 0:
            bad("holes.depth", f"must be 0 (off) or positive, got {self.holes_depth}")
        if self.shards < 0:
            bad("shards", f"must be 0 or positive, got {self.shards}")
        if self.shards > 1 and self.retriever == "bm25" and not self.endpoint:
            bad("shards", "sharding splits corpus encoding: it needs retriever dense, sparse or hybrid")
        try:
            parse_measures(list(self.measures))
        except MeasureError as error:
            bad("measures", str(error))
        if self.instructions:
            self._validate_instructions(bad)
        return self

    def _validate_suite(self, bad) -> None:
        from irforge.bench.suite import LABEL, RESERVED_LABELS

        if self.dataset:
            bad("dataset", "give `dataset` (one dataset) or `datasets` (a suite), not both")
        if self.instructions:
            bad("instructions", "a suite job runs BEIR datasets; run instruction-following folders one job each")
        if self.holes_depth:
            bad("holes.depth", "hole filling is not available for suite jobs; run it on one dataset's job")
        seen: dict[str, int] = {}
        for n, member in enumerate(self.datasets):
            if not member.dataset:
                bad(f"datasets[{n}].dataset", "required (a BEIR folder on the orchestrator's filesystem)")
            if not member.split:
                bad(f"datasets[{n}].split", "must not be empty")
            if not LABEL.fullmatch(member.label) or member.label in RESERVED_LABELS:
                bad(f"datasets[{n}].label", f"{member.label!r} cannot name a results folder (letters, digits, '.', '_', "
                    "'+', '-', starting with a letter or digit)")
            if member.label in seen:
                bad(f"datasets[{n}].label", f"{member.label!r} is already used by datasets[{seen[member.label]}]")
            seen[member.label] = n

    def _validate_instructions(self, bad) -> None:
        from irforge.instructions.queries import InstructionTemplate

        if self.holes_depth:
            bad("holes.depth", "hole filling is not available for instruction-following jobs")
        if self.shards > 1:
            bad("shards", "sharded encoding is not available for instruction-following jobs")
        if self.robustness_k < 1:
            bad("instructions.robustness_k", f"must be at least 1, got {self.robustness_k}")
        try:
            InstructionTemplate(self.instruction_template or None)
        except ValueError as error:
            bad("instructions.template", str(error))

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
            for field in PATH_FIELDS:
                value = getattr(self, field)
                if value and not _inside(Path(value), allowed_roots):
                    points = Path(value).resolve()
                    raise JobSpecError(f"job spec field {field!r}: {value}"
                                       + (f" (it points to {points})" if points != Path(value).absolute() else "")
                                       + f" is outside the orchestrator's allowed roots "
                                       f"({', '.join(str(root) for root in allowed_roots)})")
        folder = Path(self.dataset)
        if self.instructions:
            self._check_instruction_folder()
        elif not (folder / "corpus.jsonl").exists() and not (folder / "corpus.jsonl.gz").exists():
            raise JobSpecError(f"job spec field 'dataset': {self.dataset} holds no corpus.jsonl on the orchestrator's filesystem")
        qrels = folder / "qrels" / f"{self.split}.tsv"
        if not self.instructions and not qrels.exists():
            raise JobSpecError(f"job spec field 'split': {qrels} does not exist")
        for field in ("endpoint", "reranker_endpoint", "judge"):
            value = getattr(self, field)
            if value and not Path(value).is_file():
                raise JobSpecError(f"job spec field {field!r}: no file {value} on the orchestrator's filesystem")
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

        try:
            open_instruction_collections(self.dataset, self.split)
        except (OutsideAllowedRoots, DataFormatError) as error:
            raise JobSpecError(f"job spec field 'dataset': {error}") from None

    def _open_files_inside(self) -> None:
        """What the job will open, each through the allowed-roots check (see check_paths)."""
        from irforge.data import BeirDataset
        from irforge.data.errors import DataFormatError
        from irforge.endpoints.errors import EndpointSpecError
        from irforge.endpoints.spec import EndpointSpec
        from irforge.judge.errors import JudgeSpecError
        from irforge.judge.spec import JudgeSpec

        field = "dataset"
        try:
            if self.instructions:
                self._check_instruction_folder()
            else:
                dataset = BeirDataset.open(self.dataset)
                _ = dataset.corpus_path, dataset.queries_path, dataset.qrels_path(self.split)
            for field in ("endpoint", "reranker_endpoint"):
                if getattr(self, field):
                    EndpointSpec.from_file(getattr(self, field)).check_files()
            field = "judge"
            if self.judge:
                JudgeSpec.from_file(self.judge)
        except (OutsideAllowedRoots, DataFormatError, EndpointSpecError, JudgeSpecError) as error:
            raise JobSpecError(f"job spec field {field!r}: {error}") from None

    def as_dict(self) -> dict:
        value = asdict(self)
        value["measures"], value["fusion_weights"] = list(self.measures), list(self.fusion_weights)
        value["datasets"] = [asdict(member) for member in self.datasets]
        return value

    @classmethod
    def from_dict(cls, value: dict) -> JobSpec:
        """Back from as_dict() (the job store's copy)."""
        return cls(**{**value, "measures": tuple(value["measures"]), "fusion_weights": tuple(value["fusion_weights"]),
                      "datasets": tuple(SuiteMember(**member) for member in value.get("datasets", ()))})

    # -- proto --------------------------------------------------------------------------------
    def to_proto(self) -> orchestrator_pb2.JobSpec:
        return orchestrator_pb2.JobSpec(
            dataset=self.dataset, split=self.split, retriever=self.retriever,
            bm25=orchestrator_pb2.Bm25Parameters(k1=self.k1, b=self.b),
            dense=orchestrator_pb2.DenseParameters(model=self.model, search=self.search, hnsw_m=self.hnsw_m,
                                                   hnsw_ef_construct=self.hnsw_ef_construct, hnsw_ef=self.hnsw_ef),
            fusion=orchestrator_pb2.FusionParameters(method=self.fusion, rrf_k=self.rrf_k, weights=list(self.fusion_weights),
                                                     hybrid_with=self.hybrid_with),
            endpoint=self.endpoint,
            reranker=orchestrator_pb2.RerankerSpec(model=self.reranker_model, endpoint=self.reranker_endpoint,
                                                   depth=self.rerank_depth),
            measures=list(self.measures), top_k=self.top_k, keep_identical_ids=self.keep_identical_ids,
            holes=orchestrator_pb2.HoleFillingSpec(depth=self.holes_depth, judge=self.judge),
            output=self.output, shards=self.shards, name=self.name,
            instructions=orchestrator_pb2.InstructionsSpec(enabled=self.instructions, template=self.instruction_template,
                                                           robustness_k=self.robustness_k),
            datasets=[orchestrator_pb2.SuiteDataset(dataset=m.dataset, label=m.label, split=m.split) for m in self.datasets],
        )

    @classmethod
    def from_proto(cls, message: orchestrator_pb2.JobSpec) -> JobSpec:
        """Unset fields take their defaults; the result is validated."""
        d = cls(dataset="")
        def opt(parent, name, default):
            return getattr(parent, name) if parent.HasField(name) else default

        return cls(
            dataset=message.dataset, split=message.split or d.split, retriever=message.retriever or d.retriever,
            k1=opt(message.bm25, "k1", d.k1), b=opt(message.bm25, "b", d.b),
            model=message.dense.model, search=message.dense.search or d.search,
            hnsw_m=opt(message.dense, "hnsw_m", d.hnsw_m),
            hnsw_ef_construct=opt(message.dense, "hnsw_ef_construct", d.hnsw_ef_construct),
            hnsw_ef=opt(message.dense, "hnsw_ef", d.hnsw_ef),
            fusion=message.fusion.method or d.fusion, rrf_k=opt(message.fusion, "rrf_k", d.rrf_k),
            fusion_weights=tuple(message.fusion.weights) or d.fusion_weights,
            hybrid_with=message.fusion.hybrid_with or d.hybrid_with,
            endpoint=message.endpoint, reranker_model=message.reranker.model,
            reranker_endpoint=message.reranker.endpoint, rerank_depth=opt(message.reranker, "depth", d.rerank_depth),
            measures=tuple(message.measures) or (INSTRUCTION_MEASURES if message.instructions.enabled else d.measures),
            top_k=opt(message, "top_k", d.top_k),
            keep_identical_ids=message.keep_identical_ids, holes_depth=message.holes.depth, judge=message.holes.judge,
            output=message.output, shards=message.shards, name=message.name,
            instructions=message.instructions.enabled, instruction_template=message.instructions.template,
            robustness_k=opt(message.instructions, "robustness_k", d.robustness_k),
            datasets=suite_members([(m.dataset, m.label, m.split) for m in message.datasets], message.split or d.split),
        ).validate()

    # -- files and flags ----------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, mapping: dict, source: str = "job spec") -> JobSpec:
        """The JobSpec message's JSON mapping (what a YAML spec file holds)."""
        if not isinstance(mapping, dict):
            raise JobSpecError(f"{source}: expected a mapping of JobSpec fields, got {type(mapping).__name__}")
        try:
            message = json_format.ParseDict(mapping, orchestrator_pb2.JobSpec())
        except json_format.ParseError as error:
            raise JobSpecError(f"{source}: {error}") from None
        try:
            return cls.from_proto(message)
        except JobSpecError as error:
            raise JobSpecError(f"{source}: {error}") from None

    @classmethod
    def from_yaml(cls, path: Path) -> JobSpec:
        try:
            mapping = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except OSError as error:
            raise JobSpecError(f"cannot read job spec {path}: {error.strerror}") from None
        except yaml.YAMLError as error:
            raise JobSpecError(f"job spec {path} is not valid YAML: {error}") from None
        spec = cls.from_mapping(mapping, source=str(path))
        # Relative paths in a spec file mean: relative to the file (resolved where it is submitted).
        base = Path(path).resolve().parent
        spec = replace(spec, datasets=tuple(replace(m, dataset=str(base / m.dataset)) if not Path(m.dataset).is_absolute()
                                            else m for m in spec.datasets))
        return replace(spec, **{f: str(base / getattr(spec, f)) for f in PATH_FIELDS
                                if getattr(spec, f) and not Path(getattr(spec, f)).is_absolute()})

    @classmethod
    def from_eval_args(cls, args: argparse.Namespace, datasets: tuple[SuiteMember, ...] = ()) -> JobSpec:
        """From `irforge eval`'s flags (with `datasets`, a suite of them: `irforge submit --suite`);
        flags that configure services, not jobs, are refused."""
        refused = [flag for flag, dest, default in SERVICE_FLAGS if getattr(args, dest, default) != default]
        if refused:
            raise JobSpecError(f"{', '.join(refused)}: these configure the services (`irforge serve` / `irforge service`), "
                               "not a job; the orchestrator uses its services' settings")
        try:
            weights = tuple(float(w) for w in args.fusion_weights.split(","))
        except ValueError:
            raise JobSpecError(f"--fusion-weights must be two numbers like 1,1; got {args.fusion_weights!r}") from None
        if args.listwise_llm:
            raise JobSpecError("--listwise-llm is not available for orchestrated jobs yet; use --reranker or --reranker-endpoint")

        def path(value) -> str:
            return str(Path(value).resolve()) if value else ""

        def dataset(value) -> str:
            # A name (beir/scifact) is the copy downloaded here, as for `irforge eval`; any other path
            # passes unchanged: it may be a folder of the orchestrator's, checked there.
            if value and is_dataset_name(value):
                try:
                    value = resolve_dataset(value)
                except DatasetError as error:
                    raise JobSpecError(str(error)) from None
            return path(value)

        return cls(
            dataset=dataset(args.dataset), split=args.split, retriever=args.retriever, k1=args.k1, b=args.b,
            model=args.model, search=args.search, hnsw_m=args.hnsw_m, hnsw_ef_construct=args.hnsw_ef_construct,
            hnsw_ef=args.hnsw_ef, fusion=args.fusion, rrf_k=args.rrf_k, fusion_weights=weights,
            hybrid_with=getattr(args, "hybrid_with", "dense"),
            endpoint=path(args.endpoint), reranker_model=args.reranker or "",
            reranker_endpoint=path(args.reranker_endpoint), rerank_depth=args.rerank_depth,
            measures=tuple(args.measures or (INSTRUCTION_MEASURES if getattr(args, "instructions", False) else DEFAULT_MEASURES)),
            top_k=args.top_k,
            keep_identical_ids=args.keep_identical_ids, holes_depth=getattr(args, "fill_holes", 0) or 0,
            judge="" if getattr(args, "judge", None) in (None, "embedded") else path(args.judge),
            output=path(getattr(args, "out", None)),
            shards=getattr(args, "shards", 0) or 0, name=getattr(args, "name", "") or "",
            instructions=bool(getattr(args, "instructions", False)),
            instruction_template=_template_flag(getattr(args, "instruction_template", None)),
            robustness_k=getattr(args, "robustness_k", 10),
            datasets=tuple(replace(m, dataset=path(m.dataset)) for m in datasets),
        ).validate()


def suite_members(members: list[tuple[str, str, str]], split: str) -> tuple[SuiteMember, ...]:
    """(dataset, label, split) triples with the defaults filled in: the folder's name, the job's split."""
    from irforge.bench.suite import label_for

    return tuple(SuiteMember(dataset=dataset, label=label or label_for(dataset), split=member_split or split)
                 for dataset, label, member_split in members)


def _template_flag(value: str | None) -> str:
    from irforge.instructions.queries import InstructionTemplate

    try:
        return InstructionTemplate.from_flag(value).template or ""
    except ValueError as error:
        raise JobSpecError(str(error)) from None


PATH_FIELDS = ("dataset", "endpoint", "reranker_endpoint", "judge", "output")

# (flag, argparse dest, default): `irforge eval` flags that belong to a service's configuration.
SERVICE_FLAGS = [
    ("--backend", "backend", "embedded"), ("--index-dir", "index_dir", None),
    ("--elasticsearch-url", "elasticsearch_url", None), ("--vector-backend", "vector_backend", "embedded"),
    ("--vector-dir", "vector_dir", None), ("--qdrant-url", "qdrant_url", None),
    ("--embedding-cache", "embedding_cache", None), ("--ray", "ray", False), ("--device", "device", None),
    ("--precision", "precision", "float32"), ("--query-prefix", "query_prefix", ""),
    ("--passage-prefix", "passage_prefix", ""), ("--max-seq-length", "max_seq_length", None),
    ("--no-normalize", "no_normalize", False), ("--model-revision", "model_revision", None),
    ("--encode-batch-size", "encode_batch_size", 64), ("--max-active-dims", "max_active_dims", None),
    ("--endpoint-url", "endpoint_url", None),
    ("--endpoint-model", "endpoint_model", None), ("--endpoint-batch-size", "endpoint_batch_size", None),
    ("--endpoint-max-concurrency", "endpoint_max_concurrency", None),
    ("--endpoint-request-budget", "endpoint_request_budget", None),
    ("--corpus-server", "corpus_server", None), ("--evaluator-server", "evaluator_server", None),
    ("--encoder-server", "encoder_server", None), ("--store", "store", None), ("--thresholds", "thresholds", None),
    ("--relevant-from", "relevant_from", 2),
]


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    resolved = path.resolve()   # symlinks and .. resolved: no way out through either
    return any(resolved.is_relative_to(root.resolve()) for root in roots)
