"""ranx's Run and Qrels, the fusion tests' reference, built with ranx's own add_multi instead of its
constructor, so that numba compiles ranx once for the whole suite instead of once per doc-id length.

Why: ranx's constructor stores document ids as a numpy array of the longest id's width (`<U8`,
`<U9`, ...), and numba types every dict built from it by that width: each width recompiles
create_and_sort and then every fusion, normalisation and metric function that reads the run
(~40 s of CI for each new width; the fusion tests met several). add_multi, ranx's other way to
fill a run, keys the same dicts by plain strings, as ranx's empty Run() declares them. The same
ranx code then orders, fuses and scores the same ids and scores: measured on these runs (rrf,
wsum min-max and zmuv, mnz), bit for bit the same fused scores, in the same order, either way."""

from __future__ import annotations

from ranx import Qrels, Run


def ranx_run(run: dict[str, dict[str, float]]) -> Run:
    """The run as ranx holds it; each query's documents keep their order (ranx's RRF reads it)."""
    built = Run()
    built.add_multi(list(run), [list(scores) for scores in run.values()], [list(scores.values()) for scores in run.values()])
    return built


def ranx_qrels(qrels: dict[str, dict[str, int]]) -> Qrels:
    built = Qrels()
    built.add_multi(list(qrels), [list(grades) for grades in qrels.values()], [list(grades.values()) for grades in qrels.values()])
    return built
