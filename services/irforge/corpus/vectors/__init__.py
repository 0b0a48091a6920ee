"""Vector backends: `embedded` (Qdrant Edge, in-process, on disk) and `qdrant` (a Qdrant server)."""
