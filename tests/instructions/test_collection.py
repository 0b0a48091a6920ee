"""Instruction-following collections: the InfoSearch, FollowIR and InstructIR layouts told apart by
their files, folders of dimensions, and every refusal named by file (and line)."""

import gzip
import itertools
import json
from pathlib import Path

import pytest

from irforge.common.allowed_roots import OutsideAllowedRoots, enforced
from irforge.data import DataFormatError
from irforge.instructions.collection import MODES, InstructionQuery, open_instruction_collections

CORPUS = ('{"_id": "d1", "title": "Heart", "text": "A paper for doctors."}\n'
          '{"_id": "d2", "title": "Heart", "text": "A blog post for patients."}\n'
          '{"_id": "d3", "text": "Unrelated."}\n')
QRELS_HEADER = "query-id\tcorpus-id\tscore\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_gz(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(text)
    return path


def lines(*objects: dict) -> str:
    return "".join(json.dumps(obj) + "\n" for obj in objects)


def infosearch(root: Path, modes=MODES, split="test") -> Path:
    """Two queries; q2 has no judgement in the reversed mode."""
    write(root / "corpus.jsonl", CORPUS)
    write(root / "queries.jsonl", lines(
        {"_id": "q1", "text": "heart disease", "instruction_og": "", "instruction_changed": "for doctors",
         "instruction_reversed": "not for doctors", "dimension": "audience", "keywords": ["heart"],
         "short_query": "heart", "metadata": {"source": "x"}},
        {"_id": "q2", "text": "blood pressure", "instruction_og": "", "instruction_changed": "for patients",
         "instruction_reversed": "not for patients"},
    ))
    judgements = {"og": "q1\td1\t1\nq1\td2\t1\nq2\td2\t1\n",
                  "changed": "q1\td1\t1\nq1\td2\t0\nq2\td2\t1\n",
                  "reversed": "q1\td2\t1\n"}
    for mode in modes:
        write(root / f"qrels_{mode}" / f"{split}.tsv", QRELS_HEADER + judgements[mode])
    return root


def followir(root: Path) -> Path:
    infosearch(root, modes=("og", "changed"))
    write(root / "queries.jsonl", lines(
        {"_id": "q1", "text": "heart disease", "instruction_og": "papers only", "instruction_changed": "papers for doctors"},
        {"_id": "q2", "text": "blood pressure", "instruction_og": "any", "instruction_changed": "for patients"},
    ))
    return root


def instructir(root: Path) -> Path:
    write(root / "corpus.jsonl", CORPUS)
    write(root / "queries.jsonl", lines(
        {"_id": "q1_0", "text": "heart disease", "instruction": "I am a doctor."},
        {"_id": "q1_1", "text": "heart disease", "instruction": "I am a patient."},
        {"_id": "my_q_2_7", "text": "blood pressure, explained for a child"},
        {"_id": "q9_0", "text": "not in the split"},
    ))
    write(root / "qrels" / "test.tsv", QRELS_HEADER + "q1_0\td1\t1\nq1_1\td2\t1\nmy_q_2_7\td2\t2\n")
    return root


def error_of(call, *args, **kwargs) -> DataFormatError:
    with pytest.raises(DataFormatError) as caught:
        call(*args, **kwargs)
    return caught.value


def only(path: Path, split: str = "test"):
    [collection] = open_instruction_collections(path, split)
    return collection


# --- the layouts read ---------------------------------------------------------------------------

def test_infosearch_layout(tmp_path):
    collection = only(infosearch(tmp_path / "audience"))
    assert (collection.layout, collection.modes, collection.dimension, collection.split) == (
        "infosearch", ("og", "changed", "reversed"), "audience", "test")
    assert collection.top_ranked_path is None
    q1, q2 = collection.queries()
    assert q1 == InstructionQuery(
        query_id="q1", text="heart disease",
        instructions={"og": "", "changed": "for doctors", "reversed": "not for doctors"}, group="q1",
        fields={"dimension": "audience", "keywords": ["heart"], "short_query": "heart", "metadata": {"source": "x"}})
    assert (q2.query_id, q2.group, q2.fields) == ("q2", "q2", {})
    assert q1.text_for("og") == "heart disease" and q1.text_for("changed") == "heart disease for doctors"
    qrels = collection.qrels()
    assert set(qrels) == set(MODES)
    assert qrels["changed"]["q1"] == {"d1": 1, "d2": 0} and qrels["reversed"] == {"q1": {"d2": 1}}
    assert collection.problems() == {"unknown_queries": 0, "examples": [],
                                     "queries_without_qrels": {"changed": 0, "reversed": 1},
                                     "ignored_queries": {"changed": 0, "reversed": 0}}
    assert [d.doc_id for d in collection.dataset.corpus()] == ["d1", "d2", "d3"]


def test_followir_layout_with_top_ranked(tmp_path):
    root = followir(tmp_path / "core17")
    write(root / "top_ranked.jsonl", lines({"qid": "q1", "pid": ["d1", "d2"]}))
    collection = only(root)
    assert (collection.layout, collection.modes) == ("followir", ("og", "changed"))
    assert collection.top_ranked_path == root / "top_ranked.jsonl"
    assert [q.instructions for q in collection.queries()] == [
        {"og": "papers only", "changed": "papers for doctors"}, {"og": "any", "changed": "for patients"}]
    assert set(collection.qrels()) == {"og", "changed"}


def test_followir_without_top_ranked(tmp_path):
    assert only(followir(tmp_path / "f")).top_ranked_path is None


def test_instructir_layout_groups_and_instructions(tmp_path):
    collection = only(instructir(tmp_path / "instructir"))
    assert (collection.layout, collection.modes) == ("instructir", ("instructed",))
    queries = collection.queries()
    assert [(q.query_id, q.group, q.instructions) for q in queries] == [
        ("q1_0", "q1", {"instructed": "I am a doctor."}),
        ("q1_1", "q1", {"instructed": "I am a patient."}),
        ("my_q_2_7", "my_q_2", {"instructed": ""}),  # base = before the last underscore; text holds the instruction
    ]
    assert queries[0].text_for("instructed") == "heart disease I am a doctor."
    assert set(collection.qrels()) == {"instructed"}
    assert collection.problems()["unknown_queries"] == 0
    assert collection.problems()["queries_without_qrels"] == {}


def test_queries_of_the_og_qrels_missing_from_queries_jsonl_are_counted(tmp_path):
    root = infosearch(tmp_path / "c")
    write(root / "qrels_og" / "test.tsv", "q1\td1\t1\nq7\td1\t1\nq8\td2\t1\n")
    write(root / "qrels_changed" / "test.tsv", "q1\td1\t1\nq7\td1\t1\n")
    collection = only(root)
    assert [q.query_id for q in collection.queries()] == ["q1"]  # q2 is not in the og qrels: not in the split
    problems = collection.problems()
    assert problems["unknown_queries"] == 2
    assert problems["examples"] == ["query 'q7' of qrels_og/test.tsv is not in queries.jsonl",
                                    "query 'q8' of qrels_og/test.tsv is not in queries.jsonl"]
    assert problems["queries_without_qrels"] == {"changed": 0, "reversed": 0}
    assert problems["ignored_queries"] == {"changed": 1, "reversed": 0}  # q7 judged in changed, not in the split


def test_no_query_of_the_split_in_queries_jsonl(tmp_path):
    root = infosearch(tmp_path / "c")
    write(root / "qrels_og" / "test.tsv", "x1\td1\t1\n")
    collection = only(root)
    error = error_of(collection.queries)
    assert error.path == str(root / "qrels_og" / "test.tsv")
    assert "none of the 1 queries of the qrels is in queries.jsonl" in str(error)


def test_gz_files_accepted(tmp_path):
    root = infosearch(tmp_path / "c")
    for mode in MODES:
        tsv = root / f"qrels_{mode}" / "test.tsv"
        write_gz(tsv.with_suffix(".tsv.gz"), tsv.read_text())
        tsv.unlink()
    write_gz(root / "queries.jsonl.gz", (root / "queries.jsonl").read_text())
    (root / "queries.jsonl").unlink()
    collection = only(root)
    assert collection.qrels_path("reversed") == root / "qrels_reversed" / "test.tsv.gz"
    assert collection.qrels()["og"]["q1"] == {"d1": 1, "d2": 1}
    assert [q.query_id for q in collection.queries()] == ["q1", "q2"]


def test_another_split(tmp_path):
    root = infosearch(tmp_path / "c", split="dev")
    assert only(root, "dev").split == "dev"


# --- folders of dimensions ----------------------------------------------------------------------

def test_dimensions_sorted_and_empty_folders_ignored(tmp_path):
    infosearch(tmp_path / "language")
    infosearch(tmp_path / "audience")
    write(tmp_path / "__pycache__" / "x.pyc", "")
    write(tmp_path / ".hidden" / "notes.txt", "")
    (tmp_path / "empty").mkdir()
    write(tmp_path / "README.md", "six dimensions\n")
    collections = open_instruction_collections(tmp_path)
    assert [(c.dimension, c.root, c.layout) for c in collections] == [
        ("audience", tmp_path / "audience", "infosearch"), ("language", tmp_path / "language", "infosearch")]
    assert [q.query_id for q in collections[1].queries()] == ["q1", "q2"]


def test_mixed_layouts_refused(tmp_path):
    infosearch(tmp_path / "audience")
    followir(tmp_path / "keyword")
    error = error_of(open_instruction_collections, tmp_path)
    assert str(error) == (f"{tmp_path}: mixed layouts across dimensions: audience (infosearch), keyword (followir); "
                          "every dimension must use the same layout")


def test_an_incomplete_dimension_is_named(tmp_path):
    infosearch(tmp_path / "audience")
    infosearch(tmp_path / "format", modes=("og", "reversed"))
    error = error_of(open_instruction_collections, tmp_path)
    assert error.path == str(tmp_path / "format")
    assert "incomplete folder: qrels_changed/ missing" in str(error)


# --- refusals -------------------------------------------------------------------------------------

def test_missing_folder(tmp_path):
    error = error_of(open_instruction_collections, tmp_path / "nope")
    assert str(error) == f"{tmp_path / 'nope'}: dataset folder not found"


def test_empty_folder(tmp_path):
    error = error_of(open_instruction_collections, tmp_path)
    assert "no instruction-following collection here" in str(error)


def test_ambiguous_qrels_and_qrels_og(tmp_path):
    root = infosearch(tmp_path / "c")
    write(root / "qrels" / "test.tsv", "q1\td1\t1\n")
    error = error_of(open_instruction_collections, root)
    assert str(error) == (f"{root}: ambiguous folder: both qrels/ (InstructIR layout) and qrels_og/, qrels_changed/, "
                          "qrels_reversed/ (InfoSearch/FollowIR layout); keep one")


def test_ambiguous_top_collection_and_dimensions(tmp_path):
    infosearch(tmp_path)
    infosearch(tmp_path / "audience")
    error = error_of(open_instruction_collections, tmp_path)
    assert str(error) == (f"{tmp_path}: ambiguous folder: collection files at the top (corpus.jsonl, queries.jsonl, "
                          "qrels_og/, qrels_changed/, qrels_reversed/) and dimension sub-folders (audience); "
                          "keep one or the other")


@pytest.mark.parametrize("modes, message", [
    (("og",), "incomplete folder: qrels_changed/ missing (qrels_og/ present; FollowIR needs qrels_og/ and "
              "qrels_changed/, InfoSearch also qrels_reversed/)"),
    (("changed", "reversed"), "incomplete folder: qrels_og/ missing (qrels_changed/, qrels_reversed/ present;"),
    (("og", "reversed"), "incomplete folder: qrels_changed/ missing (qrels_og/, qrels_reversed/ present;"),
    (("reversed",), "incomplete folder: qrels_og/, qrels_changed/ missing"),
    ((), "incomplete folder: no qrels folder (qrels_og/ and qrels_changed/ for FollowIR, plus qrels_reversed/ "
         "for InfoSearch, or qrels/ for InstructIR)"),
])
def test_incomplete_qrels_folders_named(tmp_path, modes, message):
    root = infosearch(tmp_path / "c", modes=modes)
    error = error_of(open_instruction_collections, root)
    assert error.path == str(root)
    assert message in str(error)


@pytest.mark.parametrize("stem", ["corpus.jsonl", "queries.jsonl"])
def test_missing_corpus_or_queries_named(tmp_path, stem):
    root = infosearch(tmp_path / "c")
    (root / stem).unlink()
    error = error_of(open_instruction_collections, root)
    assert str(error) == f"{root}: incomplete folder: {stem} missing (nor {stem}.gz)"


def test_split_missing_in_one_mode_names_the_available_splits(tmp_path):
    root = infosearch(tmp_path / "c")
    (root / "qrels_changed" / "test.tsv").rename(root / "qrels_changed" / "dev.tsv")
    write(root / "qrels_changed" / "train.tsv.gz", "")
    error = error_of(open_instruction_collections, root)
    assert error.path == str(root / "qrels_changed" / "test.tsv")
    assert str(error).endswith("split 'test' not found in qrels_changed/; available: dev, train")


def test_split_missing_everywhere(tmp_path):
    error = error_of(open_instruction_collections, infosearch(tmp_path / "c"), "dev")
    assert "split 'dev' not found in qrels_og/; available: test" in str(error)


def test_missing_instruction_field_names_file_line_query_and_field(tmp_path):
    root = infosearch(tmp_path / "c")
    queries = root / "queries.jsonl"
    write(queries, queries.read_text() + lines({"_id": "q3", "text": "x", "instruction_og": "", "instruction_changed": "y"}))
    collection = only(root)  # contents are read when asked for
    error = error_of(collection.queries)
    assert (error.path, error.line) == (str(queries), 3)
    assert str(error) == (f"{queries}:3: query 'q3' has no `instruction_reversed` (the infosearch layout needs "
                          '`instruction_og`, `instruction_changed`, `instruction_reversed`; "" for none)')


@pytest.mark.parametrize("value, shown", [(5, "5"), (None, "null"), (["a"], '["a"]')])
def test_non_string_instruction_refused(tmp_path, value, shown):
    root = followir(tmp_path / "c")
    queries = root / "queries.jsonl"
    write(queries, lines({"_id": "q1", "text": "x", "instruction_og": value, "instruction_changed": "y"}))
    error = error_of(only(root).queries)
    assert str(error) == f'{queries}:1: `instruction_og` of query \'q1\' must be a string ("" for none), got {shown}'


def test_non_string_instructir_instruction_refused(tmp_path):
    root = instructir(tmp_path / "c")
    write(root / "queries.jsonl", lines({"_id": "q1_0", "text": "x", "instruction": 3}))
    error = error_of(only(root).queries)
    assert error.line == 1 and "`instruction` must be a string, got int" in str(error)


def test_bad_query_line_uses_the_beir_checks(tmp_path):
    root = infosearch(tmp_path / "c")
    queries = root / "queries.jsonl"
    write(queries, queries.read_text() + '{"_id": "q1", "text": "again"}\n')
    error = error_of(only(root).queries)
    assert error.line == 3 and "duplicate query id 'q1' (first seen on line 1)" in str(error)


def test_plain_beir_folder_refused_as_instructir(tmp_path):
    root = tmp_path / "scifact"
    write(root / "corpus.jsonl", CORPUS)
    write(root / "queries.jsonl", lines({"_id": "1", "text": "a"}, {"_id": "q_x", "text": "b"}, {"_id": "q_2", "text": "c"}))
    qrels = write(root / "qrels" / "test.tsv", QRELS_HEADER + "1\td1\t1\nq_x\td2\t1\nq_2\td2\t1\n")
    error = error_of(open_instruction_collections, root)
    assert str(error) == (f"{qrels}: not an instruction-following folder: 2 of the 3 query ids of the split are not "
                          "of the form <base>_<n> ('1', 'q_x') (a plain BEIR collection? use irforge eval)")


def test_paths_checked_against_allowed_roots(tmp_path):
    root = infosearch(tmp_path / "c")
    with enforced([tmp_path / "elsewhere"]), pytest.raises(OutsideAllowedRoots):
        open_instruction_collections(root)
    with enforced([tmp_path]):
        assert only(root).layout == "infosearch"


# --- real data ------------------------------------------------------------------------------------

def test_real_scifact_corpus_in_infosearch_layout(beir_dir, tmp_path):
    root = tmp_path / "scifact-audience"
    with open(beir_dir / "scifact" / "corpus.jsonl", encoding="utf-8") as source:
        head = list(itertools.islice(source, 50))
    write(root / "corpus.jsonl", "".join(head))
    first, second = (json.loads(line)["_id"] for line in head[:2])
    write(root / "queries.jsonl", lines(
        {"_id": "s1", "text": "cell biology", "instruction_og": "", "instruction_changed": "for a general reader",
         "instruction_reversed": "not for a general reader", "dimension": "audience"}))
    for mode, judged in (("og", first), ("changed", first), ("reversed", second)):
        write(root / f"qrels_{mode}" / "test.tsv", f"{QRELS_HEADER}s1\t{judged}\t1\n")
    collection = only(root)
    documents = list(collection.dataset.corpus())
    assert len(documents) == 50 and documents[0].doc_id == first and documents[0].full_text
    assert len(collection.dataset.corpus_fingerprint()) == 64
    [query] = collection.queries()
    assert query.fields == {"dimension": "audience"} and query.instructions["og"] == ""
