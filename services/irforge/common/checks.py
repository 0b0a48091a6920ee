"""Checks of numeric settings, one message shape for every flag and spec field: nonsense numbers
(inf, nan, negative depths) are refused where they enter, before any work."""

from __future__ import annotations

import math

# Every count, depth and size a user gives may travel in an int32 field of a service call (top_k as
# a search's k, HNSW settings, shards, a qrels relevance): larger values are refused where they
# enter, in these words, not by protobuf in the middle of a job.
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


def range_problem(value: float, low: float, high: float) -> str | None:
    """What is wrong with `value` unless it is finite and within low..high."""
    if isinstance(value, (int, float)) and math.isfinite(value) and low <= value <= high:
        return None
    return f"must be a finite number within {_plain(low)}..{_plain(high)}, got {value}"


def minimum_problem(value: int, low: int, high: int = INT32_MAX) -> str | None:
    """What is wrong with `value` unless it is at least `low` (and at most `high`: see INT32_MAX)."""
    if value < low:
        return f"must be at least {low}, got {value}"
    return None if value <= high else f"must be at most {high}, got {value}"


def check_range(name: str, value: float, low: float, high: float) -> None:
    """ValueError naming `name` (the flag) unless `value` is finite and within low..high."""
    problem = range_problem(value, low, high)
    if problem:
        raise ValueError(f"{name} {problem}")


def check_at_least(name: str, value: int, low: int) -> None:
    problem = minimum_problem(value, low)
    if problem:
        raise ValueError(f"{name} {problem}")


def _plain(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)   # 1000000, not 1e+06
