"""irforge: retrieval evaluation you can trust.

From Python: `irforge.evaluate(dataset, retriever="bm25")`, `irforge.metrics(qrels, run)`,
`irforge.judge_holes(dataset, run, depth=10, out=...)`, `irforge.evaluate_instructions(folder)`,
`irforge.compare_results(results_a, results_b, ...)`, `irforge.agreement(...)` (see irforge.api)."""

__version__ = "0.1.0"

from irforge.api import Results, agreement, compare_results, evaluate, evaluate_instructions, judge_holes, metrics  # noqa: E402  (light: stdlib only until called)

__all__ = ["Results", "__version__", "agreement", "compare_results", "evaluate", "evaluate_instructions", "judge_holes", "metrics"]
