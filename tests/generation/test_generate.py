"""`irforge generate` end to end on real SciFact documents against the scripted chat server with
429s, 5xx and garbage mixed in: counts, split, provenance, hard negatives, QC wired in, `irforge
eval` recording the manifest; resume after a kill; a budget stop's partial output; Long-Doc chunks;
an InfoSearch set irforge reads."""

from __future__ import annotations

import hashlib
import json
import re
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from irforge.data import BeirDataset
from irforge.generation.documents import Chunker, Doc

scripted = sys.modules["irforge_judge_tests_scripted_chat"]   # loaded by conftest.py
ROOT = Path(__file__).resolve().parents[2]


def faulty(prompt: str, body: dict, seen: dict, lock=threading.Lock()):
    """Each prompt's first attempt may be a 429, a 502 or garbage (by its hash); later ones answer."""
    with lock:
        seen[prompt] = seen.get(prompt, 0) + 1
        attempt = seen[prompt]
    kind = int(hashlib.sha256(prompt.encode()).hexdigest()[:6], 16) % 6
    if attempt == 1 and kind == 0:
        return scripted.status(429, retry_after=0)
    if attempt == 1 and kind == 1:
        return scripted.status(502)
    if attempt == 1 and kind == 2:
        return "Here is my answer: not JSON at all"
    return scripted.answer_by_schema(prompt, body)


def label_by_content(prompt: str) -> str:
    """The QC judge's label from the query and passage alone (the share of the query's words the
    passage holds), not from the prompt's wording: a change to the judge's framing must not decide
    which generated queries QC keeps."""
    quoted = re.search(r"<query>\n(.*?)\n</query>.*?<passage>\n(.*?)\n</passage>", prompt, re.S)
    if not quoted:
        return scripted.label_by_hash(prompt)
    query, passage = (set(re.findall(r"\w+", text.casefold())) for text in (quoted[1], quoted[2]))
    share = len(query & passage) / max(1, len(query))
    return str(sum(share > cut for cut in (0.1, 0.3, 0.5)))


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_airbench_qa_with_faults_qc_and_eval(chat, spec_file, run_cli, scifact_tiny, tmp_path):
    seen: dict = {}
    chat.structured = lambda prompt, body: faulty(prompt, body, seen)
    chat.responder = label_by_content
    out = tmp_path / "generated"
    code, stdout, stderr = run_cli("generate", "airbench-qa", "--corpus", scifact_tiny, "--llm", spec_file(), "--out", out,
                                   "--docs", 10, "--seed", 5, "--cache", tmp_path / "cache.sqlite3", "--qc-recall-depth", 20,
                                   "--qc-reranker", "bm25", "--qc-reranker", "bm25?k1=1.2&b=0.75", "--store", tmp_path / "store.sqlite3")
    assert code == 0, stdout + stderr
    manifest = json.loads((out / "generation.json").read_text())
    stages = manifest["stages"]
    assert list(stages) == ["characters", "scenarios", "query", "rewrite", "negatives"]
    assert all(s["ok"] == s["asked"] for s in stages.values()), stages      # every fault was retried or re-asked
    assert stages["rewrite"]["asked"] == 30 and stages["characters"]["asked"] == 10
    generation_requests = sum(s["requests"] for s in stages.values())
    structured = [r for r in chat.chat_requests if "response_format" in r.body]
    assert generation_requests == len(structured) > 70                     # 70 asks plus the faults' repeats
    assert manifest["complete"] and manifest["output"]["splits"] == {"dev": 2, "test": 8}
    assert sum(manifest["histograms"]["length"].values()) == 10

    raw_queries = {q["_id"]: q for q in lines(out / "queries.jsonl")}
    provenance = lines(out / "provenance.jsonl")
    by_subject = {}
    for record in provenance:
        assert {"stage", "subject", "template_sha256", "model", "raw", "status"} <= set(record)
        by_subject.setdefault(record["subject"], set()).add(record["stage"])
    for query_id in raw_queries:
        assert by_subject[query_id] == set(stages)
    produced = {d for r in provenance for d in r.get("produced", [])}
    negatives = [line.split("\t") for line in (out / "hard_negatives.tsv").read_text().splitlines()[1:]]
    assert negatives and {d for _, d in negatives} <= produced
    per_query = Counter(q for q, _ in negatives)
    assert all(3 <= n <= 7 for n in per_query.values())

    # QC ran on both splits with the negatives declared; its counts are in the manifest.
    steps = manifest["qc"]["steps"]
    assert manifest["qc"]["ran"] and [s["split"] for s in steps] == ["dev", "test"]
    assert "qc dev:" in stdout and "negatives removed" in stdout
    dataset = BeirDataset.open(out)
    kept = set(dataset.qrels("dev")) | set(dataset.qrels("test"))
    assert len(kept) == 10 - sum(s["queries_dropped"] for s in steps)
    corpus_ids = {d.doc_id for d in dataset.corpus()}
    removed = sum(s["negatives_removed"] for s in steps)
    assert len(corpus_ids) == 23 + len(negatives) - removed
    for split in ("dev", "test"):
        for judged in dataset.qrels(split).values():
            assert set(judged) <= corpus_ids

    code, stdout, _ = run_cli("eval", "--dataset", out, "--retriever", "bm25", "--out", tmp_path / "run",
                              "--index-dir", tmp_path / "indexes")
    assert code == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    facts = results["data"]["generation"]
    assert facts["recipe"] == "airbench-qa" and facts["model"] == "scripted-generator" and facts["qc"] is True
    # MiniLM too (QC loaded it in this process already, so this costs no second load).
    code, stdout, _ = run_cli("eval", "--dataset", out, "--retriever", "dense", "--model", "all-MiniLM-L6-v2",
                              "--out", tmp_path / "run-dense", "--vector-dir", tmp_path / "vectors",
                              "--embedding-cache", tmp_path / "embeddings.sqlite3")
    assert code == 0, stdout
    dense = json.loads((tmp_path / "run-dense" / "results.json").read_text())
    assert dense["data"]["generation"] == facts and dense["evaluation"]["queries_evaluated"] == len(dataset.qrels("test"))

    # A re-run is answered by the cache: no generation request.
    before = len([r for r in chat.chat_requests if "response_format" in r.body])
    code, _, _ = run_cli("generate", "airbench-qa", "--corpus", scifact_tiny, "--llm", spec_file(), "--out", out,
                         "--docs", 10, "--seed", 5, "--cache", tmp_path / "cache.sqlite3", "--no-qc")
    assert code == 0 and len([r for r in chat.chat_requests if "response_format" in r.body]) == before


def test_a_budget_stop_leaves_a_valid_partial_collection(chat, spec_file, run_cli, scifact_tiny, tmp_path):
    out = tmp_path / "partial"
    code, stdout, _ = run_cli("generate", "airbench-qa", "--corpus", scifact_tiny, "--llm", spec_file(), "--out", out,
                              "--docs", 6, "--max-requests", 39, "--cache", tmp_path / "cache.sqlite3")
    # Stages run breadth-first: 6 characters, 6 scenarios, 6 queries, 18 rewrites, then 3 of 6 negatives.
    assert code == 0 and "stopped: --max-requests 39 reached" in stdout
    assert len(chat.chat_requests) == 39
    manifest = json.loads((out / "generation.json").read_text())
    assert not manifest["complete"] and manifest["qc"]["ran"] is False
    dataset = BeirDataset.open(out)   # a valid BEIR folder: readable, every label's query and document present
    assert manifest["output"]["queries"] == 3 == 6 - manifest["incomplete_chains"]
    assert manifest["output"]["splits"] == {"dev": 1, "test": 2}
    corpus_ids = {d.doc_id for d in dataset.corpus()}
    for split in ("dev", "test"):
        for judged in dataset.qrels(split).values():
            assert set(judged) <= corpus_ids and sorted(judged.values()).count(1) == 1


def test_resume_after_a_kill_sends_no_answered_request_again(chat, spec_file, run_cli, scifact_tiny, tmp_path):
    answered_before_kill = 12
    count, lock = [0], threading.Lock()

    def hang_after_some(prompt, body):
        with lock:
            count[0] += 1
            n = count[0]
        return scripted.answer_by_schema(prompt, body) if n <= answered_before_kill else scripted.slow(30, "{}")

    chat.structured = hang_after_some
    cache = tmp_path / "cache.sqlite3"
    argv = [sys.executable, "-m", "irforge.cli.main", "generate", "airbench-qa", "--corpus", str(scifact_tiny),
            "--llm", str(spec_file(timeout_s=60)), "--out", str(tmp_path / "out"), "--docs", 8, "--cache", str(cache),
            "--no-qc"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "services")}
    process = subprocess.Popen([str(a) for a in argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if cache.exists():
                with sqlite3.connect(cache) as db:
                    if db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'calls'").fetchone()[0] and \
                            db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] >= answered_before_kill:
                        break
            time.sleep(0.1)
        else:
            raise AssertionError("the first run never answered enough calls")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    answered = {json.dumps(r.body["messages"]) for r in chat.chat_requests[:answered_before_kill]}
    first_run = len(chat.chat_requests)
    chat.structured = scripted.answer_by_schema
    code, stdout, _ = run_cli(*argv[3:])   # the second run in process: a fresh interpreter costs seconds
    assert code == 0, stdout
    second = chat.chat_requests[first_run:]
    assert second and not answered & {json.dumps(r.body["messages"]) for r in second}
    assert json.loads((tmp_path / "out" / "generation.json").read_text())["output"]["queries"] == 8


def test_longdoc_chunks_and_queries(chat, spec_file, run_cli, scifact_tiny, tmp_path):
    folder = tmp_path / "long"
    folder.mkdir()
    abstracts = [d.text for d in BeirDataset.open(scifact_tiny).corpus()]
    (folder / "report-a.txt").write_text("\n\n".join(abstracts[:8]))
    (folder / "report-b.md").write_text("\n\n".join(abstracts[8:12]))
    chunker = Chunker()
    doc = Doc("a", "t", (folder / "report-a.txt").read_text())
    spans, chunks = chunker.token_spans(doc.text), chunker.chunks(doc)
    assert len(spans) > 450 and len(chunks) == -(-(len(spans) - 50) // 150)
    for number, chunk in enumerate(chunks):
        window = spans[number * 150:number * 150 + 200]
        assert chunk.text == doc.text[window[0][0]:window[-1][1]] and len(chunker.token_spans(chunk.text)) <= 205
    assert spans[-1][1] == len(doc.text.rstrip()) and chunks[-1].text.endswith(doc.text.rstrip()[-20:])

    out = tmp_path / "longdoc"
    code, stdout, _ = run_cli("generate", "airbench-longdoc", "--corpus", folder, "--llm", spec_file(), "--out", out,
                              "--docs", 8, "--cache", tmp_path / "cache.sqlite3", "--no-qc")
    assert code == 0, stdout
    manifest = json.loads((out / "generation.json").read_text())
    assert manifest["details"]["chunking"]["tokenizer"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "negatives" not in manifest["stages"] and set(manifest["histograms"]["type"]) <= {"question", "claim"}
    corpus = {d.doc_id: d for d in BeirDataset.open(out).corpus()}
    assert corpus and all("-c" in doc_id for doc_id in corpus)
    assert len([d for d in corpus if d.startswith("report-a-c")]) == len(chunks)
    assert (out / "hard_negatives.tsv").read_text().splitlines() == ["query-id\tcorpus-id"]


def test_infosearch_sets_are_read_by_eval_instructions(chat, spec_file, run_cli, scifact_tiny, tmp_path):
    out = tmp_path / "instructions"
    code, stdout, _ = run_cli("generate", "infosearch", "--corpus", scifact_tiny, "--llm", spec_file(), "--out", out,
                              "--docs", 3, "--dimension", "length", "--dimension", "audience",
                              "--cache", tmp_path / "cache.sqlite3")
    assert code == 0, stdout
    manifest = json.loads((out / "generation.json").read_text())
    assert manifest["stages"]["doc_rewrite"]["asked"] == 3 and manifest["stages"]["condition"]["asked"] == 6
    from irforge.instructions.collection import open_instruction_collections

    collections = open_instruction_collections(out, split="test")
    assert [c.dimension for c in collections] == ["audience", "length"] and {c.layout for c in collections} == {"infosearch"}
    queries = lines(out / "length" / "queries.jsonl")
    assert all(q["instruction_changed"] and q["instruction_reversed"] and q["instruction_og"] == "" for q in queries)
    changed = (out / "length" / "qrels_changed" / "test.tsv").read_text()
    assert "-length\t0" in changed


def test_infosearch_takes_one_core_query_per_gold_document(chat, spec_file, run_cli, scifact_tiny, tmp_path):
    """Two queries judging the same gold document: only the first sampled becomes a core query, so
    no query is labelled against a rewrite made for another query's condition."""
    shared = tmp_path / "shared-gold"
    shutil.copytree(scifact_tiny, shared)
    qrels = (shared / "qrels" / "test.tsv").read_text().splitlines()
    first_q, first_doc, _ = qrels[1].split("\t")
    other_q = next(line.split("\t")[0] for line in qrels[1:] if line.split("\t")[0] != first_q)
    (shared / "qrels" / "test.tsv").write_text("\n".join([qrels[0], *(l for l in qrels[1:] if l.split("\t")[0] != other_q),
                                                          f"{other_q}\t{first_doc}\t1"]) + "\n")
    out = tmp_path / "instructions"
    code, stdout, _ = run_cli("generate", "infosearch", "--corpus", shared, "--llm", spec_file(), "--out", out,
                              "--docs", 3, "--dimension", "length", "--cache", tmp_path / "cache.sqlite3")
    assert code == 0, stdout
    manifest = json.loads((out / "generation.json").read_text())
    assert manifest["stages"]["condition"]["asked"] == 2
    queries = lines(out / "length" / "queries.jsonl")
    assert len({q["metadata"]["gold"] for q in queries}) == len(queries) == 2


def test_a_split_qc_empties_is_dropped_with_a_message_not_a_work_folder_error(chat, spec_file, run_cli, scifact_tiny,
                                                                              tmp_path):
    # A judge that finds no generated query relevant to its passage: QC drops every query of
    # every split. Before, the test split's QC failed on the dev split's header-only qrels file
    # in the work folder (exit 2, naming a path the user never gave).
    chat.responder = lambda prompt: "0"
    out = tmp_path / "generated"
    code, stdout, stderr = run_cli("generate", "airbench-qa", "--corpus", scifact_tiny, "--llm", spec_file(), "--out", out,
                                   "--docs", 4, "--seed", 5, "--cache", tmp_path / "cache.sqlite3", "--qc-recall-depth", 5,
                                   "--qc-reranker", "bm25", "--store", tmp_path / "store.sqlite3")
    assert ".irforge-generate-" not in stderr, stderr
    assert "every dev query dropped: the collection has no dev split" in stdout, stdout + stderr
    manifest = json.loads((out / "generation.json").read_text())
    assert [s["emptied"] for s in manifest["qc"]["steps"]] == [True, True]
    # Nothing left to evaluate: not complete, exit 1, and the reason said (a complete collection of
    # no query was issue 24's "wrong result").
    assert code == 1 and not manifest["complete"], stdout + stderr
    assert "quality control dropped every generated query" in manifest["incomplete_reason"] and "no qrels" in stderr
    assert not list((out / "qrels").glob("*.tsv"))
