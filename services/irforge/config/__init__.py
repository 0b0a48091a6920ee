"""Typed configuration: one pipeline configuration, validated once, recorded whole in results.json.
The command line, the Python API, bench and orchestrator jobs all build it here and hand it to
one builder (irforge.builder)."""

from irforge.config.options import ConfigError
from irforge.config.pipeline import (DEFAULT_MODEL, RETRIEVERS, Bm25Config, EncoderConfig, EndpointConfig, EvaluationConfig,
                                     FusionConfig, HolesConfig, InstructionsConfig, PipelineConfig, RerankConfig,
                                     ServicesConfig, StoresConfig, VectorsConfig)
from irforge.config.rules import validate
from irforge.config.values import changed, dump, from_mapping, load, recorded, to_mapping, with_options

__all__ = ["DEFAULT_MODEL", "RETRIEVERS", "Bm25Config", "ConfigError", "EncoderConfig", "EndpointConfig", "EvaluationConfig",
           "FusionConfig", "HolesConfig", "InstructionsConfig", "PipelineConfig", "RerankConfig", "ServicesConfig",
           "StoresConfig", "VectorsConfig", "changed", "dump", "from_mapping", "load",
           "recorded", "to_mapping", "validate", "with_options"]
