"""The one builder from a configuration to a pipeline (irforge.builder.pipeline)."""
