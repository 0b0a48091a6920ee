"""Turn SQuAD-format reading-comprehension sets into BEIR folders for paragraph retrieval.

    python tools/squad_to_beir.py xquad XQUAD_DIR OUT_DIR [LANG ...]
    python tools/squad_to_beir.py jsquad JSQUAD_VALID_JSON OUT_DIR

xquad: XQUAD_DIR holds xquad.<lang>.json (google-deepmind/xquad, CC BY-SA 4.0); OUT_DIR gets
xquad-<lang>/ per language. jsquad: JGLUE's JSQuAD valid-v1.3.json (yahoojapan/JGLUE, CC BY-SA
4.0, Japanese); OUT_DIR gets jsquad-ja/. Each folder: corpus.jsonl.gz (the paragraphs),
queries.jsonl.gz (the questions), qrels/test.tsv (each question's own paragraph, relevance 1) and
dataset.json naming the language. XQuAD's ids are the same in every language (it is parallel: a
question's id is SQuAD's, a paragraph's its article and place), so runs compare across languages;
its titles stay empty, being English in every language (they would put English words into a
Chinese corpus). JSQuAD writes "title [SEP] " before each paragraph: the title goes to `title`.
gzip with mtime 0, so the output is byte-for-byte reproducible.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

LANGUAGES = ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")


def _gzip_lines(path: Path, rows: list[dict]) -> None:
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
        out.write(text.encode("utf-8"))


def convert(source: Path, out: Path, language: str, name: str) -> tuple[int, int]:
    """Write one language's BEIR folder; (paragraphs, questions)."""
    articles = json.loads(source.read_text(encoding="utf-8"))["data"]
    corpus, queries, qrels = [], [], []
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(article["paragraphs"]):
            doc_id = f"p{a:02d}-{p:02d}"
            title, separator, text = paragraph["context"].partition(" [SEP] ")
            if not separator:
                title, text = "", paragraph["context"]
            corpus.append({"_id": doc_id, "title": title.strip(), "text": text.strip()})
            for qa in paragraph["qas"]:
                queries.append({"_id": qa["id"], "text": qa["question"].strip()})
                qrels.append(f"{qa['id']}\t{doc_id}\t1\n")
    out.mkdir(parents=True, exist_ok=True)
    (out / "qrels").mkdir(exist_ok=True)
    _gzip_lines(out / "corpus.jsonl.gz", corpus)
    _gzip_lines(out / "queries.jsonl.gz", queries)
    (out / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(qrels), encoding="utf-8")
    (out / "dataset.json").write_text(json.dumps({"language": language, "source": name, "licence": "CC BY-SA 4.0"}) + "\n")
    return len(corpus), len(queries)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in ("xquad", "jsquad"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, source, out = argv[0], Path(argv[1]), Path(argv[2])
    if kind == "jsquad":
        jobs = [(source, out / "jsquad-ja", "ja", "JSQuAD v1.3 (JGLUE), valid split")]
    else:
        jobs = [(source / f"xquad.{lang}.json", out / f"xquad-{lang}", lang, "XQuAD") for lang in argv[3:] or LANGUAGES]
    for path, folder, language, name in jobs:
        paragraphs, questions = convert(path, folder, language, name)
        print(f"{folder.name}: {paragraphs} paragraphs, {questions} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
