"""A configuration to and from plain data: nested mappings (YAML/JSON files, results.json, a job
spec's Struct), flat options (the Python API's keywords, the command line's parsed flags), and
files. Unknown keys are refused with the nearest known one; values are coerced to the field's
type or refused naming the key."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TypeVar

import yaml

from irforge.common.files import read_yaml
from irforge.config.options import ConfigError, UnknownOption, coerce, is_section, leaves, leaves_by_name, nearest, plain
from irforge.config.options import _hints

T = TypeVar("T")


def to_mapping(config) -> dict:
    """The whole configuration as nested plain data (every field, defaults included)."""
    result = {}
    for item in dataclasses.fields(config):
        value = getattr(config, item.name)
        result[item.name] = to_mapping(value) if dataclasses.is_dataclass(value) else plain(value)
    return result


def recorded(config) -> dict:
    """The whole configuration as results.json records it: to_mapping with the credentials taken
    out of every URL (user:password, secret query values). Secrets come from the environment and
    never reach a result; a rerun from results.json gets them again the same way."""
    from irforge.common.redact import redact_url

    mapping = to_mapping(config)
    for leaf in leaves(type(config)):
        if leaf.info.url:
            *sections, name = leaf.path
            target = mapping
            for section in sections:
                target = target[section]
            if target[name]:
                target[name] = redact_url(target[name])
    return mapping


def from_mapping(cls: type[T], mapping, source: str = "configuration", base: T | None = None) -> T:
    """`cls` from nested plain data; absent keys keep `base`'s values (default: the defaults)."""
    if not isinstance(mapping, dict):
        raise ConfigError(f"{source}: expected a mapping of {cls.__name__} fields, got {type(mapping).__name__}")
    return _section(cls, mapping, base if base is not None else cls(), source, ())


def _section(cls, mapping: dict, base, source: str, path: tuple[str, ...]):
    hints = _hints(cls)
    fields = {item.name: item for item in dataclasses.fields(cls)}
    changes = {}
    for key, value in mapping.items():
        where = ".".join((*path, str(key)))
        if key not in fields:
            raise UnknownOption(f"{source}: unknown field {where!r}{nearest(str(key), fields)}")
        kind = hints[key]
        if is_section(kind):
            if value is None:
                continue
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: {where} must be a mapping of its fields, got {value!r}")
            changes[key] = _section(kind, value, getattr(base, key), source, (*path, key))
        else:
            leaf = next(leaf for leaf in leaves(cls) if leaf.path == (key,))
            changes[key] = coerce(leaf, value, f"{source}: {where}")
    return dataclasses.replace(base, **changes)


def with_options(config: T, options: dict, source: str = "options") -> T:
    """`config` with flat options applied (`k1=1.2`, `reranker_endpoint="x.yaml"`): the Python
    API's keywords and the command line's flags. An unknown name is refused with the nearest."""
    by_name = leaves_by_name(type(config))
    nested: dict = {}
    for name, value in options.items():
        leaf = by_name.get(name)
        if leaf is None:
            raise UnknownOption(f"{source} has no option {name!r}{nearest(name, by_name)}")
        if isinstance(value, str) and leaf.info.parse is not None:
            try:
                value = leaf.info.parse(value)
            except ValueError as error:
                raise ConfigError(f"{leaf.info.flag} {error}") from None
        if isinstance(value, Path):
            value = str(value)
        if leaf.info.inverted and isinstance(value, bool):
            value = not value   # `no_normalize=True` is normalize False
        if isinstance(value, list):
            value = tuple(value)
        target = nested
        for part in leaf.path[:-1]:
            target = target.setdefault(part, {})
        target[leaf.path[-1]] = value
    return from_mapping(type(config), nested, source, base=config)


def load(cls: type[T], path: str | Path) -> T:
    """A configuration file: YAML (or JSON, which YAML reads), nested by section; or an earlier
    run's results.json, whose `config` it takes (so `--config runs/x/results.json` runs that
    configuration again). Relative paths in it stay as written (relative to where the command
    runs, as a flag's would)."""
    mapping = read_yaml(path, "configuration", ConfigError, formats="YAML or JSON")
    if isinstance(mapping, dict) and "metrics" in mapping and isinstance(mapping.get("config"), dict):
        mapping = mapping["config"]   # a results.json: the configuration it records
    elif isinstance(mapping, dict) and "metrics" in mapping:
        raise ConfigError(f"{path} is a results.json written before results recorded their configuration (no `config`)")
    return from_mapping(cls, mapping if mapping is not None else {}, str(path))


def dump(config, path: str | Path) -> None:
    """Write the whole configuration: YAML, or JSON when the name ends in .json."""
    mapping = to_mapping(config)
    text = (json.dumps(mapping, indent=2) + "\n" if str(path).endswith(".json")
            else yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True))
    Path(path).write_text(text, encoding="utf-8")


def _differing(config, default):
    """(leaf, value) for every option whose value differs from `default`'s (the defaults)."""
    default = default if default is not None else type(config)()
    for leaf in leaves(type(config)):
        value, base = config, default
        for part in leaf.path:
            value, base = getattr(value, part), getattr(base, part)
        if value != base:
            yield leaf, value


def changed(config, default=None) -> dict[str, object]:
    """Flat names of the options whose value differs from `default`'s (the defaults), with their values."""
    return {leaf.info.name: value for leaf, value in _differing(config, default)}


def changed_mapping(config, default=None) -> dict:
    """The same options nested by section, as plain data (what a job spec shows: the defaults
    fill in the rest on the way back)."""
    mapping: dict = {}
    for leaf, value in _differing(config, default):
        target = mapping
        for part in leaf.path[:-1]:
            target = target.setdefault(part, {})
        target[leaf.path[-1]] = plain(value)
    return mapping
