"""Command-line options derived from a typed configuration's fields (irforge.config), so an option
is declared once: its flag, help, choices and default come from the field, and the parsed flags
go back into the configuration through `with_options`, the same door the Python API uses.

Derived options default to argparse.SUPPRESS: only what the user typed reaches the configuration,
so a `--config FILE`'s values stand unless a flag overrides them.
"""

from __future__ import annotations

import argparse
import typing
from pathlib import Path

from irforge.config import ConfigError, load, with_options
from irforge.config.options import Leaf, leaves


def _group_title(section: str) -> str:
    return {"": "what to evaluate", "evaluation": "evaluation", "bm25": "BM25 (bm25, hybrid)",
            "encoder": "encoder (dense, hybrid, sparse)", "vectors": "vector store and search (dense, hybrid, sparse)",
            "fusion": "fusion (hybrid)", "endpoint": "team endpoint", "rerank": "reranking",
            "holes": "hole filling (the judge)", "instructions": "instruction following",
            "stores": "stores (where indexes, vectors and embeddings are kept)",
            "services": "running services"}.get(section, section)


def _default_text(leaf: Leaf) -> str:
    default = leaf.field.default
    if leaf.info.inverted or default in (None, "", False) or isinstance(default, tuple) and not default:
        return ""
    if isinstance(default, tuple):
        default = ",".join(f"{value:g}" if isinstance(value, float) else str(value) for value in default)
    return f" (default {default})"


def _value_type(leaf: Leaf):
    """The command-line text's converter: the option's own parser, else its scalar type."""
    if leaf.info.parse is not None:
        return leaf.info.parse
    kinds = [kind for kind in typing.get_args(leaf.type) if kind is not type(None)] or [leaf.type]
    kind = kinds[0]
    if typing.get_origin(kind) is tuple:
        kind = typing.get_args(kind)[0]
    return kind if kind in (int, float) else str


def add_config_options(parser: argparse.ArgumentParser, config_cls, *, sections: tuple[str, ...] | None = None,
                       exclude: tuple[str, ...] = (), required: tuple[str, ...] = ()) -> None:
    """An option for every leaf of `config_cls` (only the leaves under `sections` when given;
    "" is the top level), grouped by section; `exclude` names flat names left out."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for leaf in leaves(config_cls):
        section = leaf.path[0] if len(leaf.path) > 1 else ""
        if sections is not None and section not in sections or leaf.info.name in exclude:
            continue
        if section not in groups:
            groups[section] = parser if section == "" else parser.add_argument_group(_group_title(section))
        info = leaf.info
        names = [info.short, info.flag] if info.short else [info.flag]
        common = {"dest": info.name, "default": argparse.SUPPRESS, "help": info.help + _default_text(leaf)}
        if info.name in required:
            common.pop("default")
            common["required"] = True
        if typing.get_origin(leaf.type) is None and leaf.type is bool:
            groups[section].add_argument(*names, action="store_true", **common)
            continue
        extra = {"metavar": info.metavar} if info.metavar else {}
        if info.choices is not None:
            extra["choices"] = info.choices
        if info.repeatable:
            groups[section].add_argument(*names, action="append", type=_value_type(leaf), **extra, **common)
        else:
            groups[section].add_argument(*names, type=_value_type(leaf), **extra, **common)


def add_config_file_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, metavar="FILE", dest="config_file",
                        help="a pipeline configuration (YAML or JSON, nested by section, as results.json's `config`); "
                             "flags given beside it override its values")


def given_options(args: argparse.Namespace, config_cls, exclude: tuple[str, ...] = ()) -> dict:
    """The flat options the user typed (derived options only; `exclude`: names a command defines its own way)."""
    names = {leaf.info.name for leaf in leaves(config_cls)} - set(exclude)
    return {name: value for name, value in vars(args).items() if name in names}


def config_from_args(args: argparse.Namespace, config_cls, base=None, exclude: tuple[str, ...] = ()):
    """The configuration the command line asks for: `--config FILE` (if any) or `base` (default:
    the defaults), with the typed flags applied. Not validated here: the use case validates."""
    config_file = getattr(args, "config_file", None)
    if config_file is not None:
        config = load(config_cls, config_file)
    else:
        config = base if base is not None else config_cls()
    return with_options(config, given_options(args, config_cls, exclude), source="command line")


def section_from_args(args: argparse.Namespace, section_cls):
    """One section (EncoderConfig, VectorsConfig, StoresConfig) from the flags given, each value
    checked (its choices, its range): for the commands that take a section's flags without a whole
    pipeline (irforge service, shard-worker, encode-shards)."""
    from irforge.config.checks import check_values

    return check_values(config_from_args(args, section_cls))


__all__ = ["ConfigError", "add_config_file_option", "add_config_options", "config_from_args", "given_options",
           "section_from_args"]
