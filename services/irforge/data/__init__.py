"""Streaming readers and writers for BEIR collections and TREC run/qrels files."""

from irforge.data.beir import BeirDataset, Document, Query, iter_corpus, iter_queries, read_beir_qrels
from irforge.data.errors import DataFormatError
from irforge.data.trec import read_trec_qrels, write_trec_run
from irforge.data.types import Qrels, Run

__all__ = [
    "BeirDataset",
    "DataFormatError",
    "Document",
    "Qrels",
    "Query",
    "Run",
    "iter_corpus",
    "iter_queries",
    "read_beir_qrels",
    "read_trec_qrels",
    "write_trec_run",
]
