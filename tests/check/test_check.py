"""`irforge check DATASET [RUN...]` on hand-made mistakes: each one named, each count checked by
hand against the tiny dataset below; ties confirmed against pytrec_eval (trec_eval's own code);
a clean SciFact BM25 run from bm25s (not irforge's retriever) reports no error."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
import pytrec_eval

from irforge.app.check import check_runs
from irforge.cli.main import main

# The hand-made dataset. Queries q1-q3 are the test split, q4-q5 the train split, q6 is in none.
# Doc 'q3' shares its id with query q3 (as in ArguAna, where queries are corpus documents too).
DOCS = [f"d{n:02d}" for n in range(1, 16)] + ["q3"]
QUERIES = ["q1", "q2", "q3", "q4", "q5", "q6"]
TEST_QRELS = [("q1", "d01", 1), ("q1", "d02", 0), ("q2", "d03", 1), ("q3", "d04", 1), ("q3", "d05", 0)]
TRAIN_QRELS = [("q4", "d06", 1), ("q5", "d07", 1)]


def write_dataset(root: Path, test_lines: list[str] | None = None) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": f"text of {d}"}) + "\n" for d in DOCS))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n" for q in QUERIES))
    lines = test_lines if test_lines is not None else [f"{q}\t{d}\t{r}" for q, d, r in TEST_QRELS]
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(lines) + "\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in TRAIN_QRELS))
    return root


@pytest.fixture
def dataset(tmp_path) -> Path:
    return write_dataset(tmp_path / "tiny")


def write_run(path: Path, rows) -> Path:
    """rows: (query, doc, score) with ranks 1.. per query in the order given, or full 6-field lines as str."""
    ranks: dict[str, int] = {}
    lines = []
    for row in rows:
        if isinstance(row, str):
            lines.append(row)
            continue
        query, doc, score = row
        ranks[query] = ranks.get(query, 0) + 1
        lines.append(f"{query} Q0 {doc} {ranks[query]} {score} hand")
    path.write_text("\n".join(lines) + "\n")
    return path


def clean_rows():
    """A run with no mistake: every test query, corpus docs only, distinct scores."""
    return [("q1", "d01", 3.0), ("q1", "d02", 2.0), ("q2", "d03", 3.0), ("q3", "d04", 3.0), ("q3", "d05", 2.0)]


def codes(findings) -> dict[str, object]:
    return {f.code: f for f in findings}


def run_findings(dataset, run, **options):
    report = check_runs(dataset, [run], **options)
    return report, codes(report.runs[0].findings)


def test_a_clean_hand_made_run_has_no_finding_but_judged(dataset, tmp_path):
    report, found = run_findings(dataset, write_run(tmp_path / "clean.trec", clean_rows()))
    assert set(found) == {"run-judged-at-10"} and not report.has_errors
    assert report.findings == []
    assert (report.documents, report.queries, report.split_queries, report.judgements) == (16, 6, 3, 5)


# -- 1. a run with doc ids from another corpus version ------------------------------------------

def test_doc_ids_from_another_corpus_version(dataset, tmp_path):
    run = write_run(tmp_path / "v2.trec", [("q1", "d01", 3), ("q1", "v2-d01", 2), ("q1", "v2-d02", 1),
                                           ("q2", "d03", 3), ("q2", "v2-d01", 2), ("q3", "d04", 1)])
    report, found = run_findings(dataset, run)
    unknown = found["run-unknown-docs"]
    # by hand: lines 2, 3 and 5 name docs not in the corpus; 2 distinct ids, in 2 queries
    assert (unknown.severity, unknown.count) == ("error", 3)
    assert unknown.details == {"distinct_docs": 2, "queries": 2}
    assert unknown.examples[0] == f"{run}:2: query 'q1', doc 'v2-d01'"
    assert [e.split(":")[1] for e in unknown.examples] == ["2", "3", "5"]
    assert report.has_errors


def test_every_doc_unknown_says_another_collection(dataset, tmp_path):
    run = write_run(tmp_path / "other.trec", [("q1", "MED-1", 2), ("q2", "MED-2", 1)])
    _, found = run_findings(dataset, run)
    assert found["run-unknown-docs"].count == 2 and "another collection" in found["run-unknown-docs"].message


# -- 2. a run with queries from the wrong split -------------------------------------------------

def test_queries_from_the_wrong_split(dataset, tmp_path):
    run = write_run(tmp_path / "train.trec", [("q4", "d06", 2), ("q4", "d07", 1), ("q5", "d07", 1)])
    report, found = run_findings(dataset, run)
    wrong = found["run-wrong-split"]
    assert (wrong.severity, wrong.count) == ("error", 2)          # q4, q5
    assert wrong.details == {"other_splits": {"train": 2}}
    assert "split 'train' (2)" in wrong.message
    assert wrong.examples == [f"{run}:1: query 'q4'", f"{run}:3: query 'q5'"]
    assert "run-missing-queries" not in found                      # all three missing: the wrong split says it
    assert "run-judged-at-10" not in found                          # nothing of the split to judge
    assert report.has_errors


def test_some_queries_outside_the_split_unknown_or_missing(dataset, tmp_path):
    run = write_run(tmp_path / "mixed.trec", [("q1", "d01", 1), ("q2", "d03", 1), ("q4", "d06", 1),
                                              ("q6", "d08", 1), ("q99", "d09", 1)])
    _, found = run_findings(dataset, run)
    outside = found["run-queries-outside-split"]                    # q4 (train) and q6 (no split)
    assert (outside.severity, outside.count, outside.details) == ("warning", 2, {"other_splits": {"train": 1}})
    unknown = found["run-unknown-queries"]                          # q99 is in no queries file
    assert (unknown.severity, unknown.count, unknown.examples) == ("error", 1, [f"{run}:5: query 'q99'"])
    missing = found["run-missing-queries"]                          # q3 of the test split has no line
    assert (missing.severity, missing.count, missing.examples) == ("warning", 1, ["query 'q3'"])


# -- 3. duplicate lines, 4. NaN / inf / non-numeric scores, malformed lines ---------------------

def test_duplicate_lines(dataset, tmp_path):
    run = write_run(tmp_path / "dup.trec", [*clean_rows(), ("q1", "d01", 3.0), ("q2", "d03", 0.5)])
    report, found = run_findings(dataset, run)
    duplicates = found["run-duplicate-pairs"]
    assert (duplicates.severity, duplicates.count) == ("error", 2)   # lines 6 and 7
    assert duplicates.details == {"with_another_score": 1}           # line 7 scores d03 0.5, line 3 said 3.0
    assert duplicates.examples[0] == f"{run}:6: query 'q1', doc 'd01': first on line 1, the same score"
    assert "appears twice" in report.runs[0].refused                 # what eval would have said, and stopped at
    assert report.runs[0].sha256 == hashlib.sha256(run.read_bytes()).hexdigest()


def test_nan_inf_and_non_numeric_scores_and_malformed_lines(dataset, tmp_path):
    run = write_run(tmp_path / "nan.trec", [*clean_rows(), "q1 Q0 d06 3 nan hand", "q1 Q0 d07 4 -inf hand",
                                            "q2 Q0 d08 2 0,5 hand", "q2 Q0 d09 3 hand", "q3 d10 1.0"])
    report, found = run_findings(dataset, run)
    scores = found["run-bad-scores"]
    assert (scores.severity, scores.count, scores.details) == ("error", 3, {"not_finite": 2, "not_a_number": 1})
    assert scores.examples[0] == f"{run}:6: query 'q1', doc 'd06': score 'nan' is not finite"
    malformed = found["run-malformed-lines"]                        # lines 9 (5 fields) and 10 (3 fields)
    assert (malformed.severity, malformed.count) == ("error", 2)
    assert [e.split(":")[1] for e in malformed.examples] == ["9", "10"]
    assert report.runs[0].refused.startswith(f"{run}:6:")            # eval stops at the first; check counts all 5
    assert report.runs[0].pairs == 5                                # the readable lines are still checked


def test_nan_in_a_gzipped_run(dataset, tmp_path):
    path = tmp_path / "run.trec.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d01 1 NaN t\nq2 Q0 d03 1 1.0 t\n"))
    _, found = run_findings(dataset, path)
    assert found["run-bad-scores"].count == 1


def test_the_json_layout_counts_repeated_keys_nan_and_string_scores(dataset, tmp_path):
    """Pyserini/ranx JSON: json.loads would let the repeated key win silently; check counts it."""
    run = tmp_path / "run.json"
    run.write_text('{"q1": {"d01": 2, "d01": 1, "d02": NaN, "d03": "1.5"}, "q2": {"d03": 1}, "q3": {"d04": 1}}')
    report, found = run_findings(dataset, run)
    assert report.runs[0].format == "json"
    assert (found["run-duplicate-pairs"].count, found["run-duplicate-pairs"].details) == (1, {"with_another_score": 1})
    assert (found["run-bad-scores"].count, found["run-bad-scores"].details) == (2, {"not_finite": 1, "not_a_number": 1})
    assert report.runs[0].refused is not None and report.runs[0].pairs == 3


def test_an_ms_marco_run_is_checked_as_the_reader_scores_it(dataset, tmp_path):
    """qid docno rank: the one reader turns ranks into 1/rank; no tie, no error."""
    run = tmp_path / "run.tsv"
    run.write_text("".join(f"q1\td{n:02d}\t{n}\n" for n in range(1, 13)) + "q2\td03\t1\nq3\td04\t1\n")
    report, found = run_findings(dataset, run)
    assert (report.runs[0].format, report.runs[0].refused, len(report.runs[0].sha256)) == ("msmarco", None, 64)
    assert set(found) == {"run-judged-at-10"}
    # q1's top 10 by rank is d01-d10, of which d01 and d02 are judged: 2/10; q2 1/1; q3 1/1
    assert found["run-judged-at-10"].details["judged_at_k"] == pytest.approx((0.2 + 1 + 1) / 3)


# -- 5. a query scored against its own id (BEIR's rule) ------------------------------------------

def test_a_query_scored_against_its_own_id(dataset, tmp_path):
    run = write_run(tmp_path / "self.trec", [*clean_rows(), ("q3", "q3", 9.0)])
    report, found = run_findings(dataset, run)
    identical = found["run-identical-ids"]
    assert (identical.severity, identical.count) == ("warning", 1)
    assert identical.examples == [f"{run}:6: query 'q3', doc 'q3'"] and "dropped" in identical.message
    assert not report.has_errors                                    # doc 'q3' is in the corpus: not an error
    # dropped (the default), q3's top 10 is d04, d05: both judged; kept, 'q3' is unjudged: 2 of 3
    assert found["run-judged-at-10"].details["judged_at_k"] == pytest.approx((1 + 1 + 1) / 3)
    _, kept = run_findings(dataset, run, keep_identical_ids=True)
    assert "kept" in kept["run-identical-ids"].message
    assert kept["run-judged-at-10"].details["judged_at_k"] == pytest.approx((1 + 1 + 2 / 3) / 3)


def test_an_own_id_the_corpus_lacks_is_no_unknown_doc_while_dropped(dataset, tmp_path):
    """Pyserini's --remove-query runs hold the query's own id by design: dropped, it is not an error."""
    run = write_run(tmp_path / "self.trec", [("q1", "q1", 9.0), *clean_rows()])
    report, found = run_findings(dataset, run)
    assert "run-unknown-docs" not in found and not report.has_errors
    assert found["run-identical-ids"].message.endswith("1 of these ids is not in the corpus at all")
    _, kept = run_findings(dataset, run, keep_identical_ids=True)   # scored, it is a doc the corpus lacks
    assert (kept["run-unknown-docs"].count, kept["run-unknown-docs"].examples) == (1, [f"{run}:1: query 'q1', doc 'q1'"])


# -- 6. ties across the cutoff -----------------------------------------------------------------

def tie_rows():
    """q1: 12 docs, d01-d08 at distinct scores, d09-d12 tied at 1.0 over ranks 9-12, written in
    ascending id order (ranks 9, 10 given to d09, d10). q2: 11 docs, a tie of d10/d11 over ranks
    10-11 written in the tie rule's order. q3: a tie at ranks 3-4 only (10 docs: nothing beyond 10)."""
    q1 = [("q1", f"d{n:02d}", 10.0 - n) for n in range(1, 9)] + [("q1", f"d{n:02d}", 1.0) for n in range(9, 13)]
    q2 = [("q2", f"d{n:02d}", 20.0 - n) for n in range(1, 10)] + [("q2", "d11", 0.5), ("q2", "d10", 0.5)]
    q3 = [("q3", f"d{n:02d}", 7.5) if n in (3, 4) else ("q3", f"d{n:02d}", 10.0 - n) for n in range(1, 11)]
    return q1 + q2 + q3


def test_ties_across_the_cutoff(dataset, tmp_path):
    run = write_run(tmp_path / "ties.trec", tie_rows())
    _, found = run_findings(dataset, run)
    ties = found["run-ties-at-10"]
    # by hand: q1 and q2 have ranks 10 and 11 at one score; q3 has only 10 docs
    assert (ties.severity, ties.count) == ("warning", 2)
    assert ties.details == {"cutoff": 10, "queries_ranked_beyond": 2, "tied_documents": 6, "file_ranks_disagree": 1}
    assert ties.examples[0].endswith("query 'q1': 4 docs at score 1.0, ranks 9-12; kept 'd12', 'd11'; cut 'd10', 'd09'; "
                                     "the file's ranks keep others")
    assert ties.examples[1].endswith("query 'q2': 2 docs at score 0.5, ranks 10-11; kept 'd11'; cut 'd10'")
    assert "run-ties-at-100" not in found


def test_the_tie_rule_keeps_what_trec_eval_keeps(dataset, tmp_path):
    """Independent: trec_eval's P@10 with one relevant doc of q1's tie tells which side of rank 10 it is on."""
    run = {}
    for query, doc, score in tie_rows():
        run.setdefault(query, {})[doc] = float(score)
    for doc, kept in (("d12", True), ("d11", True), ("d10", False), ("d09", False)):
        evaluator = pytrec_eval.RelevanceEvaluator({"q1": {doc: 1}}, {"P_10"})
        assert (evaluator.evaluate({"q1": run["q1"]})["q1"]["P_10"] > 0) is kept, doc


# -- qrels mistakes ------------------------------------------------------------------------------

def test_qrels_mistakes(tmp_path):
    lines = ["q1\td01\t1", "q1\td01\t1", "q1\td02\t0", "q1\td02\t2", "q2\td03\t0", "q2\tzz\t1",
             "q9\td04\t1", "q3\td04", "q3\td05\tmaybe", "q3\td04\t1"]
    root = write_dataset(tmp_path / "badqrels", lines)
    report = check_runs(root)
    found = codes(report.findings)
    qrels = root / "qrels" / "test.tsv"
    assert (found["qrels-duplicate-pairs"].severity, found["qrels-duplicate-pairs"].count) == ("warning", 1)    # line 3
    assert found["qrels-duplicate-pairs"].examples == [f"{qrels}:3: query 'q1', doc 'd01': first on line 2, the same label 1"]
    assert (found["qrels-conflicting-labels"].severity, found["qrels-conflicting-labels"].count) == ("error", 1)  # line 5
    assert (found["qrels-malformed-lines"].severity, found["qrels-malformed-lines"].count) == ("error", 2)      # lines 9, 10
    assert (found["qrels-unknown-docs"].count, found["qrels-unknown-docs"].examples) == (1, [f"{qrels}:7: query 'q2', doc 'zz'"])
    assert (found["qrels-unknown-queries"].count, found["qrels-unknown-queries"].examples) == (1, [f"{qrels}:8: query 'q9'"])
    assert "qrels-no-relevant" not in found   # q1 d01, q2 zz, q3 d04 and q9 d04 are each labelled 1
    assert report.has_errors


def test_a_query_without_any_relevant_doc(tmp_path):
    root = write_dataset(tmp_path / "norel", ["q1\td01\t1", "q2\td03\t0", "q2\td04\t0", "q3\td04\t1"])
    found = codes(check_runs(root).findings)
    assert (found["qrels-no-relevant"].severity, found["qrels-no-relevant"].count) == ("warning", 1)
    assert found["qrels-no-relevant"].examples == [f"{root / 'qrels' / 'test.tsv'}:3: query 'q2'"]


def test_qrels_of_another_dataset_are_an_error(tmp_path):
    root = write_dataset(tmp_path / "otherqrels", ["PLAIN-1\td01\t1", "PLAIN-2\td02\t1"])
    found = codes(check_runs(root).findings)
    assert (found["qrels-unknown-queries"].severity, found["qrels-unknown-queries"].count) == ("error", 2)


def test_a_run_of_unknown_queries_misses_every_split_query(dataset, tmp_path):
    _, found = run_findings(dataset, write_run(tmp_path / "other.trec", [("x1", "d01", 1.0), ("x2", "d02", 1.0)]))
    assert (found["run-unknown-queries"].severity, found["run-unknown-queries"].count) == ("error", 2)
    assert found["run-missing-queries"].count == 3 and "run-wrong-split" not in found


# -- the command: exit codes, the table, --json ---------------------------------------------------

def test_the_command_names_each_mistake_and_exits_1(dataset, tmp_path, capsys):
    runs = {"v2.trec": [("q1", "v2-d01", 1.0), ("q2", "d03", 1.0), ("q3", "d04", 1.0)],
            "train.trec": [("q4", "d06", 1.0)],
            "dup.trec": [*clean_rows(), ("q1", "d01", 3.0)],
            "nan.trec": [*clean_rows(), "q1 Q0 d06 3 nan hand"],
            "self.trec": [*clean_rows(), ("q3", "q3", 9.0)],
            "ties.trec": tie_rows()}
    paths = [str(write_run(tmp_path / name, rows)) for name, rows in runs.items()]
    out = tmp_path / "out" / "check.json"
    assert main(["check", str(dataset), *paths, "--json", str(out)]) == 1
    table = capsys.readouterr().out
    for code in ("run-unknown-docs", "run-wrong-split", "run-duplicate-pairs", "run-bad-scores", "run-identical-ids",
                 "run-ties-at-10"):
        assert code in table
    saved = json.loads(out.read_text())
    named = {Path(run["path"]).name: [f["code"] for f in run["findings"] if f["code"] != "run-judged-at-10"]
             for run in saved["runs"]}
    assert named == {"v2.trec": ["run-unknown-docs"], "train.trec": ["run-wrong-split"], "dup.trec": ["run-duplicate-pairs"],
                     "nan.trec": ["run-bad-scores"], "self.trec": ["run-identical-ids"], "ties.trec": ["run-ties-at-10"]}
    assert saved["summary"] == {"errors": 4, "warnings": 2, "infos": 5}
    assert [p.name for p in out.parent.iterdir()] == ["check.json"]      # no temporary left beside it


def test_clean_run_exits_0_and_warnings_alone_do_not_fail(dataset, tmp_path, capsys):
    assert main(["check", str(dataset), str(write_run(tmp_path / "clean.trec", clean_rows()))]) == 0
    assert main(["check", str(dataset), str(write_run(tmp_path / "ties.trec", tie_rows()))]) == 0
    assert "0 error(s), 1 warning(s)" in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["{dataset}", "{tmp}/missing.trec"], "file not found"),
    (["{tmp}/nowhere", "{run}"], "nowhere"),
    (["{dataset}", "{run}", "--split", "dev"], "split 'dev' not found; available: test, train"),
    (["{dataset}", "{run}", "--json", "{tmp}"], "is a folder"),
])
def test_usage_errors_exit_2_and_write_nothing(dataset, tmp_path, capsys, argv, says):
    run = write_run(tmp_path / "clean.trec", clean_rows())
    out = tmp_path / "report.json"
    filled = [a.format(dataset=dataset, tmp=tmp_path, run=run) for a in argv]
    assert main(["check", *filled, *([] if "--json" in filled else ["--json", str(out)])]) == 2
    assert says in capsys.readouterr().err
    assert not out.exists()


# -- a clean real run -----------------------------------------------------------------------------

def test_a_clean_scifact_bm25_run_reports_no_error(beir_dir, tmp_path, capsys):
    """BM25 from bm25s (not irforge's retriever) over all of SciFact, top 100 of the 300 test queries."""
    import bm25s
    import Stemmer

    root = beir_dir / "scifact"
    docs = [json.loads(line) for line in (root / "corpus.jsonl").open(encoding="utf-8")]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (root / "queries.jsonl").open(encoding="utf-8"))}
    qrels: dict[str, set[str]] = {}
    for line in (root / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, _ = line.split("\t")
        qrels.setdefault(query, set()).add(doc)
    test = sorted(qrels)
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize([d["title"] + " " + d["text"] for d in docs], stopwords="en", stemmer=stemmer,
                                   show_progress=False), show_progress=False)
    hits, scores = retriever.retrieve(bm25s.tokenize([queries[q] for q in test], stopwords="en", stemmer=stemmer,
                                                     show_progress=False), k=100, show_progress=False)
    run_path = tmp_path / "bm25.trec"
    ranking = {}
    with run_path.open("w") as handle:
        for query, row, values in zip(test, hits, scores):
            ranking[query] = sorted(((float(s), docs[i]["_id"]) for i, s in zip(row, values)), reverse=True)
            handle.writelines(f"{query} Q0 {docs[i]['_id']} {rank} {float(s)!r} bm25s\n"
                              for rank, (i, s) in enumerate(zip(row, values), start=1))
    out = tmp_path / "check.json"
    assert main(["check", str(root), str(run_path), "--json", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["summary"]["errors"] == 0 and saved["findings"] == []
    run = saved["runs"][0]
    assert (run["lines"], run["queries"], run["readable_by_eval"]) == (30_000, 300, True)
    # judged@10 computed here from the file, independently: share of each top 10 in the qrels
    expected = sum(sum(doc in qrels[q] for _, doc in ranking[q][:10]) / 10 for q in test) / len(test)
    judged = next(f for f in run["findings"] if f["code"] == "run-judged-at-10")
    assert judged["details"]["judged_at_k"] == pytest.approx(expected, abs=1e-12)
    assert judged["count"] == 300
