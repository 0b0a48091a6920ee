"""Text as the screening rules read it: trivial obfuscation undone before any rule runs.

    folded(text)     NFKC, invisible characters removed, casefolded, Latin/Greek/Cyrillic accents
                     dropped, whitespace collapsed (line breaks kept: a rule may anchor on them)
    skeleton(text)   folded(text) with Cyrillic and Greek letters that look Latin mapped to Latin

Why each step:
- NFKC: full-width and styled letters ("Ｉｇｎｏｒｅ", "𝐢𝐠𝐧𝐨𝐫𝐞") become plain ones.
- invisible characters (Unicode category Cf: zero-width space/joiner, soft hyphen, bidi marks, tag
  characters; plus variation selectors): "ig\\u200bnore" must read "ignore".
- casefold: "IGNORE" and "ignore" are one phrase (and German "ß" matches "ss").
- accents dropped on Latin, Greek and Cyrillic letters only: "instruções" = "instrucoes" so one
  pattern covers both spellings; Japanese voiced kana keep their marks (dropping them changes words).
- skeleton: "ignоre" with a Cyrillic "о" reads "ignore". Run on a copy, never on the folded text,
  because it would garble real Russian or Greek text the multilingual rules read.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata

_SPACES = re.compile(r"[^\S\n]+")
_LINE_BREAKS = re.compile(r" ?\n[\s]*")
# Cyrillic and Greek letters whose lower case looks like a Latin one (after casefolding).
_LOOKALIKES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ɡ": "g", "ո": "n", "ս": "u",
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
})


def is_invisible(char: str) -> bool:
    """Zero-width, bidi, tag and other format characters, variation selectors, fillers."""
    code = ord(char)
    return (unicodedata.category(char) == "Cf" or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF
            or code in (0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0))   # combining grapheme joiner, Hangul fillers


# Combining marks after a Latin, Greek or Cyrillic letter (or after another such mark).
_ACCENTS = re.compile("(?<=[\x00-\u052f])[\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")


@functools.cache
def _invisible_table() -> dict[int, None]:
    """str.translate's table deleting every invisible character (built once, ~0.1 s)."""
    # The planes that hold format characters and selectors: the BMP, plane 1, plane 14.
    planes = itertools.chain(range(0x20000), range(0xE0000, 0xE1000))
    return {code: None for code in planes if is_invisible(chr(code))}


def without_invisible(text: str) -> str:
    return text if text.isascii() else text.translate(_invisible_table())


def _without_accents(text: str) -> str:
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", _ACCENTS.sub("", unicodedata.normalize("NFKD", text)))


def folded(text: str) -> str:
    text = without_invisible(unicodedata.normalize("NFKC", text))
    text = _without_accents(text.casefold())
    text = _SPACES.sub(" ", text)
    return _LINE_BREAKS.sub("\n", text).strip()


_MIXED = re.compile("[a-z][\u0370-\u03ff\u0400-\u04ff\u0500-\u052f\u0261\u0578\u057d]"
                    "|[\u0370-\u03ff\u0400-\u04ff\u0500-\u052f\u0261\u0578\u057d][a-z]")


def mixes_scripts(folded_text: str) -> bool:
    """A Latin letter next to a Greek, Cyrillic (or other look-alike) one: a word written to fool."""
    return _MIXED.search(folded_text) is not None


def skeleton(folded_text: str) -> str:
    return folded_text.translate(_LOOKALIKES)
