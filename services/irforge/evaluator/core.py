"""The evaluator's transport-free core: qrels + run + measure names -> aggregate and per-query values."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from irforge.common.error_status import register_status
from irforge.common.versions import package_versions
from irforge.data.types import Qrels, Run
from irforge.evaluator.depth import top_ranking
from irforge.evaluator.engines import judged, trec
from irforge.evaluator.measures import DEFAULT_MEASURES, NON_NUMERIC, parse_measures, reading_depth
from irforge.ranking import Ranking


class EvaluationError(ValueError):
    """The qrels and run cannot be evaluated together (e.g. no query in common)."""


register_status(EvaluationError, "INVALID_ARGUMENT")  # how it travels over gRPC (irforge.common.grpc_errors)


@dataclass(frozen=True)
class EvaluationOptions:
    """Everything besides the data that changes a number; recorded in every result."""

    drop_identical_ids: bool = True   # BEIR: a retrieved doc whose id equals the query id is dropped
    complete: bool = False            # trec_eval -c: qrels queries missing from the run score 0
    relevance_level: int = 1          # trec_eval -l
    max_docs_per_query: int = 0       # trec_eval -M (0 = all)

    def __post_init__(self):
        if self.relevance_level < 1:
            raise ValueError(f"relevance_level must be >= 1, got {self.relevance_level}")
        if self.max_docs_per_query < 0:
            raise ValueError("max_docs_per_query must be >= 0")

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class EvaluationResult:
    measure_names: list[str]
    aggregate: dict[str, float]
    per_query: dict[str, dict[str, float]]
    queries_evaluated: int
    identical_ids_dropped: int
    options: EvaluationOptions
    versions: dict[str, str] = field(default_factory=dict)


def drop_identical_ids(run: Run) -> tuple[Run, int]:
    """BEIR's rule: remove a retrieved document whose id equals its query id. Copies only what changes."""
    dropped = 0
    cleaned: Run = {}
    for query_id, scores in run.items():
        if isinstance(scores, Ranking):  # not `in`: that would build and cache the Ranking's dict
            kept = scores.without(query_id)
            dropped += kept is not scores
            scores = kept
        elif query_id in scores:
            scores = {doc_id: s for doc_id, s in scores.items() if doc_id != query_id}
            dropped += 1
        cleaned[query_id] = scores
    return cleaned, dropped


def _top_ranking(query_id: str, scores, k: int) -> Ranking:
    try:
        return top_ranking(scores, k)
    except ValueError as error:  # the file readers and the gRPC door refuse NaN; a caller's dict may hold one
        raise EvaluationError(f"the run's query {query_id!r}: {error}") from None


def _some_ids(by_query: dict, examples: int = 3) -> str:
    """"2 queries, e.g. 'q1', 'q2'": enough to see two files' ids do not match, and how."""
    count = len(by_query)
    shown = ", ".join(repr(q) for q in sorted(by_query)[:examples]) + (", ..." if count > examples else "")
    return f"{count} {'query' if count == 1 else 'queries'}" + (f", e.g. {shown}" if count else "")


class Evaluator:
    """Scores runs with pytrec_eval (trec_eval's code) plus Judged@k; one tie rule throughout."""

    def evaluate(
        self,
        qrels: Qrels,
        run: Run,
        measures: list[str] | tuple[str, ...] = DEFAULT_MEASURES,
        options: EvaluationOptions = EvaluationOptions(),
    ) -> EvaluationResult:
        requests = parse_measures(list(measures))
        if not qrels:
            raise EvaluationError("the qrels are empty")

        dropped = 0
        given_run = run
        if options.drop_identical_ids:
            run, dropped = drop_identical_ids(run)

        # Only queries with judgements are evaluated (trec_eval ignores the others); with
        # `complete`, a judged query the run lacks is evaluated on an empty ranking, scoring 0.
        # Queries in sorted order: aggregates are float sums, and their order must not depend on
        # where the run came from (a file, a dict, a gRPC map) for results to be identical.
        if options.complete:
            run = {query_id: run.get(query_id, {}) for query_id in sorted(qrels)}
        else:
            run = {query_id: run[query_id] for query_id in sorted(run) if query_id in qrels}
        if not run:
            raise EvaluationError(
                f"no query of the run has judgements in the qrels (run: {_some_ids(given_run)}; qrels: {_some_ids(qrels)}): "
                "check that both use the same query ids"
            )
        run = self._top_documents(run, reading_depth(requests), options.max_docs_per_query)

        trec_requests = [r for r in requests if r.engine == "pytrec_eval"]
        per_query, trec_keys = trec.compute(qrels, run, trec_requests, options.relevance_level) if trec_requests else ({q: {} for q in run}, {})
        for request in requests:
            if request.engine == "judged":
                for query_id, scores in run.items():
                    top = _top_ranking(query_id, scores, request.cutoff)
                    per_query[query_id][request.output_name] = judged.judged_at_k(qrels[query_id], top, request.cutoff)

        names = self._output_names(requests, per_query)
        aggregate = {}
        for name in names:
            values = [per_query[q][name] for q in per_query]
            if name in trec_keys:
                aggregate[name] = trec.aggregate(trec_keys[name], values)
            else:
                aggregate[name] = math.fsum(values) / len(values)
        return EvaluationResult(
            measure_names=names,
            aggregate=aggregate,
            per_query={q: {name: values[name] for name in names} for q, values in per_query.items()},
            queries_evaluated=len(per_query),
            identical_ids_dropped=dropped,
            options=options,
            versions=package_versions(["pytrec_eval-terrier"]),
        )

    @staticmethod
    def _top_documents(run: Run, depth: int, max_docs: int) -> Run:
        """Each query's ranking cut to what the measures can read: its top `depth` (0 = all),
        and no more than `max_docs` (trec_eval -M, 0 = all). The cut is by the tie rule, so every
        value is the one the whole ranking gives (measures.py, MeasureRequest.depth)."""
        if max_docs and (not depth or max_docs < depth):
            depth = max_docs
        return {query_id: _top_ranking(query_id, scores, depth) for query_id, scores in run.items()} if depth else run

    @staticmethod
    def _output_names(requests, per_query) -> list[str]:
        """Output names in request order; trec_eval-named requests contribute every key they produced."""
        produced = next(iter(per_query.values()))
        names: list[str] = []
        for request in requests:
            if request.trec_key is not None or request.engine == "judged":
                candidates = [request.output_name]
            else:
                candidates = [k for k in produced if k not in names]
            names.extend(n for n in candidates if n in produced and n not in names and n not in NON_NUMERIC)
        return names
