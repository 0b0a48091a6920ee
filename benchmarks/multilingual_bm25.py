"""BM25 nDCG@10 per language on real data: irforge's embedded BM25 beside an independent BM25.

Data: tests/multilingual/data (XQuAD in 12 languages, JSQuAD in Japanese; CC BY-SA 4.0). For each
language, `irforge.api.evaluate(..., retriever="bm25")` (the language read from dataset.json) and
`--language en` (the English-only analysis irforge had before issue 25), beside the reference of
tests/multilingual/reference.py: its own tokeniser with character bigrams for CJK and Thai, the
pure-Python Snowball stemmers, rank_bm25's BM25Okapi, nDCG@10 computed from its definition.

Run: .venv/bin/python benchmarks/multilingual_bm25.py [LANG ...]
Writes benchmarks/results/multilingual_bm25.json.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path

from _common import table, write_results
from irforge import api

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("multilingual_reference", ROOT / "tests" / "multilingual" / "reference.py")
reference = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)

FOLDERS = {**{lang: f"xquad-{lang}" for lang in ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")},
           "ja": "jsquad-ja"}


def main(languages: list[str]) -> None:
    rows, payload = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        for language in languages:
            folder = reference.DATA / FOLDERS[language]
            started = time.perf_counter()
            ours = api.evaluate(folder, out=Path(scratch) / language, retriever="bm25", index_dir=Path(scratch) / "indexes")
            seconds = time.perf_counter() - started
            english = api.evaluate(folder, out=Path(scratch) / f"{language}-en", retriever="bm25", language="en",
                                   index_dir=Path(scratch) / "indexes")
            per_query = reference.ndcg_at_10(folder, language)
            theirs = sum(per_query.values()) / len(per_query)
            row = {"irforge": ours["metrics"]["nDCG@10"], "english_only_analysis": english["metrics"]["nDCG@10"],
                   "reference": round(theirs, 4), "analysis": ours["retriever"]["analyzer"],
                   "queries": len(per_query), "documents": ours["counts"]["documents_ingested"], "irforge_s": round(seconds, 1)}
            payload[language] = row
            rows.append([language, FOLDERS[language], row["documents"], row["queries"], f"{row['english_only_analysis']:.4f}",
                         f"{row['irforge']:.4f}", f"{row['reference']:.4f}"])
            print(rows[-1], flush=True)
    print(table(["language", "data", "docs", "queries", "before (English analysis)", "irforge now", "independent reference"], rows))
    write_results(__file__, {"nDCG@10": payload})


if __name__ == "__main__":
    main(sys.argv[1:] or list(FOLDERS))
