"""pytrec_eval engine: every measure trec_eval has is computed by trec_eval's own code."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping

import pytrec_eval

from irforge.data.types import Qrels, Run
from irforge.evaluator.depth import plain_dict, top_ranking
from irforge.evaluator.measures import MeasureRequest

PerQuery = dict[str, dict[str, float]]


def _as_pytrec_eval_run(run: Run, k: int) -> dict[str, dict[str, float]]:
    """The run as pytrec_eval's dicts, each query cut to its top k (0 = all) by the tie rule."""
    return {query_id: plain_dict(top_ranking(scores, k) if k else scores) for query_id, scores in run.items()}


def _from_whole_ranking(request: MeasureRequest) -> bool:
    """RR@k needs no truncated run of its own: trec_eval's recip_rank is 1.0 / r, r the rank of the
    first relevant document, so on the top k it is that same double when r <= k, i.e. when it is
    >= 1.0 / k (rounding keeps the order; 1/k and 1/(k+1) are far apart), and 0 otherwise. Read
    from the untruncated group (which sees at least the top k), it costs nothing extra."""
    return request.truncate_to > 0 and request.trec_spec == "recip_rank"


def _value(request: MeasureRequest, values: Mapping[str, float]) -> float:
    value = values[request.trec_key]
    if _from_whole_ranking(request) and value < 1.0 / request.truncate_to:
        return 0.0
    return value


def compute(qrels: Qrels, run: Run, requests: list[MeasureRequest], relevance_level: int) -> tuple[PerQuery, dict[str, str]]:
    """Per-query values keyed by output name, and the trec_eval key behind each output name.

    Requests are grouped so that each pytrec_eval evaluator sees one relevance level and one
    run truncation; trec_eval-named requests (trec_key None) keep every key trec_eval returns.
    """
    groups: dict[tuple[int, int, bool], list[MeasureRequest]] = defaultdict(list)
    for request in requests:
        level = request.relevance_level or relevance_level
        truncate_to = 0 if _from_whole_ranking(request) else request.truncate_to
        groups[level, truncate_to, request.trec_key is None].append(request)

    per_query: PerQuery = {query_id: {} for query_id in run}
    trec_keys: dict[str, str] = {}
    inputs: dict[int, dict] = {}  # truncation -> pytrec_eval's input, built once for all levels
    for (level, truncate_to, raw_names), group in groups.items():
        if truncate_to not in inputs:
            inputs[truncate_to] = _as_pytrec_eval_run(run, truncate_to)
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {r.trec_spec for r in group}, relevance_level=level)
        results: Mapping[str, Mapping[str, float]] = evaluator.evaluate(inputs[truncate_to])
        for query_id, values in results.items():
            if not run[query_id]:
                values = _empty_ranking_values(values)
            if raw_names:
                per_query[query_id].update(values)
                trec_keys.update((key, key) for key in values)
            else:
                for request in group:
                    per_query[query_id][request.output_name] = _value(request, values)
                    trec_keys[request.output_name] = request.trec_key
    return per_query, trec_keys


def _empty_ranking_values(values: Mapping[str, float]) -> dict[str, float]:
    """trec_eval scores a query it evaluates on an empty ranking (-c) 0 everywhere, where
    pytrec_eval's interpolated-precision code divides by zero retrieved documents and gives NaN."""
    return {key: 0.0 if math.isnan(value) else value for key, value in values.items()}


def aggregate(trec_key: str, values: list[float]) -> float:
    """trec_eval's aggregation for the key: mostly a mean, sums for counts, geometric for gm_*."""
    return float(pytrec_eval.compute_aggregated_measure(trec_key, values))
