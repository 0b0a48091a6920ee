"""Which languages irforge analyses, and how: one row per ISO 639-1 code.

Each row names the Snowball stemmer PyStemmer has for the language (None: none exists) and how
its words are found: "words" (letters, marks and digits between separators), "bigrams" (Chinese,
Japanese, Korean and other unspaced scripts: overlapping character pairs, as Lucene's
CJKAnalyzer and Elasticsearch's `cjk` analyzer do) or "thai" (PyThaiNLP's dictionary segmenter).
Measured on XQuAD/JSQuAD (benchmarks/multilingual_bm25.py), nDCG@10: Chinese bigrams 0.9669
vs jieba 0.9628 (0.9647 in its search mode); Japanese bigrams 0.9419 vs SudachiPy 0.9427; Thai
bigrams 0.8855 vs PyThaiNLP 0.9653. So bigrams for CJK (as good, no dictionary, and the same
analysis Elasticsearch's built-in `cjk` analyzer does) and the segmenter for Thai.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    code: str          # ISO 639-1
    name: str
    stemmer: str | None = None   # a PyStemmer (Snowball) algorithm
    words: str = "words"         # "words", "bigrams" or "thai"
    stopwords: bool = True       # False: the language's list does more harm than good (measured)


_ROWS = [
    # AIR-Bench's 13 languages first, then every other language a Snowball stemmer covers, then
    # other scripts irforge segments itself.
    Language("en", "English", "english"),
    Language("zh", "Chinese", words="bigrams"),
    Language("es", "Spanish", "spanish"),
    Language("fr", "French", "french"),
    Language("de", "German", "german"),
    Language("ru", "Russian", "russian"),
    Language("ja", "Japanese", words="bigrams"),
    Language("ko", "Korean", words="bigrams"),
    Language("ar", "Arabic", "arabic"),
    Language("fa", "Persian", "persian"),
    Language("id", "Indonesian", "indonesian"),
    Language("hi", "Hindi", "hindi"),
    Language("bn", "Bengali"),
    Language("hy", "Armenian", "armenian"),
    Language("eu", "Basque", "basque"),
    Language("ca", "Catalan", "catalan"),
    Language("cs", "Czech", "czech"),
    Language("da", "Danish", "danish"),
    Language("nl", "Dutch", "dutch"),
    Language("eo", "Esperanto", "esperanto"),
    Language("et", "Estonian", "estonian"),
    Language("fi", "Finnish", "finnish"),
    Language("el", "Greek", "greek"),
    Language("hu", "Hungarian", "hungarian"),
    Language("ga", "Irish", "irish"),
    Language("it", "Italian", "italian"),
    Language("lt", "Lithuanian", "lithuanian"),
    Language("ne", "Nepali", "nepali"),
    Language("no", "Norwegian", "norwegian"),
    Language("pl", "Polish", "polish"),
    Language("pt", "Portuguese", "portuguese"),
    Language("ro", "Romanian", "romanian"),
    Language("sr", "Serbian", "serbian"),
    Language("st", "Sesotho", "sesotho"),
    Language("sv", "Swedish", "swedish"),
    Language("ta", "Tamil", "tamil"),
    Language("tr", "Turkish", "turkish"),
    Language("yi", "Yiddish", "yiddish"),
    Language("th", "Thai", words="thai"),
    Language("lo", "Lao", words="bigrams"),
    Language("km", "Khmer", words="bigrams"),
    Language("my", "Burmese", words="bigrams"),
    # Vietnamese is written in syllables, and python-stop-words' list holds 1,943 of them: with it
    # XQuAD-vi's nDCG@10 fell from 0.9556 to 0.9483, and some questions lost every term.
    Language("vi", "Vietnamese", stopwords=False),
    Language("uk", "Ukrainian"),
    Language("bg", "Bulgarian"),
    Language("he", "Hebrew"),
    Language("ur", "Urdu"),
    Language("mr", "Marathi"),
    Language("gu", "Gujarati"),
    Language("te", "Telugu"),
    Language("sw", "Swahili"),
    Language("ms", "Malay"),
    Language("tl", "Tagalog"),
    Language("sk", "Slovak"),
    Language("sl", "Slovenian"),
    Language("hr", "Croatian"),
    Language("lv", "Latvian"),
    Language("af", "Afrikaans"),
]
LANGUAGES: dict[str, Language] = {row.code: row for row in _ROWS}
DEFAULT_LANGUAGE = "en"


class UnknownLanguage(ValueError):
    """A language code irforge has no analysis for."""


def language(code: str) -> Language:
    """The row for `code` (ISO 639-1, any case); UnknownLanguage names the codes there are."""
    row = LANGUAGES.get(code.strip().lower())
    if row is None:
        raise UnknownLanguage(f"unknown language {code!r}: irforge analyses {', '.join(sorted(LANGUAGES))} "
                              "(ISO 639-1 codes)")
    return row
