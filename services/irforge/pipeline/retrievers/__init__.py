"""Retrievers the eval job composes. Each one prepares its index from a dataset (skipping work
already done), retrieves a run for a list of queries, and describes its full configuration."""

from irforge.pipeline.retrievers.base import CorpusTracker, Retriever

RETRIEVERS = ("bm25", "dense", "hybrid", "sparse")

__all__ = ["RETRIEVERS", "CorpusTracker", "Retriever"]
