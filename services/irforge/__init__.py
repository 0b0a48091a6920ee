"""irforge: retrieval evaluation you can trust.

From Python: `irforge.evaluate(dataset, retriever="bm25")`, `irforge.metrics(qrels, run)`,
`irforge.judge_holes(dataset, run, depth=10, out=...)`, `irforge.evaluate_instructions(folder)`,
`irforge.compare_results(results_a, results_b, ...)`, `irforge.agreement(...)` (see irforge.api)."""

__version__ = "0.1.0"

__all__ = ["Results", "__version__", "agreement", "compare_results", "evaluate", "evaluate_instructions", "judge_holes", "metrics"]


def __getattr__(name: str):
    # The API is imported on first use (PEP 562): every `irforge` command imports this package,
    # and `irforge --help` has no use for the results module and what it loads.
    if name in __all__:
        from irforge import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
