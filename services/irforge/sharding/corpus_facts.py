"""What every shard must agree on about the corpus: its bytes (fingerprint) and document count."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from irforge.data import BeirDataset
from irforge.data.textfile import numbered_lines


@dataclass(frozen=True)
class CorpusFacts:
    dataset: str            # the dataset folder's name
    corpus_file: str        # corpus.jsonl or corpus.jsonl.gz
    fingerprint: str        # sha256 of the corpus file's bytes (BeirDataset.corpus_fingerprint)
    total_documents: int    # documents in the stream: non-blank lines, the ordinals shards cut

    def as_dict(self) -> dict:
        return {"dataset": self.dataset, "corpus_file": self.corpus_file, "dataset_fingerprint": self.fingerprint,
                "total_documents": self.total_documents}


def count_documents(dataset: BeirDataset) -> int:
    """Documents iter_corpus yields (each non-blank line is one or an error), without parsing JSON."""
    return sum(1 for _ in numbered_lines(dataset.corpus_path))


def corpus_facts(dataset_dir: str | Path) -> CorpusFacts:
    dataset = BeirDataset.open(dataset_dir)
    return CorpusFacts(dataset.name, dataset.corpus_path.name, dataset.corpus_fingerprint(), count_documents(dataset))
