"""`--candidates FILE`: a first stage read from a run file (or a top_ranked.jsonl) and reranked.

Reranking BM25's top candidates of a SciFact slice with a cross-encoder through --candidates equals
reranking inside irforge's own pipeline (--retriever bm25 --reranker), query by query: the same
run, line for line, and the same metrics; and the reranked order is the one sentence-transformers'
own CrossEncoder.predict gives. The full SciFact top-100 measurement is in the branch's report.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.data import BeirDataset
from irforge.runs import read_run_file

QUERIES, DEPTH, TOP_K = 4, 5, 10   # 4 queries; the top 5 reranked, 5 more below them in BM25's order
DOCS_TESTS = Path(__file__).resolve().parents[1] / "docs"


def eval_argv(dataset: Path, out: Path, *flags: str) -> list[str]:
    return ["eval", "--dataset", str(dataset), "--out", str(out), "--top-k", str(TOP_K), *flags]


def read(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def ranked_ids(run_file: Path) -> dict[str, list[str]]:
    ranked: dict[str, list[str]] = {}
    for line in run_file.read_text().splitlines():
        ranked.setdefault(line.split()[0], []).append(line.split()[2])
    return ranked


@pytest.fixture(scope="module")
def runs(scifact_subset, cross_encoder_dir, tmp_path_factory):
    """A SciFact slice (4 queries, the subset's corpus); BM25's top 10 as a TREC run and as a
    top_ranked.jsonl; the slice reranked by the cross-encoder inside the pipeline and through --candidates."""
    root = tmp_path_factory.mktemp("candidates")
    source = BeirDataset.open(scifact_subset)
    qrels = source.qrels("test")
    query_ids = sorted(qrels)[:QUERIES]
    dataset = root / "scifact-slice"
    (dataset / "qrels").mkdir(parents=True)
    (dataset / "corpus.jsonl").symlink_to(source.corpus_path)
    (dataset / "queries.jsonl").write_text("".join(json.dumps({"_id": q.query_id, "text": q.text}) + "\n"
                                                   for q in source.queries() if q.query_id in query_ids))
    (dataset / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{r}\n" for q in query_ids for d, r in qrels[q].items()))
    index = ["--index-dir", str(root / "index")]
    assert main(eval_argv(dataset, root / "bm25", *index)) == 0
    trec = root / "bm25" / "run.trec"
    top_ranked = root / "top_ranked.jsonl"
    top_ranked.write_text("".join(json.dumps({"query-id": q, "corpus-ids": docs}) + "\n" for q, docs in ranked_ids(trec).items()))
    reranker = ["--reranker", str(cross_encoder_dir), "--rerank-depth", str(DEPTH)]
    assert main(eval_argv(dataset, root / "inside", *index, *reranker)) == 0
    assert main(eval_argv(dataset, root / "given", "--candidates", str(trec), *reranker)) == 0
    return {"dataset": dataset, "root": root, "trec": trec, "top_ranked": top_ranked, "query_ids": query_ids}


def test_reranking_given_candidates_equals_reranking_inside_the_pipeline(runs):
    root = runs["root"]
    inside, given = read(root / "inside"), read(root / "given")
    assert given["per_query"] == inside["per_query"] and given["metrics"] == inside["metrics"]
    assert set(given["per_query"]) == set(runs["query_ids"])
    # The runs, line for line (the same documents, ranks and scores), but for the tag naming the first stage.
    columns = lambda out: [line.split()[:5] for line in (out / "run.trec").read_text().splitlines()]  # noqa: E731
    assert columns(root / "given") == columns(root / "inside") and len(columns(root / "given")) == QUERIES * TOP_K
    assert inside["retriever"]["name"] == "bm25-rerank" and given["retriever"]["name"] == "candidates-rerank"


def test_the_reranked_order_is_the_cross_encoders_own(runs, cross_encoder_dir):
    """Independently: sentence-transformers' CrossEncoder.predict on each query's top 5 candidates
    (title + " " + text), ordered by score; the 5 below keep BM25's order."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(cross_encoder_dir))
    dataset = BeirDataset.open(runs["dataset"])
    texts = {d.doc_id: d.full_text for d in dataset.corpus()}
    queries = {q.query_id: q.text for q in dataset.queries()}
    bm25, reranked = ranked_ids(runs["trec"]), ranked_ids(runs["root"] / "given" / "run.trec")
    for query_id, candidates in bm25.items():
        head = candidates[:DEPTH]
        scores = dict(zip(head, model.predict([(queries[query_id], texts[d]) for d in head]).tolist()))
        order = reranked[query_id][:DEPTH]
        assert sorted(order) == sorted(head)
        # Scores are float32 from batches of other sizes: the order holds up to their noise.
        assert all(scores[a] >= scores[b] - 1e-5 for a, b in zip(order, order[1:])), (query_id, order, scores)
        assert reranked[query_id][DEPTH:] == candidates[DEPTH:]


@pytest.fixture(scope="module")
def rerank_spec(tmp_path_factory):
    """A rerank-http endpoint scoring by BM25 over each request's documents (tests/docs/rerank_server.py): cheap."""
    spec = importlib.util.spec_from_file_location("irforge_docs_rerank_server_candidates", DOCS_TESTS / "rerank_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.RerankServer()
    path = tmp_path_factory.mktemp("rerank-endpoint") / "rerank.yaml"
    path.write_text(f"kind: rerank-http\nurl: {server.url}\nmodel: bm25\n")
    yield path
    server.close()


def test_a_top_ranked_file_gives_the_same_ranking_as_the_run(runs, rerank_spec, tmp_path):
    """The same candidates as a TREC run and as a top_ranked.jsonl (their order, no scores): the
    same reranked runs and metrics; and the candidate source is recorded."""
    flags = ["--reranker-endpoint", str(rerank_spec), "--rerank-depth", str(DEPTH)]
    for name, path in (("trec", runs["trec"]), ("top_ranked", runs["top_ranked"])):
        assert main(eval_argv(runs["dataset"], tmp_path / name, "--candidates", str(path), *flags)) == 0
    assert ranked_ids(tmp_path / "top_ranked" / "run.trec") == ranked_ids(tmp_path / "trec" / "run.trec")
    assert read(tmp_path / "top_ranked")["per_query"] == read(tmp_path / "trec")["per_query"]
    for name, path in (("trec", runs["trec"]), ("top_ranked", runs["top_ranked"])):
        retriever = read(tmp_path / name)["retriever"]
        source = retriever["first_stage"]["candidates"]
        assert source["file"] == str(path.resolve()) and source["format"] == name
        assert source["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert (source["queries"], source["candidates"], source["most_per_query"]) == (QUERIES, QUERIES * TOP_K, TOP_K)
        assert retriever["rerank_depth"] == DEPTH and retriever["first_stage"]["name"] == "candidates"
    assert read(tmp_path / "trec")["retriever"]["first_stage"]["candidates"]["producer"] == "irforge-bm25"


@pytest.mark.parametrize("flags, message", [
    ([], "--candidates {trec} needs a reranker (--reranker, --reranker-endpoint or --listwise-llm)"),
    (["--reranker", "x", "--retriever", "dense"], "--retriever dense does not apply here: the candidates"),
    (["--reranker", "x", "--k1", "1.2"], "--k1 1.2 does not apply here: the candidates"),
    (["--reranker", "x", "--language", "en"], "--language en does not apply here: the candidates"),
    (["--reranker", "x", "--endpoint", "e.yaml"], "--endpoint e.yaml does not apply here: the candidates"),
])
def test_what_cannot_apply_is_refused(runs, tmp_path, capsys, flags, message):
    out = tmp_path / "out"
    assert main(["eval", "--dataset", str(runs["dataset"]), "--out", str(out), "--candidates", str(runs["trec"]), *flags]) == 2
    assert message.format(trec=runs["trec"]) in capsys.readouterr().err
    assert not out.exists()
    assert main(["eval", "--dataset", str(runs["dataset"]), "--out", str(out), "--candidates-format", "trec"]) == 2
    assert "--candidates-format trec does not apply here" in capsys.readouterr().err


def test_bad_candidates_files_are_named(runs, tmp_path, capsys):
    spec = tmp_path / "rerank.yaml"
    spec.write_text("kind: rerank-http\nurl: http://127.0.0.1:9/v1\n")   # never called: the file fails first
    other = tmp_path / "other.trec"
    other.write_text(f"{runs['query_ids'][0]} Q0 not-a-scifact-doc 1 2.0 x\nq-elsewhere Q0 nor-this 1 2.0 x\n")
    bad = tmp_path / "bad.trec"
    bad.write_text("1 Q0 4983 1 2.0 x\n1 Q0 4983 2 1.0 x\n")
    for path, expected in ((other, f"{other}: 1 candidate documents are not in the corpus"),
                           (bad, f"{bad}:2: document '4983' appears twice for query '1'"),
                           (tmp_path / "missing.trec", "missing.trec: file not found")):
        out = tmp_path / path.stem
        argv = ["eval", "--dataset", str(runs["dataset"]), "--out", str(out), "--candidates", str(path),
                "--reranker-endpoint", str(spec)]
        assert main(argv) == 2
        assert expected in capsys.readouterr().err
        assert not out.exists()


def test_bench_and_an_orchestrator_job_take_candidates(runs, rerank_spec, tmp_path, services_address, capsys):
    """bench reruns a dataset whose candidates file changed (its sha256 is part of the system), and
    an orchestrator job reranks the same candidates to the same run as `irforge eval`."""
    from irforge.orchestrator.context import ServiceAddresses
    from irforge.orchestrator.core import Orchestrator
    from irforge.orchestrator.spec import JobSpec
    from irforge.orchestrator.steps import plan_steps

    spec = rerank_spec
    candidates = tmp_path / "candidates.trec"
    candidates.write_bytes(runs["trec"].read_bytes())
    flags = ["--candidates", str(candidates), "--reranker-endpoint", str(spec), "--rerank-depth", str(DEPTH),
             "--top-k", str(TOP_K)]
    bench = ["bench", "--dataset", str(runs["dataset"]), "--out", str(tmp_path / "bench"), *flags]
    assert main(bench) == 0
    assert main(bench) == 0
    assert "scifact-slice: reused" in capsys.readouterr().err
    candidates.write_text(candidates.read_text().replace(" irforge-bm25", " edited"))
    assert main(bench) == 0
    assert "redoing: retriever: first_stage.candidates" in capsys.readouterr().err

    assert main(["eval", "--dataset", str(runs["dataset"]), "--out", str(tmp_path / "eval"), *flags]) == 0
    job = JobSpec.of(dataset=str(runs["dataset"]), candidates=str(candidates), reranker_endpoint=str(spec),
                     rerank_depth=DEPTH, top_k=TOP_K).validate()
    assert plan_steps(job) == ["retrieve", "rerank", "evaluate"]   # nothing to index
    orchestrator = Orchestrator(tmp_path / "state", ServiceAddresses(corpus=services_address, evaluator=services_address),
                                cache_path=tmp_path / "cache.sqlite3", backoff_s=0.05, progress_interval_s=0.0).start()
    try:
        job_id = orchestrator.submit(job)
        for _ in orchestrator.watch(job_id):
            pass
        record = orchestrator.get(job_id)
        assert record.state.value == "SUCCEEDED", record.error
        results_dir = orchestrator.results_dir(job_id)
    finally:
        orchestrator.shutdown(wait=True)
    local, remote = read(tmp_path / "eval"), read(results_dir)
    assert remote["per_query"] == local["per_query"]
    assert read_run_file(results_dir / "run.trec").run == read_run_file(tmp_path / "eval" / "run.trec").run
    assert remote["retriever"]["first_stage"]["candidates"]["sha256"] == hashlib.sha256(candidates.read_bytes()).hexdigest()


def test_suite_entries_give_each_dataset_its_candidates(runs, rerank_spec, tmp_path, capsys):
    """`candidates:` per suite entry (relative to the suite file), all or none; --candidates fits one dataset."""
    (tmp_path / "bm25.trec").write_bytes(runs["trec"].read_bytes())
    suite = tmp_path / "suite.yaml"
    flags = ["--reranker-endpoint", str(rerank_spec), "--rerank-depth", str(DEPTH)]
    suite.write_text(f"datasets:\n  - {{path: {runs['dataset']}, label: a, candidates: bm25.trec}}\n")
    assert main(["bench", "--suite", str(suite), "--out", str(tmp_path / "bench"), "--top-k", str(TOP_K), *flags]) == 0
    eval_out = tmp_path / "eval"
    assert main(eval_argv(runs["dataset"], eval_out, "--candidates", str(runs["trec"]), *flags)) == 0
    assert read(tmp_path / "bench" / "a")["per_query"] == read(eval_out)["per_query"]
    assert read(tmp_path / "bench" / "a")["retriever"]["first_stage"]["candidates"]["file"] == str(tmp_path / "bm25.trec")
    suite.write_text(f"datasets:\n  - {{path: {runs['dataset']}, label: a, candidates: bm25.trec}}\n"
                     f"  - {{path: {runs['dataset']}, label: b}}\n")
    assert main(["bench", "--suite", str(suite), "--out", str(tmp_path / "bench2"), *flags]) == 2
    assert "field 'datasets[1]': has no candidates" in capsys.readouterr().err
    two = ["bench", "--dataset", str(runs["dataset"]), "--dataset", str(tmp_path / "bench" / "a"), "--out", str(tmp_path / "b3")]
    assert main([*two, "--candidates", str(runs["trec"]), *flags]) == 2
    assert "--candidates names one dataset's candidates, and the suite has 2 datasets" in capsys.readouterr().err
