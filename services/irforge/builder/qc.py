"""The quality-control job from its configuration: `irforge qc` (irforge.app.qc) and generation's
QC step (irforge.generation.qc_step) build it here, so they cannot drift.

The corpus (embedded BM25 beside the configured vector store), the embedding cache and the
encoder settings come from the one PipelineBuilder and its helpers, configured as a dense
pipeline over QC's own sections; the recall encoder is shared with a `dense:` reranker of the
same model (ScorerFactory).
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from irforge.builder.pipeline import PipelineBuilder, encoder_spec, local_encoder
from irforge.config import PipelineConfig
from irforge.config.pipeline import ServicesConfig
from irforge.config.qc import QcConfig
from irforge.common.progress import ProgressFactory, tqdm_progress


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def recall_pipeline(config: QcConfig) -> PipelineConfig:
    """The dense pipeline whose parts QC recalls with: its encoder, vectors and stores sections."""
    return PipelineConfig(dataset=config.dataset, split=config.split, retriever="dense", encoder=config.encoder,
                          vectors=config.vectors, stores=config.stores,
                          services=ServicesConfig(encoder_server=config.services.encoder))


def qc_job(config: QcConfig, stack: ExitStack, progress: ProgressFactory = tqdm_progress):
    """The QcJob `config` asks for, its parts closed with `stack`; ValueError (ConfigError) for an
    option that cannot run, before any model loads."""
    from irforge.judge.factory import open_judge
    from irforge.judge.qc.job import QcJob, QcSpec
    from irforge.judge.qc.prelabel import Thresholds
    from irforge.judge.qc.rerankers import ScorerFactory, parse_reranker_spec
    from irforge.judge.qc.writer import check_out_dir
    from irforge.pipeline.retrievers.dense import DenseRetriever

    config = config.checked()
    check_out_dir(Path(config.dataset), Path(config.out))  # before any model loads: refusing costs nothing
    thresholds = Thresholds(default=config.threshold, hard_negative=config.hard_negative_threshold)
    spec = QcSpec(dataset=Path(config.dataset), out_dir=Path(config.out), split=config.split,
                  recall_depth=config.recall_depth, thresholds=thresholds, relevant_from=config.relevant_from,
                  hard_negatives=_path(config.hard_negatives))
    reranker_specs = [parse_reranker_spec(text) for text in config.reranker_specs]
    recall_spec = encoder_spec(config.encoder)

    judge = open_judge(config.judge, _path(config.store), thresholds_path=_path(config.judge_thresholds),
                       cache_path=_path(config.stores.embedding_cache))
    if hasattr(judge, "close"):
        stack.callback(judge.close)
    parts = PipelineBuilder(recall_pipeline(config), stack, progress=progress)
    corpus, cache = parts.corpus, parts.cache
    factory = ScorerFactory(corpus=corpus, cache=cache, progress=progress, base_encoder=recall_spec, stack=stack,
                            needed=thresholds.deepest)
    address = config.services.encoder
    if config.encoder.ray and not address:
        encoder, location = local_encoder(recall_spec, True, stack)
    else:
        encoder, location = factory.encoder(recall_spec, address=address)
    recall = DenseRetriever(corpus, encoder, cache, progress, exact=True, encoder_location=location)
    scorers = [factory.build(reranker) for reranker in reranker_specs]
    mode = {"recall_encoder": location, "corpus": f"in-process (embedded BM25, {config.vectors.backend} vectors)"}
    return QcJob(spec, recall, scorers, judge, progress=progress, mode=mode)


__all__ = ["qc_job", "recall_pipeline"]
