"""Streaming readers and writers for BEIR collections and TREC run/qrels files."""

# Imported on first use (PEP 562): reading one module of this package (data.errors, data.beir)
# does not load the TREC writer and numpy, so `irforge --help` stays fast.
_NAMES = {"BeirDataset": "beir", "Document": "beir", "Query": "beir", "iter_corpus": "beir", "iter_queries": "beir",
          "read_beir_qrels": "beir", "DataFormatError": "errors", "read_trec_qrels": "trec", "write_trec_run": "trec",
          "Qrels": "types", "Run": "types"}

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


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
