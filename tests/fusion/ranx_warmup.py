"""Compiles, ahead of the fusion tests, the ranx functions they call, into numba's cache for this
session ($NUMBA_CACHE_DIR, under the session's folder): tests/conftest.py starts it in the background
at the lowest CPU priority when collection ends, so the compiling fills time the suite spends waiting
on servers and subprocesses, and tests/fusion, some minutes later, loads what it needs from the cache
instead of compiling it (what it finds missing, it compiles itself, as before).

numba's compiled code depends on the argument types only, not on the values: two tiny runs of two
queries, built as the tests build them (ranx_reference.py: ids as plain strings), give the functions
the tests call on real runs. Run with numba's default optimisation, as ranx's users run it: numba
caches ranx's typed-dict functions only when optimised (tests/fusion/conftest.py)."""

from __future__ import annotations

from ranx import fuse, optimize_fusion
from ranx_reference import ranx_qrels, ranx_run

from irforge.fusion import METHODS, NORMALISATIONS


def main() -> None:
    runs = [{"q1": {"d1": 3.0, "d22": 2.0, "d3": 1.0}, "q2": {"d4": 1.5, "d1": 0.5}},
            {"q1": {"d3": 0.9, "d1": 0.4}, "q2": {"d4": 0.7, "d55": 0.2, "d6": 0.1}}]
    ranx_runs = [ranx_run(run) for run in runs]
    for method in METHODS.values():
        if method.ranx is None:
            continue
        params = {"k": 60} if method.ranx == "rrf" else {"weights": [0.5, 0.5]} if method.weighted else {}
        for norm in NORMALISATIONS if method.normalised else ("none",):
            fuse(ranx_runs, norm=None if norm == "none" else norm, method=method.ranx, params=params)
    qrels = ranx_qrels({"q1": {"d1": 1, "d3": 2}, "q2": {"d4": 1}})
    for norm in ("min-max", "zmuv"):
        optimize_fusion(qrels, ranx_runs, norm=norm, method="wsum", metric="ndcg@10", step=0.1, show_progress=False)


if __name__ == "__main__":
    main()
