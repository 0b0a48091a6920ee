"""Issue 25: BM25 analyses each language as that language, the language is known, recorded and
overridable, and nothing scores zero in silence. Real data: XQuAD and JSQuAD (tests/multilingual/
data, CC BY-SA 4.0), compared against an independent BM25 (reference.py), never against irforge's
own earlier output."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import Stemmer

from irforge.analysis import LANGUAGES, analyzer_for
from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.pipeline.retrievers.bm25 import corpus_id_for

_spec = importlib.util.spec_from_file_location("irforge_multilingual_reference", Path(__file__).with_name("reference.py"))
reference = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)
DATA, ndcg_at_10 = reference.DATA, reference.ndcg_at_10

AIR_BENCH = ("en", "zh", "es", "fr", "de", "ru", "ja", "ko", "ar", "fa", "id", "hi", "bn")
CHECKED_QUERIES = 200   # the first queries of each language: the reference is plain Python


@pytest.fixture(scope="module")
def irforge(irforge_command, tmp_path_factory):
    index_dir = tmp_path_factory.mktemp("indexes")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*irforge_command, *args, "--index-dir", str(index_dir)],
                              capture_output=True, text=True, timeout=300)
    return run


def _write_beir(root, documents: dict[str, str], queries: dict[str, str], qrels: dict[str, str]):
    root.mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}, ensure_ascii=False) + "\n"
                                               for i, t in documents.items()), encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}, ensure_ascii=False) + "\n"
                                                for i, t in queries.items()), encoding="utf-8")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in qrels.items()))
    return root


CHINESE = {"d1": "黑豹队的防守只丢了三百零八分，在联赛中排名第六。", "d2": "梅雨是东亚特有的气象现象，五月到七月多雨。",
           "d3": "长江是中国最长的河流，流经十一个省级行政区。"}
CHINESE_QUERIES = {"q1": "黑豹队的防守丢了多少分？", "q2": "梅雨在哪些月份？", "q3": "中国最长的河流是哪条？"}


def test_a_three_document_chinese_collection_is_ranked_right(irforge, tmp_path):
    """Before: the English regex made each sentence one word; an empty run, nDCG@10 0.0000, exit 0."""
    data = _write_beir(tmp_path / "zh3", CHINESE, CHINESE_QUERIES, {"q1": "d1", "q2": "d2", "q3": "d3"})
    done = irforge("eval", "--dataset", str(data), "--retriever", "bm25", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["metrics"]["nDCG@10"] == 1.0
    retriever = results["retriever"]
    assert retriever["language"] == "zh" and retriever["languages"]["corpus"]["how"] == "detected"
    assert retriever["corpus_id"].endswith("-zh-a1")
    assert results["counts"]["queries_without_results"] == 0


def test_a_run_that_retrieves_nothing_for_most_queries_fails_and_says_why(irforge, tmp_path):
    """The same collection forced to English analysis: the old failure, now exit 3 with the reason."""
    data = _write_beir(tmp_path / "zh3", CHINESE, CHINESE_QUERIES, {"q1": "d1", "q2": "d2", "q3": "d3"})
    done = irforge("eval", "--dataset", str(data), "--retriever", "bm25", "--language", "en", "--out", str(tmp_path / "out"))
    assert done.returncode == 3, done.stderr
    assert "3 of 3 queries retrieved nothing; the corpus was analysed as en (given)" in done.stderr
    assert "warning: 3 queries retrieved nothing (e.g. q1: '黑豹队的防守丢了多少分？'" in done.stderr
    counts = json.loads((tmp_path / "out" / "results.json").read_text())["counts"]
    assert counts["queries_without_results"] == 3 and counts["queries_without_results_examples"][0]["query_id"] == "q1"


def test_queries_and_documents_that_analyse_to_nothing_are_counted(irforge, tmp_path):
    data = _write_beir(tmp_path / "en", {"d1": "Rivers flow into the sea near the delta.", "d2": "... --- !!!"},
                       {"q1": "where do rivers flow", "q2": "the of and", "q3": "sea delta"}, {"q1": "d1", "q3": "d1"})
    done = irforge("eval", "--dataset", str(data), "--retriever", "bm25", "--language", "en", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    counts = json.loads((tmp_path / "out" / "results.json").read_text())["counts"]
    assert counts["documents_without_terms"] == 1 and counts["documents_without_terms_examples"] == ["d2"]
    assert "warning: 1 documents index to no term (e.g. d2)" in done.stderr


def test_an_unknown_language_and_a_mixed_corpus_are_refused(irforge, tmp_path):
    data = _write_beir(tmp_path / "mixed", {
        **{f"z{i}": text for i, text in enumerate(CHINESE.values())},
        **{f"r{i}": text for i, text in enumerate([
            "Река Янцзы является самой длинной рекой в Китае и протекает через одиннадцать провинций страны.",
            "Сезон дождей в Восточной Азии начинается в мае и продолжается до июля почти каждый год.",
            "Защита команды пропустила всего триста восемь очков и заняла шестое место в лиге."])}},
        {"q1": "长江"}, {"q1": "z2"})
    done = irforge("eval", "--dataset", str(data), "--retriever", "bm25", "--language", "xx", "--out", str(tmp_path / "o1"))
    assert done.returncode == 2, done.stderr
    assert "irforge eval: error: --language must be an ISO 639-1 code irforge analyses (af, ar, " in done.stderr
    assert "got 'xx'" in done.stderr
    done = irforge("eval", "--dataset", str(data), "--retriever", "bm25", "--out", str(tmp_path / "o2"))
    assert done.returncode == 2, done.stderr
    assert "mixes languages (Chinese (zh) 50%, Russian (ru) 50%" in done.stderr and "pass --language CODE" in done.stderr
    assert not (tmp_path / "o2" / "results.json").exists()


def test_english_indexes_keep_their_names_and_old_indexes_are_reused(tmp_path):
    """An English index built before languages (settings without one) is the same index now."""
    assert corpus_id_for("scifact", "ab" * 32, Bm25Settings()) == "scifact-abababababababab-bm25-k1-0.9-b-0.4"
    assert corpus_id_for("scifact", "ab" * 32, Bm25Settings(language="zh")).endswith("-zh-a1")
    backend = EmbeddedBackend(tmp_path)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "meta.json").write_text(json.dumps({
        "format": 1, "corpus_id": "old", "fingerprint": "f" * 64, "settings": {"k1": 0.9, "b": 0.4},
        "state": "empty", "document_count": 0, "generation": None}))
    assert backend.create("old", "f" * 64, Bm25Settings()).config["language"] == "en"
    with pytest.raises(Exception, match="exists with fingerprint"):
        backend.create("old", "f" * 64, Bm25Settings(language="zh"))


def test_every_air_bench_and_snowball_language_has_an_analysis():
    assert set(AIR_BENCH) <= set(LANGUAGES)
    stemmers = {row.stemmer for row in LANGUAGES.values() if row.stemmer}
    assert stemmers <= set(Stemmer.algorithms())
    assert set(Stemmer.algorithms()) - stemmers <= {"porter", "dutch_porter"}


@pytest.mark.parametrize(("language", "text", "words"), [
    ("hi", "किताबें पढ़ना", ["किताबें", "पढ़ना"]),           # vowel signs stay inside their words
    ("zh", "長江ＡＢＣ河流", ["長江", "abc", "河流"]),          # NFKC folds full-width Latin, Han in bigrams
    ("de", "STRASSE Straße", ["strasse", "strasse"]),         # case folding
    ("ja", "梅雨入り", ["梅雨", "雨入", "入り"]),
])
def test_words_per_language(language, text, words):
    assert analyzer_for(language).words(text) == words


@pytest.mark.parametrize(("language", "folder"), [("zh", "xquad-zh"), ("ar", "xquad-ar"), ("th", "xquad-th")])
def test_bm25_per_language_matches_an_independent_bm25(irforge, tmp_path, language, folder):
    """Chinese (CJK), Arabic (right to left) and Thai (segmented): irforge's nDCG@10 on the first
    queries is at least the independent reference's (less a rounding margin)."""
    done = irforge("eval", "--dataset", str(DATA / folder), "--retriever", "bm25", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["retriever"]["language"] == language
    reference = ndcg_at_10(DATA / folder, language, first=CHECKED_QUERIES)
    ours = sum(results["per_query"][q]["nDCG@10"] for q in reference) / len(reference)
    theirs = sum(reference.values()) / len(reference)
    assert theirs > 0.8 and ours >= theirs - 0.01, (ours, theirs)


def test_the_language_travels_to_a_remote_corpus_service_and_old_clients_mean_english():
    from irforge.corpus.protocol import settings_from_proto, settings_to_proto
    from irforge.v1 import corpus_pb2

    assert settings_from_proto(settings_to_proto(Bm25Settings(k1=1.2, language="zh")), True) == Bm25Settings(k1=1.2, language="zh")
    assert settings_from_proto(corpus_pb2.Bm25Settings(k1=0.9, b=0.4), True).language == "en"


def test_elasticsearch_indexes_each_language_with_its_built_in_analyzer_and_refuses_the_others():
    """No plugin needed: CJK through the built-in `cjk` analyzer (bigrams, as the embedded backend);
    a language with no built-in analyzer is refused before any request."""
    from irforge.corpus.errors import CorpusError
    from irforge.corpus.lexical.elasticsearch import ElasticsearchBackend, elasticsearch_config, index_body

    for language, analyzer in (("en", "english"), ("zh", "cjk"), ("ja", "cjk"), ("ar", "arabic"), ("th", "thai")):
        body = index_body(Bm25Settings(language=language), {})
        assert body["mappings"]["properties"]["text"]["analyzer"] == analyzer
    assert elasticsearch_config(Bm25Settings(language="zh"), "9")["language"] == "zh"
    backend = ElasticsearchBackend.__new__(ElasticsearchBackend)   # no server: the refusal comes first
    with pytest.raises(CorpusError, match=r"no built-in analyzer for Vietnamese \(vi\); use the embedded backend"):
        backend.create("c", "f" * 64, Bm25Settings(language="vi"))


def test_over_grpc_services_a_chinese_corpus_is_analysed_as_chinese(irforge, services_address, tmp_path):
    """The corpus service receives the language with the settings (Bm25Settings.language)."""
    data = _write_beir(tmp_path / "zh3", CHINESE, CHINESE_QUERIES, {"q1": "d1", "q2": "d2", "q3": "d3"})
    done = irforge("eval", "--dataset", str(data), "--retriever", "bm25", "--server", services_address,
                   "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["metrics"]["nDCG@10"] == 1.0 and results["retriever"]["language"] == "zh"
    assert results["mode"] != "in-process"
