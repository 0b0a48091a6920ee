"""What showing progress costs a dense encode: irforge's encode_with_cache over the first N SciFact
documents with MiniLM (EncoderSpec.batch_size 64), three ways, in interleaved rounds, each
through a fresh embedding cache (so every text is encoded):

  unwatched   no progress: chunks of 256 texts, one encoder call each (sentence-transformers sorts
              a call's texts by length, so its batches of 64 pad little)         the baseline
  watched     progress shown (what a log or a terminal gets now): chunks of 256, encoded in groups
              of 64 longest-first, the bar moved after each group
  input-order what progress cost before: chunks of 64 texts in input order, one call each, each
              padded to its own longest text

Each figure is documents/s and its ratio to `unwatched` (best round); the vectors of each way are
compared with the baseline's (largest absolute difference).

SciFact's abstracts mostly exceed MiniLM's 256 tokens, so every batch pads to 256 whatever its
order: `--short-texts` cuts each document to a seeded random length of 5-150 words (about MS
MARCO's passages), where the order of a batch decides its padding.

Run: .venv/bin/python benchmarks/watched_encoding.py [--docs 1024 --rounds 2 --short-texts]
Writes benchmarks/results/watched_encoding.json.
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from _common import measure_interleaved, table, write_results
from irforge.common.progress import no_progress
from irforge.data import BeirDataset
from irforge.models.cache import EmbeddingCache
from irforge.models.cached_encoding import encode_with_cache
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole

DEFAULT_DATASET = Path(os.environ.get("IRFORGE_SHARED", "/work/shared")) / "data" / "beir" / "scifact"


class CountingBar:
    """A progress bar that only counts: what a LineProgress or tqdm is asked to do, minus the drawing."""

    def __init__(self, *_):
        self.updates = 0

    def update(self, n: int = 1) -> None:
        self.updates += 1

    def close(self) -> None:
        pass


def encode(model: EncoderCore, items: list[tuple[str, str]], batch_size: int, progress) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder, EmbeddingCache(Path(folder) / "cache.sqlite3") as cache:
        return np.concatenate([vectors for _, vectors in encode_with_cache(
            model, cache, TextRole.PASSAGE, items, batch_size=batch_size, progress=progress)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--docs", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--short-texts", action="store_true", help="cut each text to 5-150 words (seeded)")
    args = parser.parse_args()

    items = [(d.doc_id, d.full_text) for d in itertools.islice(BeirDataset.open(args.dataset).corpus(), args.docs)]
    if args.short_texts:
        lengths = np.random.default_rng(0).integers(5, 151, size=len(items))
        items = [(doc_id, " ".join(text.split()[:length])) for (doc_id, text), length in zip(items, lengths)]
    model = EncoderCore(EncoderSpec("all-MiniLM-L6-v2"))
    model.encode([text for _, text in items[:64]], TextRole.PASSAGE)   # warm-up
    ways = {
        "unwatched": lambda: encode(model, items, 256, None),
        "watched": lambda: encode(model, items, 256, CountingBar),
        "input-order": lambda: encode(model, items, 64, no_progress),   # 64 per call, in input order
    }
    measured = measure_interleaved(ways, args.rounds)
    baseline_vectors, baseline_seconds = measured["unwatched"]
    rows, figures = [], {}
    for name, (vectors, seconds) in measured.items():
        rate = len(items) / min(seconds)
        figures[name] = {"seconds": seconds, "documents_per_s": round(rate, 2),
                         "ratio_to_unwatched": round(min(baseline_seconds) / min(seconds), 3),
                         "max_abs_difference": float(np.abs(vectors - baseline_vectors).max())}
        rows.append([name, rate, figures[name]["ratio_to_unwatched"], figures[name]["max_abs_difference"]])
    print(table(["way", "docs/s (best)", "ratio to unwatched", "max |Δ| vs unwatched"], rows))
    # One results file per kind of text: benchmarks/results/watched_encoding[_short].json
    name = Path(__file__).with_name("watched_encoding_short.py") if args.short_texts else Path(__file__)
    write_results(str(name), {"documents": len(items), "rounds": args.rounds, "model": "all-MiniLM-L6-v2",
                             "texts": "cut to 5-150 words (seed 0)" if args.short_texts else "whole documents",
                             "encoder_batch_size": 64, "results": figures})


if __name__ == "__main__":
    main()
