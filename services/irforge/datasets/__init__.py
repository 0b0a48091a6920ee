"""Datasets by name: the BEIR archives (and a team's own catalogue), downloaded once, verified
against their published checksums, and found again by `--dataset beir/scifact` (docs/datasets.md)."""

from irforge.datasets.errors import ChecksumMismatch, DatasetError
from irforge.datasets.resolve import is_dataset_name, resolve_dataset
from irforge.datasets.store import default_datasets_dir

__all__ = ["ChecksumMismatch", "DatasetError", "default_datasets_dir", "is_dataset_name", "resolve_dataset"]
