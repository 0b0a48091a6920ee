"""Each option's own check (its choices, its range) for any configuration class or section: the
commands outside the pipeline (irforge qc, service, shard-worker, encode-shards) refuse a value
in the same words as `irforge eval` (irforge.config.rules checks a PipelineConfig this way)."""

from __future__ import annotations

from irforge.common.checks import minimum_problem, range_problem
from irforge.config.options import ConfigError, leaves, nearest


def within(low, high):
    """An option's check: a finite number within low..high."""
    return lambda value: range_problem(value, low, high)


def at_least(low):
    """An option's check: at least `low` (None, an option left unset, passes)."""
    return lambda value: None if value is None else minimum_problem(value, low)


def check_values(config):
    """`config` when every option's value passes its choices and check; ConfigError naming the
    first option that does not."""
    for leaf in leaves(type(config)):
        value = config
        for part in leaf.path:
            value = getattr(value, part)
        if leaf.info.choices is not None and value not in leaf.info.choices:
            choices = ", ".join(map(repr, leaf.info.choices))
            raise ConfigError(f"{leaf.info.flag}: invalid choice: {value!r} (choose from {choices})"
                              f"{nearest(str(value), leaf.info.choices)}")
        problem = leaf.info.check(value) if leaf.info.check is not None else None
        if problem:
            raise ConfigError(f"{leaf.info.flag} {problem}")
    return config
