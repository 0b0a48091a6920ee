"""How a configuration field is declared once: its type, default, help, command-line flag and
value check live on the dataclass field (`option(...)`), and everything else is derived from it —
the command line (irforge.cli.options), the Python API's keyword arguments, YAML/JSON files and
the job spec. Modelled on transformers' HfArgumentParser, without argparse in this room.

Each leaf option has one *flat name* (the flag without dashes, `-` as `_`: `--k1` is `k1`,
`--reranker-endpoint` is `reranker_endpoint`); the Python API takes flat names as keywords and a
config file nests them by section (`bm25: {k1: 1.2}`).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path


class ConfigError(ValueError):
    """A configuration value or combination that cannot run; the message names the option."""


class UnknownOption(ConfigError, TypeError):
    """An option name no configuration field has (a TypeError too, as for any unknown keyword)."""


@dataclass(frozen=True)
class OptionInfo:
    flag: str                                   # the command line's long option, e.g. "--k1"
    help: str
    choices: tuple | None = None
    check: Callable[[object], str | None] | None = None   # the value's problem, or None
    parse: Callable[[str], object] | None = None          # command-line text -> value (default: the type)
    inverted: bool = False                      # a bool whose flag turns it off (--no-normalize)
    repeatable: bool = False                    # a tuple given by repeating the flag (-m M -m N)
    short: str | None = None                    # e.g. "-m"
    metavar: str | None = None
    location: bool = False                      # where something is kept, not a choice (see rules.py)
    key: str | None = None                      # the flat name when it is not the flag's (-m/--measure: measures)
    url: bool = False                           # a URL, which may carry credentials: recorded redacted

    @property
    def name(self) -> str:
        """The flat name: the API keyword and the key a flat mapping uses."""
        return self.key or self.flag.lstrip("-").replace("-", "_")


def option(default, flag: str, help: str, **info) -> dataclasses.Field:
    """A configuration field: its default and its OptionInfo (see the module docstring)."""
    return field(default=default, metadata={"option": OptionInfo(flag=flag, help=help, **info)})


@dataclass(frozen=True)
class Leaf:
    """One option: where it sits (("bm25", "k1")), its field and its declaration."""
    path: tuple[str, ...]
    field: dataclasses.Field
    info: OptionInfo
    type: object                                  # the resolved annotation

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def is_section(kind) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


def leaves(cls, prefix: tuple[str, ...] = ()) -> Iterator[Leaf]:
    """Every option of a configuration class, sections walked in declaration order."""
    hints = _hints(cls)
    for item in dataclasses.fields(cls):
        kind = hints[item.name]
        if is_section(kind):
            yield from leaves(kind, (*prefix, item.name))
        elif "option" in item.metadata:
            yield Leaf((*prefix, item.name), item, item.metadata["option"], kind)


def leaves_by_name(cls) -> dict[str, Leaf]:
    found: dict[str, Leaf] = {}
    for leaf in leaves(cls):
        assert leaf.info.name not in found, f"two options named {leaf.info.name}"
        found[leaf.info.name] = leaf
    return found


def nearest(word: str, candidates) -> str:
    """'; did you mean X?' for the closest candidate, or ''."""
    close = difflib.get_close_matches(word, [str(c) for c in candidates], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


# -- values -----------------------------------------------------------------------------------

def _base_types(kind) -> tuple:
    """The non-None types of an annotation (`int | None` -> (int,))."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return tuple(arg for arg in args if arg is not type(None))
    return (kind,)


def coerce(leaf: Leaf, value, where: str):
    """`value` (from Python, YAML, JSON or a protobuf Struct) as the option's type; ConfigError
    naming `where` when it cannot be. Integral floats become ints (a Struct carries numbers as
    doubles); strings are not parsed here (the command line does that with `parse`)."""
    if value is None:
        if type(None) in typing.get_args(leaf.type):
            return None
        raise ConfigError(f"{where}: a value is required")
    kinds = _base_types(leaf.type)
    kind = kinds[0]
    origin = typing.get_origin(kind)
    if origin is tuple:
        if isinstance(value, str) and leaf.info.parse is not None:
            value = leaf.info.parse(value)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        item_kind = typing.get_args(kind)[0]
        return tuple(_scalar(item_kind, item, where) for item in value)
    return _scalar(kind, value, where)


def _scalar(kind, value, where: str):
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if kind is int:
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected a whole number, got {value!r}")
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, int):
            return value
        raise ConfigError(f"{where}: expected a whole number, got {value!r}")
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if kind is str:
        if isinstance(value, (str, Path)):
            return str(value)
        raise ConfigError(f"{where}: expected text, got {value!r}")
    return value


def plain(value):
    """A value as JSON holds it (tuples as lists)."""
    if isinstance(value, tuple):
        return [plain(item) for item in value]
    return value
