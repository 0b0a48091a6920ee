"""Which Elasticsearch analyzer indexes a corpus in each language: the built-in language analyzers,
so an index needs no plugin on the server.

Chinese, Japanese and Korean use the built-in `cjk` analyzer: character bigrams, the analysis the
embedded backend does too. Elasticsearch's word segmenters for them are plugins (smartcn for
Chinese, kuromoji for Japanese, nori for Korean, analysis-icu for ICU word breaking); a server
without the plugin refuses an index that names one ("failed to find analyzer"), so irforge names
none. A language with no built-in analyzer (Vietnamese, Ukrainian, Hebrew...) is refused with a
message that points to the embedded backend, rather than indexed with another language's rules.
"""

from __future__ import annotations

BUILT_IN = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "bn": "bengali", "bg": "bulgarian", "ca": "catalan",
    "zh": "cjk", "ja": "cjk", "ko": "cjk", "cs": "czech", "da": "danish", "nl": "dutch", "en": "english",
    "et": "estonian", "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lv": "latvian", "lt": "lithuanian",
    "no": "norwegian", "fa": "persian", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "es": "spanish", "sv": "swedish", "tr": "turkish", "th": "thai",
}
ENGLISH_DESCRIPTION = ("english (Elasticsearch built-in: standard tokenizer, possessive, lowercase, "
                       "English stopwords, Porter stemmer)")


def analyzer_name(language: str) -> str | None:
    """The built-in analyzer for an ISO 639-1 code, or None when Elasticsearch has none."""
    return BUILT_IN.get(language)


def describe(language: str) -> str:
    name = BUILT_IN[language]
    if language == "en":
        return ENGLISH_DESCRIPTION
    if name == "cjk":
        return "cjk (Elasticsearch built-in: standard tokenizer, CJK width folding, lowercase, CJK bigrams, English stopwords)"
    return f"{name} (Elasticsearch built-in language analyzer: its stopwords and stemmer)"
