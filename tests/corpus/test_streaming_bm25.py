"""The embedded BM25 index built from segments on disk: the same index as bm25s's own in-memory
index(), in bounded memory, and a build that stops half-way leaves the committed one in service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import bm25s
import numpy as np
import pytest

from irforge.corpus.lexical.embedded import EMPTY_TOKEN, EmbeddedBackend, _new_tokenizer
from irforge.corpus.settings import Bm25Settings
from irforge.data.beir import iter_corpus, iter_queries
from irforge.data.types import Document, Query

SCIFACT = Path(os.environ.get("IRFORGE_SHARED_DATA", "/work/shared/data")) / "beir" / "scifact"
TINY_BUFFER = 1 << 20  # ~32 k postings a segment: SciFact (~600 k) makes about twenty, merged in ~40 ranges

pytestmark = pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").is_file(), reason=f"no SciFact at {SCIFACT}")


@pytest.fixture(scope="module")
def scifact():
    return list(iter_corpus(SCIFACT / "corpus.jsonl")), list(iter_queries(SCIFACT / "queries.jsonl"))


def plain_bm25s(documents: list[Document], settings: Bm25Settings):
    """bm25s's own in-memory index() over the same analysis: the reference."""
    tokenizer = _new_tokenizer(settings)
    ids = tokenizer.tokenize([d.full_text for d in documents], update_vocab=True, return_as="ids", show_progress=False)
    ids = [[t for t in doc if t != EMPTY_TOKEN] for doc in ids]
    retriever = bm25s.BM25(k1=settings.k1, b=settings.b, method="lucene")
    retriever.index((ids, {i: i for i in range(len(tokenizer.get_vocab_dict()))}), show_progress=False)
    return retriever, tokenizer


def top_k_by_tie_rule(retriever, tokenizer, doc_ids: list[str], query: str, k: int) -> list[tuple[str, float]]:
    tokens = [t for t in tokenizer.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)[0]
              if t != EMPTY_TOKEN]
    if not tokens:
        return []
    scores = retriever.get_scores(tokens)
    hits = [(doc_ids[i], float(scores[i])) for i in np.flatnonzero(scores > 0)]
    return sorted(hits, key=lambda hit: (hit[1], hit[0]), reverse=True)[:k]  # score desc, then doc id desc


def generation(root: Path) -> Path:
    meta = json.loads((root / "c" / "meta.json").read_text())
    return root / "c" / meta["generation"]


def test_scifact_from_many_segments_is_bm25s_index_to_the_last_bit(tmp_path, scifact):
    documents, queries = scifact
    settings = Bm25Settings()
    backend = EmbeddedBackend(tmp_path, buffer_bytes=TINY_BUFFER)
    backend.create("c", "fp", settings)
    batches = [documents[i:i + 500] for i in range(0, len(documents), 500)]
    segments_seen = []
    for _ in backend.ingest("c", iter(batches)):
        segments = tmp_path / "c" / "g000001" / "segments"
        if segments.is_dir():
            segments_seen.append(len(list(segments.iterdir())))
    assert max(segments_seen) >= 10  # the tiny buffer did force many segments and a real merge

    reference, tokenizer = plain_bm25s(documents, settings)
    index = generation(tmp_path) / "index"
    for name in ("data", "indices", "indptr"):
        ours = np.load(index / f"{name}.csc.index.npy")
        assert np.array_equal(ours, reference.scores[name]), name
    assert reference.scores["data"].dtype == np.load(index / "data.csc.index.npy").dtype == np.float32

    ids = [d.doc_id for d in documents]
    for query in queries[:300]:
        ranking = backend.search("c", [Query(query.query_id, query.text)], 100)[0]
        assert list(zip(ranking.doc_ids.tolist(), ranking.scores.tolist())) == \
            top_k_by_tie_rule(reference, tokenizer, ids, query.text, 100), query.query_id


def test_an_incremental_ingest_merges_with_the_committed_generation(tmp_path, scifact):
    """Two ingests, the second re-sending 500 documents of the first (200 with other text): the
    index equals bm25s's over the corpus as it stands, the last text of each id winning."""
    documents, queries = scifact
    documents = documents[:2000]
    settings = Bm25Settings()
    backend = EmbeddedBackend(tmp_path, buffer_bytes=TINY_BUFFER)
    backend.create("c", "fp", settings)
    list(backend.ingest("c", iter([documents[:1500]])))
    changed = [Document(d.doc_id, d.title, documents[-1 - i].text) for i, d in enumerate(documents[1000:1200])]
    second = changed + documents[1200:]
    list(backend.ingest("c", iter([second[:400], second[400:]])))
    assert backend.info("c").document_count == 2000

    final = documents[:1000] + second  # ids 1000..1499 replaced: their place is the second ingest's
    reference, tokenizer = plain_bm25s(final, settings)
    ids = [d.doc_id for d in final]
    for query in queries[:150]:
        ranking = backend.search("c", [Query(query.query_id, query.text)], 50)[0]
        assert list(zip(ranking.doc_ids.tolist(), ranking.scores.tolist())) == \
            top_k_by_tie_rule(reference, tokenizer, ids, query.text, 50), query.query_id


PEAK = textwrap.dedent("""
    import sys
    from pathlib import Path
    import numpy as np

    def status(field):
        return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field + ":"))

    how, documents, folder = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    rng = np.random.default_rng(7)
    def corpus():  # 60 tokens a document, Zipf-like over 60 k terms (id 0 is the empty token)
        for start in range(0, documents, 2000):
            yield [f"d{start + i:07d}" for i in range(2000)], np.minimum(rng.zipf(1.3, (2000, 60)), 60_000).tolist()
    import bm25s  # both: the embedded backend imports it too (scipy and all: tens of MiB)
    from irforge.corpus.lexical.segments import SegmentWriter, build_index
    open("/proc/self/clear_refs", "w").write("5")  # VmHWM := VmRSS: the peak from here on
    before = status("VmRSS")
    if how == "segments":
        writer = SegmentWriter(folder / "segments", buffer_bytes=4 << 20)
        for ids, tokens in corpus():
            writer.add(ids, tokens)
        writer.flush()
        build_index(writer.sources, folder, 60_001, 0.9, 0.4, buffer_bytes=4 << 20)
    else:  # bm25s's own index(): the corpus's token lists in memory, as it takes them
        token_lists = [doc for _, tokens in corpus() for doc in tokens]
        bm25s.BM25(k1=0.9, b=0.4, method="lucene").index((token_lists, {i: i for i in range(60_001)}), show_progress=False)
    print((status("VmHWM") - before) / 1024)
""")


def extra_peak_mib(how: str, documents: int, folder: Path) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", PEAK, how, str(documents), str(folder)], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.split()[-1])


def test_build_memory_stays_bounded_as_the_corpus_grows(tmp_path):
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("needs Linux's /proc/self/clear_refs to reset the peak RSS")
    small = extra_peak_mib("segments", 5_000, tmp_path / "small")
    large = extra_peak_mib("segments", 40_000, tmp_path / "large")
    in_memory = extra_peak_mib("bm25s", 40_000, tmp_path / "bm25s")
    # 8x the documents: the peak grows only by what is kept per document (~50 bytes: length,
    # position, rank, id: 2 MiB here), not by the postings, which stay within a few times the 4 MiB buffer
    assert large < small + 10, (small, large)
    assert large < in_memory / 3, (large, in_memory)
    entries = np.load(tmp_path / "large" / "index" / "indices.csc.index.npy", mmap_mode="r").shape[0]
    assert entries > 40_000 * 20  # a real index was built: many distinct terms per document


def test_a_build_stopped_half_way_leaves_the_committed_generation_in_service(tmp_path, scifact):
    documents, _ = scifact
    backend = EmbeddedBackend(tmp_path, buffer_bytes=TINY_BUFFER)
    backend.create("c", "fp", Bm25Settings())
    list(backend.ingest("c", iter([documents[:300]])))
    before = backend.search("c", [Query("q", "vitamin D deficiency")], 10)[0].pairs()

    def interrupted():
        for start in range(300, 3000, 300):
            yield documents[start:start + 300]
        assert (tmp_path / "c" / "g000002" / "segments").is_dir()  # segments were on disk
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        list(backend.ingest("c", interrupted()))
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["g000001", "meta.json", "writer.lock"]
    reopened = EmbeddedBackend(tmp_path)
    assert reopened.info("c").document_count == 300
    assert reopened.search("c", [Query("q", "vitamin D deficiency")], 10)[0].pairs() == before != []


def test_a_process_killed_mid_build_leaves_the_committed_generation_in_service(tmp_path, scifact):
    """SIGKILL: nothing cleans up. The half-built generation is ignored, then replaced."""
    documents, _ = scifact
    backend = EmbeddedBackend(tmp_path)
    backend.create("c", "fp", Bm25Settings())
    list(backend.ingest("c", iter([documents[:200]])))
    before = backend.search("c", [Query("q", "cancer cells")], 10)[0].pairs()
    script = textwrap.dedent(f"""
        import os, signal
        from irforge.corpus.lexical.embedded import EmbeddedBackend
        from irforge.data.beir import iter_corpus
        documents = list(iter_corpus({str(SCIFACT / "corpus.jsonl")!r}))[200:2200]
        def batches():
            for start in range(0, 2000, 250):
                yield documents[start:start + 250]
            os.kill(os.getpid(), signal.SIGKILL)
        list(EmbeddedBackend({str(tmp_path)!r}, buffer_bytes=1 << 20).ingest("c", batches()))
    """)
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == -9
    assert (tmp_path / "c" / "g000002" / "segments").is_dir()  # left behind, half-built
    assert EmbeddedBackend(tmp_path).search("c", [Query("q", "cancer cells")], 10)[0].pairs() == before
    list(backend.ingest("c", iter([documents[200:400]])))
    assert backend.info("c").document_count == 400
    assert not (generation(tmp_path) / "segments").exists()
