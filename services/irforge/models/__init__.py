"""Models service: text encoders (sentence-transformers) in-process or on Ray Serve."""
