"""Cost curves: how irforge's embedded BM25, Qdrant Edge and the evaluator grow with the corpus.

For each corpus size (default 10 k, 100 k, 1 M documents) the script generates a synthetic corpus
with a realistic word distribution (benchmarks/_synthetic.py: Heaps' law vocabulary, Zipf-like
word frequencies, topics, log-normal lengths around 220 words; seeded, streamed to a JSONL file in
--work-dir, never held whole) plus a few hundred short queries and 384-d random-projection vectors
of the same texts, then measures, each part in its own subprocess so its peak memory is its own:

  bm25-ingest   EmbeddedBackend.create + ingest(corpus streamed in batches): docs/s, the time of
                the final commit (merge of the segments into the index), peak RSS above the
                process's RSS before the ingest, index size on disk;
  bm25-search   EmbeddedBackend.search(queries, k = 1000) after a warm-up query that loads the
                index (memory-mapped): queries/s (best of --rounds), load time, RSS with the index
                loaded;
  bm25s-alone   plain bm25s on the same corpus: bm25s.tokenize + BM25.index() in memory (peak RSS),
                then retrieve(k = 1000, n_threads = 1), bm25s's own per-query scoring and top k
                without retrieve's thread pool, and irforge's search of its index, interleaved
                round by round in one process (queries/s of each, best of --rounds);
  edge-build    EdgeVectorBackend.upsert (vectors streamed from disk in batches of 1,024) and
                commit (Qdrant Edge merges segments and builds the HNSW graph): seconds, peak RSS;
  edge-search   exact and HNSW search, k = 100: queries/s, recall@100 of HNSW against exact;

and, in this process, irforge's Evaluator (default measures) on the three runs. Qrels: each query's
source document (the one it was made from) is relevant, grade 2; the next five documents of the
BM25 run are judged too, each grade 1 or 0 by a seeded coin (p = 0.5), so that the qrels carry
graded and non-relevant judgements the way pooled ones do (they favour BM25: pooling bias).

Then it prints every figure's growth factor per 10× of corpus and the exponent b of cost ∝ N^b
(time per document or per query, memory): b > 1.1 is flagged as super-linear.

Corpora above --stream-above documents are never written: the bm25-ingest worker generates them
as it ingests them (its peak RSS includes the generator's word model), BM25 only. The 8.8 M run
(MS MARCO's size, and its passages' mean length of 56 words):
    nice -n 10 .venv/bin/python benchmarks/scale.py --sizes 1000000 8800000 --stream-above 0 \
        --mean-words 56 --skip-vectors --results scale_bm25_8m --work-dir /tmp/scale

Run: .venv/bin/python benchmarks/scale.py [--sizes 10000 100000 1000000] [--work-dir DIR] [--skip-vectors]
Writes benchmarks/results/scale.json (or --results NAME.json).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import numpy as np

import _synthetic
from _common import RESULTS_DIR, rss_mib, table, write_results

SHARED = Path(os.environ.get("IRFORGE_SHARED", "/work/shared")) / "data" / "beir"
VOCABULARY_FROM = [SHARED / "scifact" / "corpus.jsonl", SHARED / "nfcorpus" / "corpus.jsonl"]
BM25_K, VECTOR_K = 1_000, 100
JUDGED_BELOW_SOURCE, JUDGED_RELEVANT = 5, 0.5
SUPERLINEAR = 1.1       # cost ∝ N^b with b above this is flagged
CORPUS_ID = "scale"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def dir_mib(path: Path) -> float:
    """Space allocated (du), not apparent size: Edge preallocates sparse files."""
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file()) / 2**20


def hits_as_arrays(hits) -> tuple[list[str], list[float]]:
    """A backend's answer for one query (a Ranking, or a list of Hit) as doc ids and scores."""
    if hasattr(hits, "doc_ids"):
        return list(hits.doc_ids), [float(s) for s in hits.scores]
    return [h.doc_id for h in hits], [float(h.score) for h in hits]


def write_run(path: Path, query_ids: list[str], answers) -> None:
    run = {}
    for query_id, hits in zip(query_ids, answers, strict=True):
        run[query_id] = hits_as_arrays(hits)
    path.write_text(json.dumps(run))


# -- workers: one subprocess each, so that every peak RSS is the part's own ---------------------

def streamed_batches(args, folder: Path, batch_size: int, generating: list[float]):
    """Documents of a corpus too large to keep as JSONL (--stream-above): generated as they are
    ingested; the queries are written when the last batch is taken. `generating` gets the seconds
    spent in the generator, so that the ingest's own time can be told apart."""
    from irforge.data.types import Document

    log_mean = math.log(args.mean_words) - _synthetic.LENGTH_LOG_SD ** 2 / 2 if args.mean_words else _synthetic.LENGTH_LOG_MEAN
    batches = _synthetic.stream(args.documents, args.queries, args.seed, None, VOCABULARY_FROM, length_log_mean=log_mean)
    pending: list[Document] = []
    while True:
        start = time.perf_counter()
        try:
            batch = next(batches)
        except StopIteration as done:
            generating[0] += time.perf_counter() - start
            (folder / "queries.json").write_text(json.dumps(done.value.queries))
            break
        generating[0] += time.perf_counter() - start
        pending.extend(Document(d["_id"], d["title"], d["text"]) for d in batch)
        while len(pending) >= batch_size:
            yield pending[:batch_size]
            pending = pending[batch_size:]
    if pending:
        yield pending


def worker_bm25_ingest(args, folder: Path) -> dict:
    from irforge.corpus.lexical.embedded import EmbeddedBackend
    from irforge.corpus.settings import Bm25Settings
    from irforge.data.beir import iter_corpus

    backend = EmbeddedBackend(folder / "bm25")
    backend.create(CORPUS_ID, "synthetic", Bm25Settings())
    generating = [0.0]
    if args.documents:
        batches = streamed_batches(args, folder, args.batch_size, generating)
    else:
        documents = iter_corpus(folder / "corpus.jsonl")
        batches = iter(lambda: list(islice(documents, args.batch_size)), [])
    before = rss_mib()
    start = time.perf_counter()
    last_batch = start
    indexed, staged = 0, before
    for progress in backend.ingest(CORPUS_ID, batches):
        if progress.committed:
            break
        last_batch = time.perf_counter()
        indexed, staged = progress.indexed, rss_mib()
        if args.documents and indexed % 500_000 < args.batch_size:
            log(f"  indexed {indexed:,}, RSS {staged:,.0f} MiB, peak {peak_rss_mib():,.0f} MiB")
    end = time.perf_counter()
    peak = peak_rss_mib()
    # What the index holds, to explain the figures per document: tokens indexed, (document, term) entries
    generation = json.loads((folder / "bm25" / CORPUS_ID / "meta.json").read_text())["generation"]
    stored = folder / "bm25" / CORPUS_ID / generation
    indexed_tokens = int(np.load(stored / "lengths.npy", mmap_mode="r").sum())
    index_entries = int(np.load(stored / "index" / "data.csc.index.npy", mmap_mode="r").shape[0])
    return {"documents": indexed, "seconds": end - start, "docs_per_s": indexed / (end - start),
            "generate_s": generating[0], "tokenize_s": last_batch - start - generating[0],
            "commit_s": end - last_batch,
            "rss_before_mib": before, "rss_staged_mib": staged, "peak_rss_mib": peak,
            "extra_peak_mib": peak - before, "disk_mib": dir_mib(folder / "bm25"),
            "indexed_tokens": indexed_tokens, "index_entries": index_entries,
            "vocabulary": len(json.loads((stored / "tokenizer" / "vocab.tokenizer.json").read_text())["word_to_id"])}


def worker_bm25s_alone(args, folder: Path) -> dict:
    """Plain bm25s on the same corpus, as its README uses it: bm25s.tokenize (English stop words,
    the same Snowball stemmer) + BM25.index in memory, then retrieve(k = 1000, n_threads = 1) of
    the queries tokenized by bm25s.tokenize, as irforge's search tokenizes its own."""
    import bm25s
    import Stemmer

    from irforge.corpus.settings import Bm25Settings
    from irforge.data.beir import iter_corpus

    settings = Bm25Settings()
    stemmer = Stemmer.Stemmer("english")
    before = rss_mib()
    start = time.perf_counter()
    texts = (document.full_text for document in iter_corpus(folder / "corpus.jsonl"))  # not a list: only bm25s holds the corpus
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(k1=settings.k1, b=settings.b, method="lucene")
    retriever.index(tokens, show_progress=False)
    seconds = time.perf_counter() - start
    peak = peak_rss_mib()
    queries = [q["text"] for q in json.loads((folder / "queries.json").read_text())]

    def search():
        query_tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
        return retriever.retrieve(query_tokens, k=BM25_K, n_threads=1, show_progress=False)

    # irforge's search of the index bm25-ingest left, interleaved with bm25s's in this process, so
    # that a burst of other work on a shared machine slows both alike (the best round of each)
    from irforge.corpus.lexical.embedded import EmbeddedBackend
    from irforge.data.types import Query

    backend = EmbeddedBackend(folder / "bm25")
    irforge_queries = [Query(f"q{i}", text) for i, text in enumerate(queries)]
    def search_per_query():
        """bm25s's own scoring and top k (numpy), query by query, without retrieve()'s thread pool:
        on a loaded machine its hand-offs between threads, not the scoring, set retrieve()'s pace."""
        query_tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
        for tokens in bm25s.tokenization.convert_tokenized_to_string_list(query_tokens):
            retriever._get_top_k_results(tokens, k=BM25_K, backend="numpy")

    search()  # warm-ups: bm25s's, and irforge's load of its index
    search_per_query()
    backend.search(CORPUS_ID, irforge_queries, BM25_K)
    best = {"retrieve": math.inf, "per_query": math.inf, "irforge": math.inf}
    for _ in range(args.rounds):
        for name, run in (("retrieve", search), ("per_query", search_per_query),
                          ("irforge", lambda: backend.search(CORPUS_ID, irforge_queries, BM25_K))):
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return {"index_s": seconds, "docs_per_s": retriever.scores["num_docs"] / seconds, "rss_before_mib": before,
            "peak_rss_mib": peak, "extra_peak_mib": peak - before, "search_s": best["retrieve"],
            "qps": len(queries) / best["retrieve"], "per_query_qps": len(queries) / best["per_query"],
            "irforge_interleaved_qps": len(queries) / best["irforge"]}


def worker_bm25_search(args, folder: Path) -> dict:
    from irforge.corpus.lexical.embedded import EmbeddedBackend
    from irforge.data.types import Query

    queries = [Query(q["_id"], q["text"]) for q in json.loads((folder / "queries.json").read_text())]
    backend = EmbeddedBackend(folder / "bm25")
    before = rss_mib()
    start = time.perf_counter()
    backend.search(CORPUS_ID, queries[:1], BM25_K)  # loads the index
    load_s = time.perf_counter() - start
    loaded = rss_mib()
    best, answers = math.inf, None
    for _ in range(args.rounds):
        answers = None
        start = time.perf_counter()
        answers = backend.search(CORPUS_ID, queries, BM25_K)
        best = min(best, time.perf_counter() - start)
    write_run(folder / "run-bm25.json", [q.query_id for q in queries], answers)
    return {"load_s": load_s, "index_rss_mib": loaded - before, "seconds": best, "qps": len(queries) / best,
            "mean_hits": float(np.mean([len(hits_as_arrays(a)[0]) for a in answers])), "peak_rss_mib": peak_rss_mib()}


def worker_edge_build(args, folder: Path) -> dict:
    from irforge.corpus.vectors.edge import UPSERT_BATCH, EdgeVectorBackend

    backend = EdgeVectorBackend(folder / "edge")
    backend.create(CORPUS_ID, _synthetic.DIMENSION, "cosine", "synthetic")
    row_bytes = _synthetic.DIMENSION * 4
    before = rss_mib()
    start = time.perf_counter()
    position = 0
    with (folder / "vectors.f32").open("rb") as vectors:
        while chunk := vectors.read(UPSERT_BATCH * row_bytes):
            rows = np.frombuffer(chunk, dtype=np.float32).reshape(-1, _synthetic.DIMENSION)
            backend.upsert(CORPUS_ID, [_synthetic.document_id(position + i) for i in range(len(rows))], rows)
            position += len(rows)
    upsert_s = time.perf_counter() - start
    after_upsert = peak_rss_mib()
    start = time.perf_counter()
    backend.commit(CORPUS_ID)
    commit_s = time.perf_counter() - start
    start = time.perf_counter()   # commit() builds no HNSW graph: the first HNSW search does
    backend.search(CORPUS_ID, np.ones((1, _synthetic.DIMENSION), dtype=np.float32), VECTOR_K, exact=False)
    graph_s = time.perf_counter() - start
    backend.close()
    return {"points": position, "upsert_s": upsert_s, "points_per_s": position / upsert_s, "commit_s": commit_s,
            "graph_s": graph_s,
            "rss_before_mib": before, "upsert_peak_rss_mib": after_upsert, "peak_rss_mib": peak_rss_mib(),
            "extra_peak_mib": peak_rss_mib() - before, "disk_mib": dir_mib(folder / "edge")}


def worker_edge_search(args, folder: Path) -> dict:
    from irforge.corpus.vectors.edge import EdgeVectorBackend

    query_ids = [q["_id"] for q in json.loads((folder / "queries.json").read_text())]
    vectors = np.load(folder / "query_vectors.npy")
    backend = EdgeVectorBackend(folder / "edge")
    before = rss_mib()
    start = time.perf_counter()
    backend.search(CORPUS_ID, vectors[:1], VECTOR_K, exact=False)  # opens the shard
    load_s = time.perf_counter() - start
    result = {"load_s": load_s, "rss_loaded_mib": rss_mib() - before}
    for mode, exact in (("exact", True), ("hnsw", False)):
        best, answers = math.inf, None
        for _ in range(args.rounds):
            start = time.perf_counter()
            answers = backend.search(CORPUS_ID, vectors, VECTOR_K, exact=exact)
            best = min(best, time.perf_counter() - start)
        write_run(folder / f"run-{mode}.json", query_ids, answers)
        result[mode] = {"seconds": best, "qps": len(query_ids) / best}
    backend.close()
    result["peak_rss_mib"] = peak_rss_mib()
    return result


WORKERS = {"bm25-ingest": worker_bm25_ingest, "bm25-search": worker_bm25_search, "bm25s-alone": worker_bm25s_alone,
           "edge-build": worker_edge_build, "edge-search": worker_edge_search}


def run_worker(name: str, folder: Path, args, streamed: int = 0) -> dict:
    command = [sys.executable, __file__, "--worker", name, "--folder", str(folder),
               "--batch-size", str(args.batch_size), "--rounds", str(args.rounds), "--documents", str(streamed),
               "--queries", str(args.queries), "--seed", str(args.seed), "--mean-words", str(args.mean_words)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)  # its log lines go to ours
    if done.returncode != 0:
        raise SystemExit(f"worker {name} failed on {folder} (exit {done.returncode})")
    log(f"  {name}: {done.stdout}")  # the raw figures, in case the run is stopped before its size ends
    return json.loads(done.stdout)


# -- one corpus size ----------------------------------------------------------------------------

def prepare(size: int, args, folder: Path) -> dict:
    """Generate the corpus, queries and vectors (or reuse them: same size, seed and queries)."""
    if size > args.stream_above:  # the BM25 ingest generates it as it goes
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return {"documents": size, "queries": args.queries, "seed": args.seed, "streamed": True}
    manifest_path = folder / "manifest.json"
    # the generator's own source is part of the key: a changed word model means a new corpus
    generator = hashlib.sha256(Path(_synthetic.__file__).read_bytes()).hexdigest()[:16]
    wanted = {"documents": size, "queries": args.queries, "seed": args.seed, "vectors": not args.skip_vectors,
              "generator": generator}
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        if {k: manifest.get(k) for k in wanted} == wanted:
            log(f"{size:,} documents: reusing the corpus in {folder}")
            return manifest
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    log(f"{size:,} documents: generating into {folder}")
    start = time.perf_counter()
    step = max(size // 10, _synthetic.BATCH)
    corpus = _synthetic.generate(
        size, args.queries, args.seed, folder / "corpus.jsonl", None if args.skip_vectors else folder / "vectors.f32",
        VOCABULARY_FROM, progress=lambda done: done % step == 0 and log(f"  generated {done:,}"),
    )
    (folder / "queries.json").write_text(json.dumps(corpus.queries))
    np.save(folder / "query_vectors.npy", corpus.query_vectors)
    manifest = {**wanted, "generate_s": time.perf_counter() - start, "words": corpus.words,
                "distinct_words": corpus.distinct_words, "heaps_vocabulary": corpus.vocabulary,
                "corpus_mib": (folder / "corpus.jsonl").stat().st_size / 2**20,
                "mean_query_words": float(np.mean([len(q["text"].split()) for q in corpus.queries]))}
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return manifest


def read_run(path: Path) -> dict[str, dict[str, float]]:
    # The dict form: main's Evaluator hands an untruncated run to pytrec_eval as it is, and
    # pytrec_eval refuses Ranking values ("Unable to extract query/object scores").
    return {q: dict(zip(ids, scores)) for q, (ids, scores) in json.loads(path.read_text()).items()}


def derive_qrels(queries: list[dict], bm25_run, seed: int) -> dict[str, dict[str, int]]:
    rng = np.random.default_rng([seed, 4])
    qrels = {}
    for query in queries:
        judged = {query["source"]: 2}
        below = [d for d in list(bm25_run.get(query["_id"], {}))[:JUDGED_BELOW_SOURCE + 1] if d != query["source"]]
        for doc_id in below[:JUDGED_BELOW_SOURCE]:
            judged[doc_id] = int(rng.random() < JUDGED_RELEVANT)
        qrels[query["_id"]] = judged
    return qrels


def evaluate(qrels, run) -> dict:
    from irforge.evaluator.core import Evaluator
    from irforge.evaluator.measures import DEFAULT_MEASURES

    entries = sum(len(r) for r in run.values())
    start = time.perf_counter()
    result = Evaluator().evaluate(qrels, run, DEFAULT_MEASURES)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "run_entries": entries, "entries_per_s": entries / seconds,
            "nDCG@10": result.aggregate.get("nDCG@10")}


def recall_at_k(found, truth) -> float:
    return float(np.mean([len(set(found[q]) & set(truth[q])) / max(len(truth[q]), 1) for q in truth]))


def measure_size(size: int, args) -> dict:
    folder = args.work_dir / f"n{size}"
    manifest = prepare(size, args, folder)
    figures = {"corpus": manifest}
    for part in ("bm25", "edge"):
        shutil.rmtree(folder / part, ignore_errors=True)  # measure a fresh build every time
    streamed = size > args.stream_above
    log(f"{size:,}: BM25 ingest" + (" (corpus generated as it is ingested)" if streamed else ""))
    ingest = figures["bm25_ingest"] = run_worker("bm25-ingest", folder, args, size if streamed else 0)
    per_doc = 2**20 / ingest["documents"]
    ingest.update(staged_mib=ingest["rss_staged_mib"] - ingest["rss_before_mib"],
                  peak_bytes_per_doc=ingest["extra_peak_mib"] * per_doc,
                  staged_bytes_per_doc=(ingest["rss_staged_mib"] - ingest["rss_before_mib"]) * per_doc,
                  tokens_per_doc=ingest["indexed_tokens"] / ingest["documents"],
                  entries_per_doc=ingest["index_entries"] / ingest["documents"])
    log(f"{size:,}: BM25 search, k = {BM25_K}")
    figures["bm25_search"] = run_worker("bm25-search", folder, args)
    if not streamed and not args.skip_bm25s:
        log(f"{size:,}: plain bm25s, index() in memory and retrieve, k = {BM25_K}")
        alone = figures["bm25s_alone"] = run_worker("bm25s-alone", folder, args)
        figures["irforge_vs_bm25s"] = {
            "peak_rss_ratio": figures["bm25_ingest"]["peak_rss_mib"] / alone["peak_rss_mib"],
            "extra_peak_ratio": figures["bm25_ingest"]["extra_peak_mib"] / alone["extra_peak_mib"],
            "qps_ratio": alone["irforge_interleaved_qps"] / alone["qps"],
            "qps_ratio_per_query": alone["irforge_interleaved_qps"] / alone["per_query_qps"]}
        log(f"  irforge / bm25s: peak RSS {figures['irforge_vs_bm25s']['peak_rss_ratio']:.3f}, "
            f"q/s {figures['irforge_vs_bm25s']['qps_ratio']:.2f} (retrieve), "
            f"{figures['irforge_vs_bm25s']['qps_ratio_per_query']:.2f} (bm25s's scoring and top k without its thread pool)")
    queries = json.loads((folder / "queries.json").read_text())
    runs = {"bm25": read_run(folder / "run-bm25.json")}
    if not args.skip_vectors and not streamed:
        log(f"{size:,}: Qdrant Edge upsert + commit")
        figures["edge_build"] = run_worker("edge-build", folder, args)
        log(f"{size:,}: Qdrant Edge search, k = {VECTOR_K}")
        figures["edge_search"] = run_worker("edge-search", folder, args)
        runs["exact"] = read_run(folder / "run-exact.json")
        runs["hnsw"] = read_run(folder / "run-hnsw.json")
        figures["edge_search"]["hnsw"][f"recall@{VECTOR_K}"] = recall_at_k(
            {q: list(r) for q, r in runs["hnsw"].items()}, {q: list(r) for q, r in runs["exact"].items()})
    qrels = derive_qrels(queries, runs["bm25"], args.seed)
    figures["evaluator"] = {name: evaluate(qrels, run) for name, run in runs.items()}
    if not args.keep:
        for part in ("bm25", "edge"):
            shutil.rmtree(folder / part, ignore_errors=True)
    if args.drop_corpora:  # the disk space for the next, larger size
        shutil.rmtree(folder, ignore_errors=True)
    return figures


# -- growth -------------------------------------------------------------------------------------

# (label, path into a size's figures, how it relates to cost: "time" total seconds for the corpus,
#  "rate" items/s (cost per item = 1/rate), "query" q/s (per-query cost), "memory", "size")
FIGURES = [
    ("generate s", ("corpus", "generate_s"), "time"),
    ("distinct words", ("corpus", "distinct_words"), "size"),
    ("BM25 ingest docs/s", ("bm25_ingest", "docs_per_s"), "rate"),
    ("BM25 ingest s", ("bm25_ingest", "seconds"), "time"),
    ("  of it commit s", ("bm25_ingest", "commit_s"), "time"),
    ("BM25 ingest peak RSS MiB", ("bm25_ingest", "peak_rss_mib"), "memory"),
    ("BM25 ingest extra peak MiB", ("bm25_ingest", "extra_peak_mib"), "memory"),
    ("  held before commit MiB", ("bm25_ingest", "staged_mib"), "memory"),
    ("  extra peak bytes/doc", ("bm25_ingest", "peak_bytes_per_doc"), "size"),
    ("  held before commit bytes/doc", ("bm25_ingest", "staged_bytes_per_doc"), "size"),
    ("  indexed tokens/doc", ("bm25_ingest", "tokens_per_doc"), "size"),
    ("  index entries/doc", ("bm25_ingest", "entries_per_doc"), "size"),
    ("  tokenizer vocabulary", ("bm25_ingest", "vocabulary"), "size"),
    ("BM25 index on disk MiB", ("bm25_ingest", "disk_mib"), "memory"),
    ("BM25 load s", ("bm25_search", "load_s"), "time"),
    ("BM25 index RSS MiB", ("bm25_search", "index_rss_mib"), "memory"),
    (f"BM25 q/s k={BM25_K}", ("bm25_search", "qps"), "query"),
    ("plain bm25s index() peak RSS MiB", ("bm25s_alone", "peak_rss_mib"), "memory"),
    ("plain bm25s index() extra peak MiB", ("bm25s_alone", "extra_peak_mib"), "memory"),
    (f"plain bm25s q/s k={BM25_K}", ("bm25s_alone", "qps"), "query"),
    (f"plain bm25s q/s k={BM25_K} without retrieve's threads", ("bm25s_alone", "per_query_qps"), "query"),
    ("  irforge q/s beside them", ("bm25s_alone", "irforge_interleaved_qps"), "query"),
    ("irforge/bm25s peak RSS", ("irforge_vs_bm25s", "peak_rss_ratio"), "size"),
    ("irforge/bm25s q/s", ("irforge_vs_bm25s", "qps_ratio"), "size"),
    ("irforge/bm25s q/s without threads", ("irforge_vs_bm25s", "qps_ratio_per_query"), "size"),
    ("Edge upsert s", ("edge_build", "upsert_s"), "time"),
    ("Edge commit s", ("edge_build", "commit_s"), "time"),
    ("Edge HNSW graph s (1st HNSW search)", ("edge_build", "graph_s"), "time"),
    ("Edge build peak RSS MiB", ("edge_build", "peak_rss_mib"), "memory"),
    ("Edge upsert peak RSS MiB", ("edge_build", "upsert_peak_rss_mib"), "memory"),
    ("Edge on disk MiB", ("edge_build", "disk_mib"), "memory"),
    (f"Edge exact q/s k={VECTOR_K}", ("edge_search", "exact", "qps"), "query"),
    (f"Edge HNSW q/s k={VECTOR_K}", ("edge_search", "hnsw", "qps"), "query"),
    (f"HNSW recall@{VECTOR_K}", ("edge_search", "hnsw", f"recall@{VECTOR_K}"), "size"),
    ("evaluator s, BM25 run", ("evaluator", "bm25", "seconds"), "time"),
    ("evaluator s, HNSW run", ("evaluator", "hnsw", "seconds"), "time"),
    ("nDCG@10 BM25", ("evaluator", "bm25", "nDCG@10"), "size"),
    ("nDCG@10 HNSW", ("evaluator", "hnsw", "nDCG@10"), "size"),
]


def lookup(figures: dict, path: tuple) -> float | None:
    for key in path:
        if not isinstance(figures, dict) or key not in figures:
            return None
        figures = figures[key]
    return figures


def growth(sizes: list[int], by_size: dict[int, dict], figures: list[tuple] | None = None) -> list[dict]:
    """Per figure (FIGURES, or another script's list of the same shape) and pair of neighbouring
    sizes: the factor per 10× of corpus and the cost exponent."""
    rows = []
    for label, path, kind in FIGURES if figures is None else figures:
        values = [lookup(by_size[n], path) for n in sizes]
        if all(v is None for v in values):
            continue
        row = {"figure": label, "kind": kind, "values": values, "per_10x": [], "cost_exponent": [], "superlinear": False}
        for (n1, v1), (n2, v2) in zip(zip(sizes, values), zip(sizes[1:], values[1:])):
            if not v1 or not v2 or v1 <= 0 or v2 <= 0:
                row["per_10x"].append(None)
                row["cost_exponent"].append(None)
                continue
            decades = math.log10(n2 / n1)
            factor = (v2 / v1) ** (1 / decades)
            row["per_10x"].append(factor)
            # cost ∝ N^b: total time and memory directly; a rate's cost per item is 1/rate, so the
            # corpus's total cost is N/rate; a query's cost is 1/qps
            exponent = {"time": math.log10(factor), "memory": math.log10(factor), "size": None,
                        "rate": 1 - math.log10(factor), "query": -math.log10(factor)}[kind]
            row["cost_exponent"].append(exponent)
            row["superlinear"] |= exponent is not None and exponent > SUPERLINEAR
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000],
                        help="corpus sizes in documents, smallest first (default: 10000 100000 1000000)")
    parser.add_argument("--queries", type=int, default=300, help="queries per corpus (default: 300)")
    parser.add_argument("--seed", type=int, default=13, help="seed of the corpus, queries and vectors (default: 13)")
    parser.add_argument("--work-dir", type=Path,
                        help="where corpora and indexes are written, and reused by a later run with the same "
                             "size, seed and queries (default: a temporary folder, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep the indexes in --work-dir after measuring")
    parser.add_argument("--skip-vectors", action="store_true", help="BM25 and the evaluator only: no vectors, no Qdrant Edge")
    parser.add_argument("--batch-size", type=int, default=1_000, help="documents per ingest batch (default: 1000)")
    parser.add_argument("--rounds", type=int, default=2, help="timed runs of each search; the best is reported (default: 2)")
    parser.add_argument("--mean-words", type=float, default=0,
                        help="mean document length in words of the streamed corpora (default: the generator's, ~220 "
                             "as SciFact/NFCorpus; MS MARCO's passages: 56)")
    parser.add_argument("--results", default="scale", help="results file name in benchmarks/results (default: scale)")
    parser.add_argument("--drop-corpora", action="store_true", help="delete each size's corpus once it is measured")
    parser.add_argument("--skip-bm25s", action="store_true", help="no plain bm25s baseline (its index is held in memory)")
    parser.add_argument("--stream-above", type=int, default=2_000_000,
                        help="corpora larger than this are generated while they are ingested, never written as JSONL, "
                             "BM25 only (no vectors, no plain bm25s: it would not fit) (default: 2000000)")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--documents", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        json.dump(WORKERS[args.worker](args, args.folder), sys.stdout)
        return
    sizes = sorted(set(args.sizes))
    if sizes[0] < args.queries:
        parser.error(f"--sizes: the smallest corpus ({sizes[0]:,}) must have at least --queries ({args.queries}) documents")

    temporary = args.work_dir is None
    args.work_dir = Path(tempfile.mkdtemp(prefix="irforge-scale-")) if temporary else args.work_dir
    args.work_dir.mkdir(parents=True, exist_ok=True)
    by_size: dict[int, dict] = {}
    try:
        for size in sizes:
            start = time.perf_counter()
            by_size[size] = measure_size(size, args)
            log(f"{size:,} documents measured in {time.perf_counter() - start:,.0f} s; load average "
                + "/".join(f"{x:.2f}" for x in os.getloadavg()))
            by_size[size]["load_average_after"] = os.getloadavg()
            # after every size, so that a run stopped during a long last size keeps the others
            write_results(str(Path(__file__).with_name(args.results + '.py')), payload(args, list(by_size), by_size, complete=len(by_size) == len(sizes)))
    finally:
        if temporary:
            shutil.rmtree(args.work_dir, ignore_errors=True)

    rows = growth(sizes, by_size)
    print(f"\nSynthetic corpora (seed {args.seed}, {args.queries} queries); growth factors per 10× of corpus, "
          f"cost ∝ N^b (b > {SUPERLINEAR} flagged)\n")
    print_growth(sizes, rows)
    flagged = [r["figure"] for r in rows if r["superlinear"]]
    print("\nsuper-linear: " + (", ".join(flagged) if flagged else "nothing"))
    print(f"wrote {RESULTS_DIR / (args.results + '.json')}")


def print_growth(sizes: list[int], rows: list[dict]) -> None:
    """growth()'s rows as a table: each figure per size, its factor per 10× and its exponent per step."""
    steps = [f"{a:,}→{b:,}" for a, b in zip(sizes, sizes[1:])]
    print(table(
        ["figure"] + [f"{n:,}" for n in sizes] + [f"×/10× {s}" for s in steps] + [f"b {s}" for s in steps] + [""],
        [[r["figure"], *r["values"], *r["per_10x"], *r["cost_exponent"], "SUPER-LINEAR" if r["superlinear"] else ""]
         for r in rows],
    ))


def payload(args, sizes: list[int], by_size: dict[int, dict], complete: bool) -> dict:
    return {"complete": complete, "sizes": sizes, "queries": args.queries, "seed": args.seed, "bm25_k": BM25_K,
            "streamed_above": args.stream_above, "streamed_mean_words": args.mean_words or None,
            "vector_k": VECTOR_K, "superlinear_exponent": SUPERLINEAR, "by_size": {str(n): by_size[n] for n in sizes},
            "growth": growth(sizes, by_size)}


if __name__ == "__main__":
    main()
