"""AIR-Bench QA over a Chinese corpus (XQuAD-zh paragraphs) with the scripted chat server: the
copy check counts word 4-grams, and a Chinese sentence is one "word" to a split on spaces or
non-word characters, so a query copied from its document passed it (0 copied 4-grams) and was
kept. Words are now the analysis room's (irforge.analysis): overlapping character bigrams in
Chinese, so a shared 4-gram is a shared run of 5 characters (test_generation_languages.py has
Japanese, Korean and Thai)."""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

from irforge.generation.recipes.airbench import copied_ngrams

scripted = sys.modules["irforge_judge_tests_scripted_chat"]   # loaded by conftest.py
XQUAD_ZH = Path(__file__).resolve().parents[1] / "multilingual" / "data" / "xquad-zh" / "corpus.jsonl.gz"
OWN_WORDS = "请问这件事的来龙去脉究竟怎样"   # a rewrite in its own words: no 4 characters of it in any paragraph used
PASSAGE = re.compile(r"<passage>\n(.*?)\n</passage>", re.S)   # the document, quoted as data


def copying_writer(prompt: str, body: dict) -> str:
    """Rewrite 1 copies the document's first sentence, rewrites 2 and 3 use their own words."""
    if prompt.startswith("Rewrite the search query below"):
        if "(rewrite number 1)" in prompt:
            document = PASSAGE.search(prompt).group(1)
            return json.dumps({"query": document.split("，")[0][:30]}, ensure_ascii=False)
        return json.dumps({"query": OWN_WORDS}, ensure_ascii=False)
    return scripted.answer_by_schema(prompt, body)


def test_the_copy_check_counts_chinese_4grams():
    document = "黑豹队的防守只丢了 308分，在联赛中排名第六"
    assert copied_ngrams("黑豹队的防守只丢了多少分", document, "zh") == 5    # 黑豹队的防 ... 防守只丢了
    assert copied_ngrams(OWN_WORDS, document, "zh") == 0


def test_airbench_qa_in_chinese_keeps_the_rewrite_that_copied_nothing(chat, spec_file, run_cli, tmp_path):
    corpus = tmp_path / "zh"
    corpus.mkdir()
    with gzip.open(XQUAD_ZH, "rt", encoding="utf-8") as source:
        (corpus / "corpus.jsonl").write_text("".join(line for _, line in zip(range(12), source)), encoding="utf-8")
    chat.structured = copying_writer
    out = tmp_path / "generated"
    code, stdout, stderr = run_cli("generate", "airbench-qa", "--corpus", corpus, "--llm", spec_file(), "--out", out,
                                   "--docs", 4, "--seed", 3, "--cache", tmp_path / "cache.sqlite3", "--no-qc")
    assert code == 0, stdout + stderr
    rewrites = [json.loads(line) for line in (out / "provenance.jsonl").read_text().splitlines()]
    rewrites = [r for r in rewrites if r["stage"] == "rewrite" and r["status"] == "ok"]
    copied = [r for r in rewrites if r["data"]["query"] != OWN_WORDS]
    assert len(copied) == 4 and all(r["copied_4grams"] > 0 for r in copied)
    queries = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    assert len(queries) == 4 and {q["text"] for q in queries} == {OWN_WORDS}
    assert all(q["metadata"]["copied_4grams"] == 0 for q in queries)
