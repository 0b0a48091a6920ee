"""irforge: retrieval evaluation you can trust."""

__version__ = "0.1.0"
