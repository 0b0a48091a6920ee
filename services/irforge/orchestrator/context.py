"""What a step works with: the spec, the job folder, the outputs of earlier steps, and the parts
of its pipeline, built by the one builder `irforge eval` builds through (irforge.builder) from the
job's PipelineConfig, placed on the orchestrator's services with a deadline on every call, so a
job and `irforge eval` of the same configuration produce the same runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from irforge.builder.pipeline import PipelineBuilder, Placement, missing_service
from irforge.config import ConfigError
from irforge.data import BeirDataset
from irforge.data.types import Query
from irforge.orchestrator.errors import JobSpecError
from irforge.orchestrator.spec import JobSpec, config_error
from irforge.common.progress import ProgressFactory


@contextmanager
def job_spec_errors() -> Iterator[None]:
    """The builder's ConfigError as the job's JobSpecError, naming the pipeline field."""
    try:
        yield
    except ConfigError as error:
        raise config_error(error) from None


@dataclass(frozen=True)
class ServiceAddresses:
    """Where the services are (HOST:PORT; None = not configured) and how long a call may take."""

    corpus: str | None = None
    evaluator: str | None = None
    encoder: str | None = None
    judge: str | None = None
    call_timeout_s: float = 600.0           # every call (a search or vector batch, an evaluation, a model call)
    long_call_timeout_s: float = 6 * 3600.0  # the calls whose work grows with the corpus: Ingest, a judge batch
    shard_runner: str = "local"             # big-corpus encoding: "local" processes or "kubernetes" Jobs
    shard_options: dict = field(default_factory=dict)

    def required(self, role: str) -> str:
        address = getattr(self, role)
        if not address:
            raise JobSpecError(missing_service(role))
        return address

    def describe(self) -> str:
        return " ".join(f"{role}={getattr(self, role)}" for role in ("corpus", "evaluator", "encoder", "judge")
                        if getattr(self, role))


@dataclass
class StepContext:
    job_id: str
    spec: JobSpec
    job_dir: Path
    services: ServiceAddresses
    progress: ProgressFactory
    lock: Callable[[str], AbstractContextManager]
    outputs: dict[str, dict]                 # outputs of the steps already done
    durations: dict[str, float]              # their run times
    cache_path: Path                         # the embedding cache shared by every job
    cancel_event: threading.Event = field(default_factory=threading.Event)  # set when the job is cancelled or stopped
    stack: ExitStack = field(default_factory=ExitStack)
    results_dir: Path | None = None          # where the evaluate step writes its set (default job_dir/results)
    members: dict = field(default_factory=dict)   # a suite job's contexts, one per dataset label

    def __post_init__(self):
        if self.results_dir is None:
            self.results_dir = self.job_dir / "results"

    def for_member(self, label: str) -> StepContext:
        """A suite job's context for one dataset: that dataset's spec (the member's config), its own work folder and
        results folder (results/<label>), the outputs of its own steps under their plain names.
        Kept per label, so its dataset is fingerprinted and its clients opened once; the clients
        close with the job's."""
        if label not in self.members:
            member = next(m for m in self.spec.datasets if m.label == label)
            self.members[label] = StepContext(
                job_id=self.job_id, spec=self.spec.member_spec(member), job_dir=self.job_dir / "datasets" / label,
                services=self.services, progress=self.progress, lock=self.lock, outputs={}, durations={},
                cache_path=self.cache_path, cancel_event=self.cancel_event, stack=self.stack,
                results_dir=self.results_dir / label)
            self.members[label].job_dir.mkdir(parents=True, exist_ok=True)
        context = self.members[label]
        prefix = f"{label}/"
        context.outputs = {name[len(prefix):]: output for name, output in self.outputs.items() if name.startswith(prefix)}
        context.durations = {name[len(prefix):]: value for name, value in self.durations.items() if name.startswith(prefix)}
        return context

    # -- the data -----------------------------------------------------------------------------
    @cached_property
    def dataset(self) -> BeirDataset:
        return BeirDataset.open(Path(self.spec.dataset))

    @cached_property
    def fingerprint(self) -> str:
        return self.dataset.corpus_fingerprint()

    @cached_property
    def qrels(self):
        return self.dataset.qrels(self.spec.split)

    @cached_property
    def queries(self) -> list[Query]:
        return [q for q in self.dataset.queries() if q.query_id in self.qrels]

    @cached_property
    def judged(self) -> set[str]:
        return {doc_id for judged in self.qrels.values() for doc_id in judged}

    @property
    def mode(self) -> str:
        return f"orchestrator job {self.job_id}: {self.services.describe()}"

    # -- the pipeline, through the one builder ------------------------------------------------
    @cached_property
    def builder(self) -> PipelineBuilder:
        services = self.services
        placement = Placement(corpus=services.corpus, evaluator=services.evaluator, encoder=services.encoder,
                              call_timeout_s=services.call_timeout_s, long_call_timeout_s=services.long_call_timeout_s,
                              remote_only=True)
        return PipelineBuilder(self.spec.pipeline, self.stack, placement=placement, progress=self.progress,
                               embedding_cache=self.cache_path)

    def _built(self, part: Callable):
        with job_spec_errors():
            return part()

    @property
    def evaluator(self):
        return self._built(lambda: self.builder.evaluator)

    def lexical(self):
        return self._built(self.builder.lexical)

    def dense(self):
        """The vector retriever: dense, or learned sparse (SparseRetriever) when the spec asks for it."""
        return self._built(self.builder.vector)

    def first_stage(self):
        return self._built(self.builder.first_stage)

    def reranker(self):
        return self._built(self.builder.reranker)

    def instruction_retriever(self, collections):
        return self._built(lambda: self.builder.instruction_retriever(collections, use="job"))

    def _closing(self, client):
        self.stack.callback(client.close)
        return client

    # -- big corpora and hole filling ---------------------------------------------------------
    def encode_in_shards(self, dense, collection_id: str) -> dict:
        """Fill the embedding cache shard by shard (local processes, or a Kubernetes Indexed Job),
        so the dense indexing after it encodes nothing.

        The shards' work folder sits beside the embedding cache, on the volume shard pods mount
        (the chart's cache claim), one per (corpus, encoder): a resumed or later job on the same
        corpus and model reuses finished shards."""
        from irforge.sharding import encode_corpus_in_shards, make_shard_runner

        described = dense.encoder.describe()
        encoder_spec = worker_encoder_spec(described)
        runner = make_shard_runner(self.services.shard_runner, **self.services.shard_options)
        report = encode_corpus_in_shards(Path(self.spec.dataset), encoder_spec, self.cache_path, self.spec.shards, runner,
                                         self.cache_path.parent / "shards" / collection_id, progress=self.progress,
                                         encoder_key=dense.encoder.identity_key, cancel=self.cancel_event,
                                         sparse=described.get("kind") == "sparse",
                                         max_active_dims=described.get("max_active_dims"))
        return report.as_dict()

    def judge(self):
        """The judge of the job: its own judge spec file, or the embedded judge with the job's
        thresholds file (run here, keys from this process' environment), else the judge service."""
        holes = self.spec.pipeline.holes
        if holes.judge != "embedded" or holes.thresholds:
            from irforge.judge.factory import open_judge

            judge = Path(holes.judge) if holes.judge != "embedded" else holes.judge
            thresholds = Path(holes.thresholds) if holes.thresholds else None
            return self._closing(open_judge(judge, thresholds_path=thresholds)), "in the orchestrator"
        from irforge.judge.client import RemoteJudge

        address = self.services.required("judge")
        return self._closing(RemoteJudge(address, timeout=self.services.long_call_timeout_s)), f"judge service {address}"

    def close(self) -> None:
        self.stack.close()


def worker_encoder_spec(described: dict):
    """The EncoderSpec shard workers load: the model the encoder service serves, configured as it
    is (the sharding code refuses their vectors if the identity key still differs)."""
    from irforge.models.encoder import EncoderSpec

    revision = described.get("revision")
    return EncoderSpec(model=described["model"],
                       # "sha256:..." is a folder's weights digest the worker recomputes, not a hub revision
                       revision=None if str(revision).startswith("sha256:") else revision,
                       query_prefix=described.get("query_prefix", ""), passage_prefix=described.get("passage_prefix", ""),
                       normalize=bool(described.get("normalize", True)), max_seq_length=described.get("max_seq_length"),
                       # a service on ONNX Runtime or OpenVINO: its workers export and run the same
                       backend=described.get("backend", "torch"), backend_precision=described.get("backend_precision", "fp32"))
