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

import re
import unicodedata

_LAST_ACCENTED_SCRIPT = 0x052F   # Latin, Greek and Cyrillic blocks end here
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


def _without_accents(text: str) -> str:
    out = []
    for char in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(char) and out and ord(out[-1]) <= _LAST_ACCENTED_SCRIPT:
            continue
        out.append(char)
    return unicodedata.normalize("NFC", "".join(out))


def folded(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "".join(char for char in text if not is_invisible(char))
    text = _without_accents(text.casefold())
    text = _SPACES.sub(" ", text)
    return _LINE_BREAKS.sub("\n", text).strip()


def skeleton(folded_text: str) -> str:
    return folded_text.translate(_LOOKALIKES)
