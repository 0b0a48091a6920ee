"""Quality control's rules on hand-made rankings and answers: votes, thresholds, cases, actions,
conflicts, the hard negatives file and the all-or-nothing output folder."""

from __future__ import annotations

import json

import pytest
from irforge.data.errors import DataFormatError
from irforge.judge.base import Judgement, Verdict
from irforge.judge.qc import writer
from irforge.judge.qc.decisions import (
    Action,
    Case,
    Question,
    decide,
    labelled_positive_questions,
    prelabelled_questions,
    resolve,
)
from irforge.judge.qc.hard_negatives import read_hard_negatives
from irforge.judge.qc.prelabel import PreLabel, Thresholds, prelabel, ranks_from_scores
from irforge.judge.qc.rerankers import parse_reranker_spec


def answer(label=None, verdict=Verdict.LABELLED, query_id="q1", doc_id="d1", error="") -> Judgement:
    return Judgement(query_id=query_id, doc_id=doc_id, verdict=verdict, label=label,
                     raw_output="" if label is None else str(label), backend="openai-chat", model="m",
                     template_sha256="t", judge_id="j", error=error)


def question(case, query_id="q1", doc_id="d1", label=None) -> Question:
    return Question(case, query_id, doc_id, label, PreLabel({"bm25": 1}, 10, 1))


# --- ranks and votes -------------------------------------------------------------------------

def test_ranks_break_ties_by_doc_id_descending():
    assert ranks_from_scores({"a": 1.0, "b": 1.0, "c": 2.0, "b2": 0.5}) == {"c": 1, "b": 2, "a": 3, "b2": 4}


def test_a_constant_scorer_ranks_by_doc_id_descending_not_input_order():
    assert list(ranks_from_scores(dict.fromkeys(["d1", "d3", "d2"], 0.0))) == ["d3", "d2", "d1"]


def ranks_at(**positions):
    """reranker name -> {doc: rank} for a single document d."""
    return {name: ({"d": rank} if rank is not None else {}) for name, rank in positions.items()}


@pytest.mark.parametrize(("positions", "positive"), [
    ({"r1": 1, "r2": 10, "r3": 11}, True),       # 2 of 3 within 10
    ({"r1": 1, "r2": 11, "r3": 11}, False),      # 1 of 3
    ({"r1": 1, "r2": 2}, True),                  # 2 of 2
    ({"r1": 1, "r2": 11}, False),                # half is not more than half
    ({"r1": 1, "r2": 2, "r3": None, "r4": 50}, False),  # 2 of 4: not more than half; None = not recalled
    ({"r1": 3}, True),
])
def test_majority_vote_needs_more_than_half(positions, positive):
    votes = prelabel(ranks_at(**positions), "d", threshold=10)
    assert votes.positive is positive
    assert votes.rerankers == len(positions)


def test_the_threshold_is_inclusive_and_hard_negatives_get_twenty():
    thresholds = Thresholds()
    assert prelabel(ranks_at(r=10), "d", thresholds.for_document(False)).positive
    assert not prelabel(ranks_at(r=11), "d", thresholds.for_document(False)).positive
    assert prelabel(ranks_at(r=20), "d", thresholds.for_document(True)).positive
    assert not prelabel(ranks_at(r=21), "d", thresholds.for_document(True)).positive


def test_thresholds_below_one_are_refused():
    with pytest.raises(ValueError, match="--threshold 0"):
        Thresholds(default=0)


# --- which pairs are asked --------------------------------------------------------------------

def test_every_labelled_positive_is_asked_recalled_or_not():
    ranks = {"r1": {"d1": 1}, "r2": {"d1": 30}}
    asked = labelled_positive_questions("q", {"d1": 2, "d2": 1, "d3": 0}, ranks, Thresholds())
    assert [(q.doc_id, q.case, q.qrels_label) for q in asked] == [("d1", Case.LABELLED_POSITIVE, 2), ("d2", Case.LABELLED_POSITIVE, 1)]
    assert asked[1].prelabel.ranks == {"r1": None, "r2": None}


def test_prelabelled_cases_use_their_own_threshold_and_skip_human_labels():
    # Two rerankers agree on ranks 15 for hn and x (hard negative: threshold 20 -> asked; unlabelled: 10 -> not).
    candidates = ["pos", "zero", "hn", "x", "new"]
    ranks = {"r1": {"pos": 1, "zero": 2, "hn": 15, "x": 15, "new": 3},
             "r2": {"pos": 1, "zero": 2, "hn": 15, "x": 15, "new": 4}}
    judged = {"pos": 2, "zero": 0, "hn": 0}
    asked = list(prelabelled_questions("q", candidates, judged, {"hn"}, ranks, Thresholds()))
    assert [(q.doc_id, q.case) for q in asked] == [("hn", Case.HARD_NEGATIVE), ("new", Case.UNLABELLED)]
    assert asked[0].prelabel.threshold == 20 and asked[1].prelabel.threshold == 10


# --- decisions ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("case", "label", "action"), [
    (Case.LABELLED_POSITIVE, 1, Action.DROP_QUERY),
    (Case.LABELLED_POSITIVE, 0, Action.DROP_QUERY),
    (Case.LABELLED_POSITIVE, 2, Action.NO_CHANGE),
    (Case.HARD_NEGATIVE, 2, Action.REMOVE_DOCUMENT),
    (Case.HARD_NEGATIVE, 1, Action.NO_CHANGE),
    (Case.UNLABELLED, 3, Action.ADD_POSITIVE),
    (Case.UNLABELLED, 1, Action.NO_CHANGE),
])
def test_a_label_decides_by_case(case, label, action):
    decision = decide(question(case), answer(label), relevant_from=2)
    assert decision.action is action and decision.decided


def test_relevant_from_is_configurable():
    assert decide(question(Case.LABELLED_POSITIVE), answer(1), relevant_from=1).action is Action.NO_CHANGE
    assert decide(question(Case.UNLABELLED), answer(2), relevant_from=3).action is Action.NO_CHANGE


@pytest.mark.parametrize("case", list(Case))
@pytest.mark.parametrize("verdict", [Verdict.UNPARSED, Verdict.FAILED])
def test_a_pair_without_a_label_changes_nothing(case, verdict):
    decision = decide(question(case), answer(None, verdict, error="endpoint down"), relevant_from=2)
    assert decision.action is Action.NO_CHANGE and not decision.decided
    assert verdict.value in decision.reason and "endpoint down" in decision.reason


def test_resolve_applies_actions_and_settles_conflicts():
    decisions = [
        decide(question(Case.LABELLED_POSITIVE, "q1", "p1", 1), answer(0), 2),        # drops q1
        decide(question(Case.UNLABELLED, "q1", "u1"), answer(3), 2),                    # q1 dropped: not added
        decide(question(Case.HARD_NEGATIVE, "q2", "hn1", 0), answer(3), 2),             # removed
        decide(question(Case.UNLABELLED, "q3", "hn1"), answer(3), 2),                   # its document is removed
        decide(question(Case.HARD_NEGATIVE, "q2", "hn2", 0), answer(3), 2),             # positive of q9: kept
        decide(question(Case.UNLABELLED, "q2", "u2"), answer(2), 2),                    # added
        decide(question(Case.UNLABELLED, "q2", "u3"), answer(None, Verdict.UNPARSED), 2),
    ]
    final, corrections = resolve(decisions, positive_of={"hn2": {"q9"}, "p1": {"q1"}})
    assert corrections.dropped_queries == {"q1"}
    assert corrections.removed_documents == {"hn1"}
    assert corrections.added_positives == {("q2", "u2"): 1}
    assert [d.action for d in final] == [Action.DROP_QUERY, Action.NO_CHANGE, Action.REMOVE_DOCUMENT, Action.NO_CHANGE,
                                         Action.NO_CHANGE, Action.ADD_POSITIVE, Action.NO_CHANGE]
    assert "query dropped" in final[1].reason and "removed from the corpus" in final[3].reason
    assert "labelled positive of query q9" in final[4].reason
    assert len(final) == len(decisions)


def test_nothing_decided_means_no_corrections():
    decisions = [decide(question(case), answer(None, Verdict.FAILED), 2) for case in Case]
    _, corrections = resolve(decisions, {})
    assert corrections.empty


# --- inputs ---------------------------------------------------------------------------------------

def test_hard_negatives_from_tsv_and_jsonl(tmp_path):
    tsv = tmp_path / "hn.tsv"
    tsv.write_text("query-id\tcorpus-id\tscore\nq1\td1\t0\nq1\td2\t0\nq2\td3\n")
    assert read_hard_negatives(tsv) == {"q1": {"d1": 2, "d2": 3}, "q2": {"d3": 4}}
    jsonl = tmp_path / "hn.jsonl"
    jsonl.write_text(json.dumps({"query_id": "q1", "doc_ids": ["d1", "d2"]}) + "\n" + json.dumps({"query_id": "q2", "doc_id": "d3"}) + "\n")
    assert read_hard_negatives(jsonl) == {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 2}}


@pytest.mark.parametrize(("name", "text", "message"), [
    ("hn.tsv", "q1\td1\t0\nq2\n", r"hn.tsv:2: expected query-id"),
    ("hn.jsonl", '{"query_id": "q1", "doc_ids": []}\n', r"hn.jsonl:1: `doc_ids` must be"),
    ("hn.jsonl", '{"query_id": "q1", "doc_ids": ["d1"]}\nnot json\n', r"hn.jsonl:2: malformed JSON"),
    ("hn.tsv", "query-id\tcorpus-id\n", "no hard negatives"),
])
def test_a_bad_hard_negatives_file_names_the_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataFormatError, match=message):
        read_hard_negatives(path)


@pytest.mark.parametrize(("text", "kind", "target", "options"), [
    ("bm25", "bm25", "", {}),
    ("bm25?k1=1.2&b=0.75", "bm25", "", {"k1": "1.2", "b": "0.75"}),
    ("dense:all-MiniLM-L6-v2?max_seq_length=64", "dense", "all-MiniLM-L6-v2", {"max_seq_length": "64"}),
    ("dense:grpc://127.0.0.1:50051", "dense", "grpc://127.0.0.1:50051", {}),
    ("listwise:http://127.0.0.1:8000/v1?model=gpt&api_key_env=KEY", "listwise", "http://127.0.0.1:8000/v1", {"model": "gpt", "api_key_env": "KEY"}),
])
def test_reranker_specs_parse(text, kind, target, options):
    spec = parse_reranker_spec(text)
    assert (spec.kind, spec.target, spec.options, spec.text) == (kind, target, options, text)


@pytest.mark.parametrize(("text", "message"), [
    ("colbert:x", "unknown kind 'colbert'"),
    ("dense", "needs a target"),
    ("bm25?k2=1", "unknown option"),
    ("listwise:http://x/v1", r"needs \?model="),
])
def test_bad_reranker_specs_are_refused_by_name(text, message):
    with pytest.raises(ValueError, match=message):
        parse_reranker_spec(text)


# --- the output folder ------------------------------------------------------------------------------

def test_out_dir_must_not_be_the_dataset_inside_it_or_around_it(tmp_path):
    dataset = tmp_path / "data" / "scifact"
    dataset.mkdir(parents=True)
    for out in (dataset, dataset / "qc", tmp_path / "data"):
        with pytest.raises(ValueError, match="--out"):
            writer.check_out_dir(dataset, out)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not an earlier `irforge qc` output"):
        writer.check_out_dir(dataset, foreign)
    writer.check_out_dir(dataset, tmp_path / "fresh")


def test_a_failure_half_way_leaves_no_output_and_the_earlier_one_intact(tmp_path):
    target = tmp_path / "out"
    with writer.staged_folder(target) as staged:
        (staged / writer.SUMMARY_NAME).write_text("{}")
    with pytest.raises(RuntimeError), writer.staged_folder(target) as staged:
        (staged / "corpus.jsonl").write_text("half")
        raise RuntimeError("killed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in target.iterdir()) == [writer.SUMMARY_NAME]


def test_qrels_rewrite_keeps_untouched_lines_byte_for_byte(tmp_path):
    source = tmp_path / "in.tsv"
    source.write_bytes(b"query-id\tcorpus-id\tscore\nq1\td1\t1.0\nq2\td2\t1\nq2\td9\t0")
    target = tmp_path / "out.tsv"
    removed, added = writer.rewrite_qrels(source, target, lambda q, d: d == "d9", [("q3", "d3", 1)])
    assert (removed, added) == (1, 1)
    assert target.read_bytes() == b"query-id\tcorpus-id\tscore\nq1\td1\t1.0\nq2\td2\t1\nq3\td3\t1\n"
    writer.rewrite_qrels(source, target, lambda q, d: False, [])
    assert target.read_bytes() == source.read_bytes()


# --- end to end on a real SciFact slice ---------------------------------------------------------------
# 40 SciFact test queries and ~340 documents (tests/conftest.py scifact_subset). The encoder runs
# for real (all-MiniLM-L6-v2): the corpus is encoded once per module into a shared embedding cache,
# so the later runs cost a model load and the judging. Rerankers: two BM25 settings and MiniLM.

RERANKERS = ["bm25", "bm25?k1=1.2&b=0.75", "dense:all-MiniLM-L6-v2"]
SEPARATOR = "\n<<document>>\n"


@pytest.fixture(scope="module", autouse=True)
def qc_stores(tmp_path_factory):
    """Embedding cache, vectors and BM25 indexes shared by this module's runs (the embedded judge
    reads the same cache through $IRFORGE_CACHE_DIR)."""
    root = tmp_path_factory.mktemp("qc-stores")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("CACHE", "VECTOR", "INDEX"):
            patch.setenv(f"IRFORGE_{name}_DIR", str(root / name.lower()))
        yield root


def run_qc(dataset, out, store, *extra, rerankers=RERANKERS, depth=30) -> dict:
    from irforge.cli.main import main

    argv = ["qc", "--dataset", str(dataset), "--out", str(out), "--recall-depth", str(depth), "--store", str(store), *extra]
    for reranker in rerankers:
        argv += ["--reranker", reranker]
    assert main(argv) == 0
    return json.loads((out / writer.SUMMARY_NAME).read_text())


def read_audit(out) -> list[dict]:
    return [json.loads(line) for line in (out / writer.AUDIT_NAME).read_text().splitlines()]


def check_consistent(source, out, summary) -> list[dict]:
    """What every QC output must satisfy, whatever the judge said."""
    from irforge.data import BeirDataset

    audit = read_audit(out)
    assert len(audit) == summary["decisions"] == sum(c["asked"] for c in summary["cases"].values())
    assert len({(r["query_id"], r["doc_id"]) for r in audit}) == len(audit), "one record per decision"
    original, corrected = BeirDataset.open(source), BeirDataset.open(out)
    before, after = original.qrels("test"), corrected.qrels("test")
    positives = {(q, d) for q, judged in before.items() for d, label in judged.items() if label > 0}
    assert {(r["query_id"], r["doc_id"]) for r in audit if r["case"] == "labelled_positive"} == positives
    corpus = {d.doc_id for d in corrected.corpus()}
    queries = {q.query_id for q in corrected.queries()}
    for record in audit:
        q, d, action = record["query_id"], record["doc_id"], record["action"]
        assert record["decided"] == (record["judge"]["verdict"] == "labelled")
        if not record["decided"]:
            assert action == "no change"
        votes = record["rerankers"]
        within = sum(1 for rank in votes["ranks"].values() if rank is not None and rank <= votes["threshold"])
        assert within == votes["votes"] and votes["rerankers"] == len(RERANKERS)
        if record["case"] != "labelled_positive":
            assert votes["positive"] and q not in summary["queries_dropped"]
            assert votes["threshold"] == (20 if record["case"] == "hard_negative" else 10)
        if action == "drop_query":
            assert record["judge"]["label"] < 2 and q not in after and q not in queries
        if action == "remove_document":
            assert d not in corpus and all(d not in judged for judged in after.values())
        if action == "add_positive":
            assert record["judge"]["label"] >= 2 and after[q][d] == 1
    assert set(after) == set(before) - set(summary["queries_dropped"])
    assert sum(len(j) for j in after.values()) == (sum(len(j) for j in before.values()) - summary["files"]["qrels_lines_removed"]
                                                   + len(summary["positives_added"]))
    assert corpus == {d.doc_id for d in original.corpus()} - set(summary["documents_removed"])
    return audit


def hard_negatives_file(dataset, query_ids, path):
    """Every document of the slice that is not a positive of the query, as its hard negative."""
    from irforge.data import BeirDataset

    source = BeirDataset.open(dataset)
    qrels = source.qrels("test")
    doc_ids = [d.doc_id for d in source.corpus()]
    path.write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t0\n" for q in query_ids for d in doc_ids if qrels[q].get(d, 0) <= 0))
    return path


def evaluates(dataset, out) -> dict:
    from irforge.cli.main import main

    assert main(["eval", "--dataset", str(dataset), "--retriever", "bm25", "--out", str(out)]) == 0
    return json.loads((out / "results.json").read_text())


def test_qc_with_the_embedded_judge_on_scifact(scifact_subset, tmp_path, capsys):
    query_ids = sorted(BeirQrels(scifact_subset))
    hard = hard_negatives_file(scifact_subset, query_ids[:20], tmp_path / "hard.tsv")
    store = tmp_path / "judgements.sqlite3"
    summary = run_qc(scifact_subset, tmp_path / "qc", store, "--hard-negatives", str(hard))
    assert "judge embedded: 0 calls (embedded judge, on this machine: no paid call needed), 0 from the store" in capsys.readouterr().out
    audit = check_consistent(scifact_subset, tmp_path / "qc", summary)

    cases = summary["cases"]
    assert cases["labelled_positive"]["asked"] == summary["labelled_positives"] > 0
    assert cases["hard_negative"]["asked"] > 0 and cases["unlabelled"]["asked"] > 0
    assert {r["query_id"] for r in audit if r["case"] == "hard_negative"} <= set(query_ids[:20])
    assert {r["query_id"] for r in audit if r["case"] == "unlabelled"} <= set(query_ids[20:])
    assert summary["undecided"] == 0 and summary["judge"]["identity"]["backend"] == "embedded"
    assert summary["judge"]["stats"]["pairs"] == len(audit) and summary["judge"]["stats"]["from_store"] == 0
    assert [r["spec"] for r in summary["rerankers"]] == RERANKERS
    print("embedded judge QC on the SciFact slice:", json.dumps(cases), "dropped", len(summary["queries_dropped"]),
          "removed", len(summary["documents_removed"]), "added", len(summary["positives_added"]))

    results = evaluates(tmp_path / "qc", tmp_path / "eval")
    assert results["evaluation"]["queries_evaluated"] == summary["queries"] - len(summary["queries_dropped"])

    # Asking again costs nothing (the store answers) and gives the same dataset.
    again = run_qc(scifact_subset, tmp_path / "qc2", store, "--hard-negatives", str(hard))
    assert again["judge"]["stats"]["from_store"] == again["judge"]["stats"]["pairs"] == len(audit)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", writer.AUDIT_NAME):
        assert (tmp_path / "qc2" / name).read_bytes().replace(b'"from_store": true', b'"from_store": false') == \
            (tmp_path / "qc" / name).read_bytes()


def BeirQrels(dataset):
    from irforge.data import BeirDataset

    return BeirDataset.open(dataset).qrels("test")


def prompt_parts(prompt: str) -> tuple[str, str]:
    """(query text, document text) of a "{query}SEPARATOR{document}" prompt: the judge quotes each
    value between <query>/<passage> lines (irforge.judge.template)."""
    query, _, document = prompt.partition(SEPARATOR)
    return query.removeprefix("<query>\n").removesuffix("\n</query>"), \
        document.removeprefix("<passage>\n").removesuffix("\n</passage>")


def slice_texts(dataset) -> tuple[dict[str, str], dict[str, str]]:
    """(query text -> query id, document text -> doc id) of a BEIR folder, to read a prompt back
    (texts as the prompt quotes them: invisible characters removed)."""
    from irforge.data import BeirDataset
    from irforge.judge.template import neutralised

    source = BeirDataset.open(dataset)
    return ({neutralised(q.text): q.query_id for q in source.queries()},
            {neutralised(d.full_text): d.doc_id for d in source.corpus()})


def test_qc_with_a_scripted_llm_judge_makes_each_decision_happen(scifact_subset, tmp_path, scripted_chat, llm_spec_file,
                                                                  fake_key, scripted_module):
    """Five queries' positives are judged 0 (dropped); ten queries get every other document as a
    hard negative, judged 3 (removed); on the rest an unlabelled document with an even id is judged 3
    (added) and one with an odd id gets garbage (undecided, no change)."""
    qrels = BeirQrels(scifact_subset)
    query_ids = sorted(qrels)
    drop, hard, rest = set(query_ids[:5]), set(query_ids[5:15]), set(query_ids[15:])
    hard_file = hard_negatives_file(scifact_subset, sorted(hard), tmp_path / "hard.tsv")
    query_of, doc_of = slice_texts(scifact_subset)

    def respond(prompt: str):
        query_text, document = prompt_parts(prompt)
        q, d = query_of[query_text], doc_of[document]
        if qrels[q].get(d, 0) > 0:
            return "0" if q in drop else "3"
        if q in rest and int(d) % 2:
            return "garbage, not a label"
        return "3"

    scripted_chat.responder = respond
    spec = llm_spec_file(template="{query}" + SEPARATOR + "{document}", max_unparsed_retries=1,
                         price_per_million_prompt_tokens=1.0)
    summary = run_qc(scifact_subset, tmp_path / "qc", tmp_path / "store.sqlite3", "--judge", str(spec),
                     "--hard-negatives", str(hard_file))
    audit = check_consistent(scifact_subset, tmp_path / "qc", summary)

    assert set(summary["queries_dropped"]) == drop
    assert {r["query_id"] for r in audit} - drop == set(query_ids) - drop
    assert all(r["case"] == "labelled_positive" for r in audit if r["query_id"] in drop), "no call spent on a dropped query"
    hard_records = [r for r in audit if r["case"] == "hard_negative"]
    assert hard_records and {r["query_id"] for r in hard_records} <= hard
    assert all(r["action"] == "remove_document" or "labelled positive of query" in r["reason"] for r in hard_records)
    assert summary["documents_removed"]
    unlabelled = [r for r in audit if r["case"] == "unlabelled"]
    added = [r for r in unlabelled if r["action"] == "add_positive"]
    undecided = [r for r in unlabelled if not r["decided"]]
    kept_out = [r for r in unlabelled if r["decided"] and r["action"] == "no change"]
    assert added and undecided and len(added) + len(undecided) + len(kept_out) == len(unlabelled)
    # An even document judged 3 but removed from the corpus as another query's hard negative is not added.
    assert all(r["doc_id"] in summary["documents_removed"] and "removed from the corpus" in r["reason"] for r in kept_out)
    assert all(int(r["doc_id"]) % 2 == 0 for r in added) and all(int(r["doc_id"]) % 2 for r in undecided)
    assert all(r["judge"]["verdict"] == "unparsed" and r["judge"]["raw_output"] == "garbage, not a label" for r in undecided)
    assert all(isinstance(r["judge"]["record_id"], int) for r in audit if r["decided"])
    assert summary["undecided"] == len(undecided)
    assert sorted((p["query_id"], p["doc_id"]) for p in summary["positives_added"]) == sorted((r["query_id"], r["doc_id"]) for r in added)

    stats = summary["judge"]["stats"]
    assert stats["calls"] == len(scripted_chat.chat_requests) == len(audit) + len(undecided)  # one re-ask per garbage answer
    assert stats["cost_usd"] > 0 and stats["unparsed"] == len(undecided)
    for path in (tmp_path / "qc").rglob("*"):
        if path.is_file():
            assert fake_key not in path.read_text(), f"the API key leaked into {path}"


def test_a_judge_that_never_answers_leaves_the_dataset_identical(scifact_tiny, tmp_path, scripted_chat, llm_spec_file,
                                                                  scripted_module):
    scripted_chat.responder = lambda prompt: scripted_module.status(500)
    spec = llm_spec_file(max_retries=1)
    summary = run_qc(scifact_tiny, tmp_path / "qc", tmp_path / "store.sqlite3", "--judge", str(spec), depth=20)
    assert summary["decisions"] > 0 and summary["undecided"] == summary["decisions"]
    assert summary["judge"]["stats"]["failed"] == summary["decisions"] and scripted_chat.chat_requests
    assert summary["changed"] is False
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (tmp_path / "qc" / name).read_bytes() == (scifact_tiny / name).read_bytes(), name
    assert all(r["action"] == "no change" and r["judge"]["verdict"] == "failed" for r in read_audit(tmp_path / "qc"))


def test_out_inside_the_dataset_is_refused_before_any_work(scifact_tiny, capsys):
    from irforge.cli.main import main

    assert main(["qc", "--dataset", str(scifact_tiny), "--out", str(scifact_tiny / "qc")]) == 2
    assert "inside the input dataset" in capsys.readouterr().err
    assert not (scifact_tiny / "qc").exists()


@pytest.mark.parametrize(("flags", "message"), [
    (["--hard-negatives", "missing.tsv"], "--hard-negatives missing.tsv: file not found"),
    (["--relevant-from", "4"], "--relevant-from must be a label 1-3"),
    (["--recall-depth", "0"], "--recall-depth must be at least 1"),
    (["--threshold", "0"], "thresholds must be at least 1"),
    (["--reranker", "bm25", "--reranker", "bm25"], "--reranker given twice"),
])
def test_bad_flags_are_refused_by_name(scifact_tiny, tmp_path, capsys, flags, message):
    from irforge.cli.main import main

    assert main(["qc", "--dataset", str(scifact_tiny), "--out", str(tmp_path / "qc"), "--store", str(tmp_path / "s"), *flags]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "qc").exists()


def test_a_listwise_llm_reranker_votes_with_its_own_order(scifact_tiny, tmp_path, scripted_chat, llm_spec_file):
    """RankGPT's answer "[2] > [1]" swaps the first two recalled candidates and keeps the rest."""
    scripted_chat.responder = lambda prompt: "2" if SEPARATOR in prompt else "[2] > [1]"
    spec = llm_spec_file(template="{query}" + SEPARATOR + "{document}")
    listwise = f"listwise:{scripted_chat.url}?model=scripted-ranker"
    rerankers = ["bm25", "dense:all-MiniLM-L6-v2", listwise]
    summary = run_qc(scifact_tiny, tmp_path / "qc", tmp_path / "store.sqlite3", "--judge", str(spec),
                     rerankers=rerankers, depth=10)
    assert [r["spec"] for r in summary["rerankers"]] == rerankers
    assert summary["rerankers"][2]["kind"] == "listwise" and summary["rerankers"][2]["reranker"]["kind"] == "listwise-llm"
    audit = check_consistent(scifact_tiny, tmp_path / "qc", summary)
    ranked_pairs = [(r["recall_rank"], r["rerankers"]["ranks"][listwise]) for r in audit if r["recall_rank"] is not None]
    assert ranked_pairs and all(rank == {1: 2, 2: 1}.get(recall, recall) for recall, rank in ranked_pairs)
    listwise_prompts = [r for r in scripted_chat.chat_requests if SEPARATOR not in r.prompt]
    assert len(listwise_prompts) == summary["queries"]  # one window of 10 per query


def test_recall_and_dense_reranking_through_a_running_models_service(scifact_tiny, tmp_path, scripted_chat, llm_spec_file):
    """The encoder served by `irforge service models` (gRPC, loopback) gives the same dataset and audit
    as the in-process encoder (a fresh embedding cache makes the remote one really encode)."""
    from irforge.models.encoder import EncoderCore, EncoderSpec
    from irforge.models.server import start_encoder_server

    spec = llm_spec_file()  # the scripted server's default answers: a label fixed by each prompt's hash
    local = run_qc(scifact_tiny, tmp_path / "local", tmp_path / "store-local.sqlite3", "--judge", str(spec),
                   rerankers=["bm25", "dense:all-MiniLM-L6-v2"], depth=15)
    running = start_encoder_server({"all-MiniLM-L6-v2": EncoderCore(EncoderSpec("all-MiniLM-L6-v2"))})
    try:
        address = f"127.0.0.1:{running.port}"
        remote = run_qc(scifact_tiny, tmp_path / "remote", tmp_path / "store-remote.sqlite3", "--judge", str(spec),
                        "--encoder-server", address, "--embedding-cache", str(tmp_path / "fresh.sqlite3"),
                        rerankers=["bm25", f"dense:grpc://{address}"], depth=15)
    finally:
        running.stop(grace=0)
    assert (local["mode"]["recall_encoder"], remote["mode"]["recall_encoder"]) == ("in-process", f"grpc {address}")
    assert remote["rerankers"][1]["encoder"]["location"] == f"grpc {address}"
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (tmp_path / "remote" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    strip = lambda records: [{**r, "rerankers": {**r["rerankers"], "ranks": list(r["rerankers"]["ranks"].values())}}
                             for r in records]
    assert strip(read_audit(tmp_path / "remote")) == strip(read_audit(tmp_path / "local"))


def test_a_cross_encoder_votes_the_same_in_process_and_through_the_reranker_service(
        scifact_tiny, tmp_path, scripted_chat, llm_spec_file, cross_encoder_dir):
    import yaml
    from irforge.models.reranker import CrossEncoderReranker, RerankerSpec
    from irforge.models.reranker_server import start_reranker_server

    running = start_reranker_server({"minilm-ce": CrossEncoderReranker(RerankerSpec(str(cross_encoder_dir)))})
    try:
        endpoint = tmp_path / "rerank.yaml"
        endpoint.write_text(yaml.safe_dump({"kind": "rerank-grpc", "url": f"127.0.0.1:{running.port}", "model": "minilm-ce"}))
        local, served = f"cross-encoder:{cross_encoder_dir}", f"endpoint:{endpoint}"
        summary = run_qc(scifact_tiny, tmp_path / "qc", tmp_path / "store.sqlite3", "--judge", str(llm_spec_file()),
                         rerankers=["bm25", local, served], depth=10)
    finally:
        running.stop(grace=0)
    assert [r["kind"] for r in summary["rerankers"]] == ["bm25", "cross-encoder", "endpoint"]
    assert summary["rerankers"][2]["reranker"]["kind"] == "rerank-grpc"
    audit = check_consistent(scifact_tiny, tmp_path / "qc", summary)
    recalled = [r for r in audit if r["recall_rank"] is not None]
    assert recalled and all(r["rerankers"]["ranks"][local] == r["rerankers"]["ranks"][served] for r in recalled)
    assert all(1 <= r["rerankers"]["ranks"][local] <= 10 for r in recalled)


def test_bm25_ranks_within_the_thresholds_are_exact_however_shallow_the_search(scifact_subset, tmp_path):
    """A 160-deep BM25 search misses some candidates: they score 0 below the returned ones, and a
    query with fewer than `needed` candidates returned is searched again over the whole corpus, so
    the top `needed` ranks equal those of scoring every document."""
    from irforge.common.progress import no_progress
    from irforge.corpus.core import CorpusService
    from irforge.corpus.lexical import make_backend
    from irforge.data import BeirDataset
    from irforge.judge.qc.rerankers import Bm25Scorer
    from irforge.pipeline.retrievers import CorpusTracker

    dataset = BeirDataset.open(scifact_subset)
    corpus = CorpusService(make_backend("embedded", index_dir=tmp_path / "bm25"))
    queries, doc_ids = list(dataset.queries()), [d.doc_id for d in dataset.corpus()]
    candidates = {q.query_id: doc_ids[(7 * i) % 290:(7 * i) % 290 + 40] for i, q in enumerate(queries)}
    shallow = Bm25Scorer(parse_reranker_spec("bm25"), corpus, no_progress, needed=20, first_k=0)  # k = 4 x 40
    whole = Bm25Scorer(parse_reranker_spec("bm25"), corpus, no_progress, needed=20, first_k=10**9)
    for scorer in (shallow, whole):
        scorer.prepare(dataset, dataset.corpus_fingerprint(), CorpusTracker(judged=set()))
    returned = shallow.retriever.retrieve(queries, 160)
    found = [sum(d in returned[q.query_id] for d in candidates[q.query_id]) for q in queries]
    assert any(n < 20 for n in found) and any(20 <= n < 40 for n in found)  # both paths are exercised

    got, expected = shallow.score(queries, candidates, {}), whole.score(queries, candidates, {})
    assert shallow.researched == sum(n < 20 for n in found)
    for query in queries:
        top = lambda scores: [d for d, rank in ranks_from_scores(scores[query.query_id]).items() if rank <= 20]
        assert top(got) == top(expected), query.query_id


def test_other_splits_stay_as_they_are_and_keep_their_queries(scifact_tiny, tmp_path, scripted_chat, llm_spec_file):
    """The first query's positive is judged 0: it leaves qrels/test.tsv, but qrels/dev.tsv (copied
    byte for byte) still uses it, so it stays in queries.jsonl."""
    import shutil

    dataset = tmp_path / "tiny"
    shutil.copytree(scifact_tiny, dataset)
    qrels = BeirQrels(dataset)
    first = sorted(qrels)[0]
    some_doc = next(iter(qrels[first]))
    (dataset / "qrels" / "dev.tsv").write_bytes(f"query-id\tcorpus-id\tscore\n{first}\t{some_doc}\t1\r\n".encode())
    query_of, _ = slice_texts(dataset)
    scripted_chat.responder = lambda prompt: "0" if query_of[prompt_parts(prompt)[0]] == first else "3"
    spec = llm_spec_file(template="{query}" + SEPARATOR + "{document}")
    summary = run_qc(dataset, tmp_path / "qc", tmp_path / "store.sqlite3", "--judge", str(spec), depth=10)

    assert summary["queries_dropped"] == [first]
    assert (tmp_path / "qc" / "qrels" / "dev.tsv").read_bytes() == (dataset / "qrels" / "dev.tsv").read_bytes()
    assert first not in BeirQrels(tmp_path / "qc")
    assert (tmp_path / "qc" / "queries.jsonl").read_bytes() == (dataset / "queries.jsonl").read_bytes()
    assert summary["files"]["queries_removed_from_queries_jsonl"] == 0
