"""Synthetic corpora with a realistic word distribution, for benchmarks/scale.py. Not a benchmark.

The word model, fitted on SciFact + NFCorpus (8,816 documents, 1.95 M words, lowercased words of
two or more letters, as irforge's BM25 tokenizer splits them):

- vocabulary: Heaps' law, V = 35.2 · T^0.497 distinct words for T words of text (≈ 52 k words
  for 10 k documents, ≈ 520 k for 1 M);
- word frequencies: Zipf-like, p(rank) ∝ rank^-0.85 up to rank 1,000, then ∝ rank^-1.4 (the two
  slopes of the real rank-frequency curve), truncated at V; the words at ranks 1..46,714 are the
  real words of those corpora in their frequency order (so stop words, stemming and the BM25
  tokenizer do what they do on real text), ranks beyond are made-up letter strings;
- topics: each document has one of 200 topics; a quarter of its words come from its topic's own
  2,000 content words (drawn from ranks 100–20,000, Zipf s = 1 within the topic), the rest from
  the global distribution, so that documents on a topic share words as real ones do (without
  this, BM25 rankings and vector neighbourhoods would be noise);
- document length: log-normal, log-mean 5.33, log-sd 0.37 (mean ≈ 220 words, as the real ones),
  clipped to 8..2,000; the first 10 words are the title.

Queries: each is made from one source document (chosen uniformly, seeded): 3–8 words, each drawn
from the source's own words of rank ≥ 50 (70%) or from its topic (30%). The source document is
the query's known relevant document.

Vectors (384-d, float32, unit length) stand in for embeddings and correlate with the text: a
document's (or query's) bag of words, each word weighted by -log p(word) (rare words count more),
hashed into 16,384 buckets (a seeded random bucket per word) and multiplied by a fixed seeded
Gaussian projection (16,384 × 384); a topic's words also carry that topic's own random direction
(as long as a bucket's), as words on one subject have related embeddings. Without it a vector is a
sum of unrelated random directions, a short query's most of all, nearly isotropic, and HNSW
(ef 128) finds the queries' top 100 poorly: recall@100 0.70 at 10 k documents, against 0.90 with
it (0.98 on real SciFact MiniLM embeddings, benchmarks/vector_search.py).

Everything is generated in batches and streamed to disk: documents to BEIR-style JSONL, vectors to
a raw float32 file (row i = document i); nothing holds the whole corpus. `stream` hands the batches
to the caller instead of a file (an 8.8 M corpus is ~13 GB of JSONL).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HEAPS_K, HEAPS_BETA = 35.2, 0.497
ZIPF_HEAD_SLOPE, ZIPF_TAIL_SLOPE, ZIPF_BEND = 0.85, 1.4, 1_000
LENGTH_LOG_MEAN, LENGTH_LOG_SD, LENGTH_RANGE = 5.33, 0.37, (8, 2_000)
TITLE_WORDS = 10
TOPICS, TOPIC_WORDS, TOPIC_SHARE, TOPIC_RANKS = 200, 2_000, 0.25, (100, 20_000)
QUERY_WORDS, QUERY_FROM_SOURCE, QUERY_MIN_RANK = (3, 8), 0.7, 50
BUCKETS, DIMENSION, TOPIC_DIRECTION = 16_384, 384, 1.0
BATCH = 5_000   # documents generated at a time
_WORD = re.compile(r"(?u)\b\w\w+\b")
_LETTERS = "bcdfghjklmnprstvz"
_VOWELS = "aeiou"


def heaps_vocabulary(documents: int, length_log_mean: float = LENGTH_LOG_MEAN) -> int:
    mean_length = np.exp(length_log_mean + LENGTH_LOG_SD ** 2 / 2)
    return int(HEAPS_K * (documents * mean_length) ** HEAPS_BETA)


def real_words(paths: list[Path]) -> list[str]:
    """The words of the given BEIR corpora, most frequent first (ties alphabetical: deterministic)."""
    counts: Counter[str] = Counter()
    for path in paths:
        if path.is_file():
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    document = json.loads(line)
                    counts.update(_WORD.findall(f"{document.get('title', '')} {document.get('text', '')}".lower()))
    return [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])) if word.isalpha()]


def made_up_word(number: int) -> str:
    """A pronounceable letter string, different for every number (consonant-vowel syllables)."""
    syllables = []
    number += len(_LETTERS) * len(_VOWELS)  # at least two syllables
    while number:
        number, syllable = divmod(number, len(_LETTERS) * len(_VOWELS))
        syllables.append(_LETTERS[syllable // len(_VOWELS)] + _VOWELS[syllable % len(_VOWELS)])
    return "q" + "".join(syllables)  # 'q' + consonant: no English word or stem looks like it


@dataclass
class WordModel:
    words: np.ndarray          # rank - 1 -> word (object array of str)
    cdf: np.ndarray            # cumulative global word probabilities
    topic_words: np.ndarray    # (TOPICS, TOPIC_WORDS) word indices
    topic_cdf: np.ndarray      # cumulative probabilities within a topic
    weight: np.ndarray         # -log p per word: the vector weight
    bucket: np.ndarray         # hashed bucket per word
    projection: np.ndarray     # (BUCKETS, DIMENSION) float32
    word_topic: np.ndarray     # the topic a word belongs to (the last drawn, if several), -1 for none
    topic_direction: np.ndarray  # (TOPICS, DIMENSION) float32, scaled by TOPIC_DIRECTION

    @classmethod
    def build(cls, documents: int, seed: int, vocabulary_from: list[Path],
              length_log_mean: float = LENGTH_LOG_MEAN) -> "WordModel":
        size = heaps_vocabulary(documents, length_log_mean)
        real = real_words(vocabulary_from)[:size]
        taken = set(real)
        made_up = (w for w in map(made_up_word, itertools.count()) if w not in taken)
        words = real + list(itertools.islice(made_up, size - len(real)))
        rank = np.arange(1, size + 1, dtype=np.float64)
        probability = np.where(rank <= ZIPF_BEND, rank ** -ZIPF_HEAD_SLOPE,
                               ZIPF_BEND ** (ZIPF_TAIL_SLOPE - ZIPF_HEAD_SLOPE) * rank ** -ZIPF_TAIL_SLOPE)
        probability /= probability.sum()
        rng = np.random.default_rng([seed, 1])
        low, high = TOPIC_RANKS[0], min(TOPIC_RANKS[1], size)
        topic_words = np.stack([rng.choice(np.arange(low, high), TOPIC_WORDS, replace=False) for _ in range(TOPICS)])
        topic_probability = 1.0 / np.arange(1, TOPIC_WORDS + 1)
        word_topic = np.full(size, -1, dtype=np.int64)
        word_topic[topic_words] = np.arange(TOPICS)[:, None]
        return cls(
            words=np.asarray(words, dtype=object), cdf=_cdf(probability), topic_words=topic_words,
            topic_cdf=_cdf(topic_probability), weight=(-np.log(probability)).astype(np.float32),
            bucket=rng.integers(0, BUCKETS, size), projection=rng.standard_normal((BUCKETS, DIMENSION), dtype=np.float32),
            word_topic=word_topic,
            topic_direction=TOPIC_DIRECTION * rng.standard_normal((TOPICS, DIMENSION), dtype=np.float32),
        )

    def vectors(self, token_ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Unit-length vectors of the texts token_ids[offsets[i]:offsets[i + 1]]."""
        rows = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        bags = sp.csr_matrix((self.weight[token_ids], (rows, self.bucket[token_ids])), shape=(len(offsets) - 1, BUCKETS))
        vectors = np.asarray(bags @ self.projection, dtype=np.float32)
        on_topic = self.word_topic[token_ids] >= 0
        topics = sp.csr_matrix((self.weight[token_ids][on_topic], (rows[on_topic], self.word_topic[token_ids][on_topic])),
                               shape=(len(offsets) - 1, TOPICS))
        vectors += np.asarray(topics @ self.topic_direction, dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors


def _cdf(probability: np.ndarray) -> np.ndarray:
    cdf = np.cumsum(probability)
    cdf /= cdf[-1]
    return cdf


@dataclass
class Corpus:
    """What generate() leaves behind besides the files."""

    queries: list[dict]      # {"_id", "text", "source"}: the source document's id
    query_vectors: np.ndarray
    words: int               # words of text generated
    distinct_words: int      # of them distinct
    vocabulary: int          # Heaps' V for this size


def generate(documents: int, queries: int, seed: int, corpus_path: Path, vectors_path: Path | None,
             vocabulary_from: list[Path], progress: Callable[[int], None] = lambda done: None) -> Corpus:
    batches = stream(documents, queries, seed, vectors_path, vocabulary_from, progress)
    with corpus_path.open("w", encoding="utf-8") as out:
        while True:
            try:
                batch = next(batches)
            except StopIteration as done:
                return done.value
            out.writelines(json.dumps(document) + "\n" for document in batch)


def stream(documents: int, queries: int, seed: int, vectors_path: Path | None, vocabulary_from: list[Path],
           progress: Callable[[int], None] = lambda done: None,
           length_log_mean: float = LENGTH_LOG_MEAN) -> Generator[list[dict], None, Corpus]:
    """The corpus as batches of BEIR documents ({"_id", "title", "text"}), never on disk whole;
    returns (StopIteration.value) the queries and counts once the last batch is taken.
    `length_log_mean` other than the default: shorter or longer documents (MS MARCO's passages
    average 56 words: log(56) - LENGTH_LOG_SD² / 2)."""
    model = WordModel.build(documents, seed, vocabulary_from, length_log_mean)
    rng = np.random.default_rng([seed, 2])
    query_rng = np.random.default_rng([seed, 3])  # separate: the corpus does not depend on --queries
    sources = set(query_rng.choice(documents, min(queries, documents), replace=False).tolist())
    seen = np.zeros(len(model.words), dtype=bool)
    found_queries: list[dict] = []
    query_tokens: list[np.ndarray] = []
    total_words = 0
    vectors_file = vectors_path.open("wb") if vectors_path else None
    try:
        for start in range(0, documents, BATCH):
            count = min(BATCH, documents - start)
            lengths = np.clip(np.rint(rng.lognormal(length_log_mean, LENGTH_LOG_SD, count)), *LENGTH_RANGE).astype(np.int64)
            topics = rng.integers(0, TOPICS, count)
            offsets = np.zeros(count + 1, dtype=np.int64)
            offsets[1:] = np.cumsum(lengths)
            tokens = _draw(model, rng, np.repeat(topics, lengths))
            seen[tokens] = True
            total_words += len(tokens)
            texts = model.words[tokens]
            batch = []
            for i in range(count):
                doc_words = texts[offsets[i]:offsets[i + 1]].tolist()
                doc_id = document_id(start + i)
                batch.append({"_id": doc_id, "title": " ".join(doc_words[:TITLE_WORDS]),
                              "text": " ".join(doc_words[TITLE_WORDS:])})
                if start + i in sources:
                    ids = _query(model, query_rng, tokens[offsets[i]:offsets[i + 1]], topics[i])
                    query_tokens.append(ids)
                    found_queries.append({"_id": f"q{len(found_queries):05d}", "text": " ".join(model.words[ids]),
                                          "source": doc_id})
            if vectors_file:
                vectors_file.write(model.vectors(tokens, offsets).tobytes())
            yield batch
            progress(start + count)
    finally:
        if vectors_file:
            vectors_file.close()
    query_offsets = np.zeros(len(query_tokens) + 1, dtype=np.int64)
    query_offsets[1:] = np.cumsum([len(t) for t in query_tokens])
    query_vectors = model.vectors(np.concatenate(query_tokens), query_offsets) if query_tokens else np.zeros((0, DIMENSION), np.float32)
    return Corpus(found_queries, query_vectors, total_words, int(seen.sum()), len(model.words))


def document_id(position: int) -> str:
    return f"d{position:07d}"


def _draw(model: WordModel, rng: np.random.Generator, topic_of_each: np.ndarray) -> np.ndarray:
    """One word index per position: the topic's words with TOPIC_SHARE, else the global distribution."""
    tokens = np.searchsorted(model.cdf, rng.random(len(topic_of_each)), side="right")
    from_topic = np.flatnonzero(rng.random(len(topic_of_each)) < TOPIC_SHARE)
    within = np.searchsorted(model.topic_cdf, rng.random(len(from_topic)), side="right")
    tokens[from_topic] = model.topic_words[topic_of_each[from_topic], within]
    return np.minimum(tokens, len(model.words) - 1)


def _query(model: WordModel, rng: np.random.Generator, source_tokens: np.ndarray, topic: int) -> np.ndarray:
    content = source_tokens[source_tokens >= QUERY_MIN_RANK]
    length = int(rng.integers(QUERY_WORDS[0], QUERY_WORDS[1] + 1))
    from_source = rng.random(length) < QUERY_FROM_SOURCE
    if not len(content):
        from_source[:] = False
    picked = np.where(
        from_source,
        content[rng.integers(0, max(len(content), 1), length)] if len(content) else 0,
        model.topic_words[topic, np.searchsorted(model.topic_cdf, rng.random(length), side="right")],
    )
    return picked.astype(np.int64)
