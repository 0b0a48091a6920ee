"""The quality-control configuration: every option of `irforge qc` (and of generation's QC step),
declared once. The recall encoder, the vector store, the stores and the encoder server are the
pipeline configuration's own sections, so `--model`, `--vector-backend`, `--index-dir` or
`--encoder-server` mean in `irforge qc` what they mean in `irforge eval`.

QC recalls with a dense encoder, searched exactly, over an embedded BM25 index: the options of
those sections that choose otherwise do not apply and are refused (check), never ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from irforge.config.checks import at_least, check_values
from irforge.config.options import ConfigError, leaves_by_name, option
from irforge.config.pipeline import EncoderConfig, ServicesConfig, StoresConfig, VectorsConfig
from irforge.config.values import changed

DEFAULT_RERANKERS = ("bm25", "dense:{model}")
RELEVANT_LABELS = (1, 2, 3)
# Options of the shared sections that QC has no use for: left off its command line, refused in a
# configuration (see QcConfig.checked).
NOT_IN_QC = ("search", "hnsw_m", "hnsw_ef_construct", "hnsw_ef", "elasticsearch_url", "server", "corpus_server",
             "evaluator_server")


def _relevant(value: int) -> str | None:
    return None if value in RELEVANT_LABELS else f"must be a label 1-3, got {value}"


def _no_repeats(specs) -> str | None:
    repeated = sorted({text for text in specs or () if specs.count(text) > 1})
    return f"given twice: {repeated}" if repeated else None


@dataclass(frozen=True)
class QcConfig:
    """One quality control of a BEIR collection (docs/qc.md)."""
    dataset: str = option("", "--dataset", "BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    split: str = option("test", "--split", "the qrels/<split>.tsv to check")
    out: str = option("", "--out", "folder for the corrected dataset (written whole or not at all)")
    recall_depth: int = option(1000, "--recall-depth", "documents recalled per query", check=at_least(1))
    rerankers: tuple[str, ...] | None = option(
        None, "--reranker", "repeatable: bm25[?k1=..&b=..], dense:MODEL[?max_seq_length=..&query_prefix=..], "
        "dense:grpc://HOST:PORT, cross-encoder:MODEL, endpoint:SPEC.yaml, listwise:URL?model=NAME "
        "(default: bm25 and dense:<--model>)", repeatable=True, metavar="SPEC", key="rerankers", check=_no_repeats)
    # The thresholds' own check (irforge.judge.qc.prelabel.Thresholds) refuses a rank below 1.
    threshold: int = option(10, "--threshold", "rank within which a reranker votes positive")
    hard_negative_threshold: int = option(20, "--hard-negative-threshold", "the same for generated hard negatives")
    hard_negatives: str | None = option(None, "--hard-negatives", "generated hard negatives: qrels-style TSV or .jsonl "
                                        "(see docs/qc.md)", metavar="FILE")
    relevant_from: int = option(2, "--relevant-from", "a judged label at or above this is relevant", check=_relevant)
    judge: str = option("embedded", "--judge", "embedded or a judge spec YAML file (kind: openai-chat)")
    store: str | None = option(None, "--store", "judgement store (default $IRFORGE_JUDGE_STORE or the user data dir)",
                               location=True)
    judge_thresholds: str | None = option(None, "--judge-thresholds", "embedded judge thresholds (from irforge "
                                          "judge-calibrate)", metavar="FILE")
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    vectors: VectorsConfig = field(default_factory=VectorsConfig)
    stores: StoresConfig = field(default_factory=StoresConfig)
    services: ServicesConfig = field(default_factory=ServicesConfig)

    @property
    def reranker_specs(self) -> tuple[str, ...]:
        """The rerankers asked for, or the default ones (bm25 and dense:<the recall model>)."""
        return self.rerankers or tuple(spec.format(model=self.encoder.model_name) for spec in DEFAULT_RERANKERS)

    def checked(self) -> QcConfig:
        """This configuration when it can run; ConfigError naming the first option that cannot."""
        if not self.dataset:
            raise ConfigError("--dataset is required (a BEIR folder)")
        if not self.out:
            raise ConfigError("--out is required (a folder for the corrected dataset)")
        check_values(self)
        given = changed(self)
        flags = leaves_by_name(QcConfig)
        for name in NOT_IN_QC:
            if name in given:
                raise ConfigError(f"{flags[name].info.flag} {given[name]} does not apply to quality control: it recalls exactly, in process, with "
                                  "embedded BM25")
        if self.vectors.backend == "elasticsearch":
            raise ConfigError("--vector-backend elasticsearch holds learned sparse vectors only; quality control recalls "
                              "with a dense encoder: use --vector-backend embedded or qdrant")
        if "max_active_dims" in given:
            raise ConfigError(f"--max-active-dims {self.encoder.max_active_dims} does not apply here: quality control "
                              "recalls with a dense encoder")
        if "qdrant_url" in given and self.vectors.backend != "qdrant":
            raise ConfigError(f"--qdrant-url {self.stores.qdrant_url} does not apply here: it needs --vector-backend qdrant")
        if self.encoder.ray and self.services.encoder is not None:
            raise ConfigError("--ray does not apply here: with --encoder-server the recall encoder runs there")
        if self.services.encoder is not None and (self.encoder.backend, self.encoder.backend_precision) != ("torch", "fp32"):
            raise ConfigError(f"--encoder-backend {self.encoder.backend} --encoder-precision {self.encoder.backend_precision} "
                              "does not apply here: with --encoder-server the recall encoder runs there")
        return self


__all__ = ["DEFAULT_RERANKERS", "NOT_IN_QC", "QcConfig"]
