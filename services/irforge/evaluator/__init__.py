"""Evaluator service: scores runs against qrels with pytrec_eval, trec_eval's own code."""

from irforge.evaluator.core import EvaluationOptions, EvaluationResult, Evaluator
from irforge.evaluator.measures import MeasureError, parse_measures

__all__ = ["EvaluationOptions", "EvaluationResult", "Evaluator", "MeasureError", "parse_measures"]
