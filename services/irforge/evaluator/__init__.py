"""Evaluator service: scores runs against qrels with pytrec_eval, trec_eval's own code."""

# Imported on first use (PEP 562), so reading irforge.evaluator.measures (the measure names every
# command's flags offer) does not load the engines and numpy: `irforge --help` stays fast.
_NAMES = {"EvaluationOptions": "core", "EvaluationResult": "core", "Evaluator": "core",
          "MeasureError": "measures", "parse_measures": "measures"}

__all__ = ["EvaluationOptions", "EvaluationResult", "Evaluator", "MeasureError", "parse_measures"]


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
