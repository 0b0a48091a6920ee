"""Typed configuration: one pipeline configuration, validated once, recorded whole in results.json.
The command line, the Python API, bench and orchestrator jobs all build it here and hand it to
one builder (irforge.builder)."""

from irforge.config.options import ConfigError
from irforge.config.pipeline import DEFAULT_MODEL, RETRIEVERS, PipelineConfig
from irforge.config.rules import validate
from irforge.config.values import changed, dump, from_mapping, load, to_mapping, with_options

__all__ = ["DEFAULT_MODEL", "RETRIEVERS", "ConfigError", "PipelineConfig", "changed", "dump", "from_mapping", "load",
           "to_mapping", "validate", "with_options"]
