"""BEIR readers: streaming corpus/queries, qrels, dataset layout, and every bad input named by file and line."""

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest

from irforge.data import BeirDataset, DataFormatError, iter_corpus, iter_queries, read_beir_qrels
from irforge.data.qrels import check_qrels_references

BEIR = Path("/work/shared/data/beir")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_gz(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(text)
    return path


def error_of(call, *args) -> DataFormatError:
    with pytest.raises(DataFormatError) as caught:
        result = call(*args)
        if isinstance(result, Iterator):
            list(result)  # the streaming readers only fail when iterated
    return caught.value


# --- corpus and queries -----------------------------------------------------------------------

def test_corpus_reads_documents(tmp_path):
    path = write(tmp_path / "corpus.jsonl",
                 '{"_id": "d1", "title": "T", "text": "body", "metadata": {"year": 2020}}\n'
                 '{"_id": 7, "text": "no title"}\n')
    docs = list(iter_corpus(path))
    assert [(d.doc_id, d.title, d.text, d.metadata) for d in docs] == [
        ("d1", "T", "body", {"year": 2020}),
        ("7", "", "no title", {}),
    ]
    assert docs[0].full_text == "T body"


def test_queries_read(tmp_path):
    path = write(tmp_path / "queries.jsonl", '{"_id": "q1", "text": "what is x"}\n\n{"_id": "q2", "text": "y"}\n')
    assert [(q.query_id, q.text) for q in iter_queries(path)] == [("q1", "what is x"), ("q2", "y")]


def test_malformed_json_names_file_and_line(tmp_path):
    path = write(tmp_path / "corpus.jsonl", '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": \n')
    error = error_of(iter_corpus, path)
    assert (error.path, error.line) == (str(path), 2)
    assert str(error).startswith(f"{path}:2: malformed JSON")


def test_missing_id(tmp_path):
    path = write(tmp_path / "corpus.jsonl", '{"title": "T", "text": "a"}\n')
    error = error_of(iter_corpus, path)
    assert error.line == 1
    assert str(error) == f"{path}:1: document has no `_id`"


def test_duplicate_id_mentions_first_line(tmp_path):
    path = write(tmp_path / "queries.jsonl",
                 '{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "b"}\n{"_id": "q1", "text": "c"}\n')
    error = error_of(iter_queries, path)
    assert error.line == 3
    assert "duplicate query id 'q1'" in str(error)
    assert "first seen on line 1" in str(error)


def test_query_with_empty_text(tmp_path):
    path = write(tmp_path / "queries.jsonl", '{"_id": "q1", "text": "ok"}\n{"_id": "q2", "text": "   "}\n')
    error = error_of(iter_queries, path)
    assert error.line == 2
    assert str(error) == f"{path}:2: query 'q2' has no text"


def test_non_string_title(tmp_path):
    path = write(tmp_path / "corpus.jsonl", '{"_id": "d1", "title": 5, "text": "a"}\n')
    error = error_of(iter_corpus, path)
    assert error.line == 1
    assert "`title` must be a string, got int" in str(error)


@pytest.mark.parametrize("reader, line, field", [
    (iter_corpus, r'{"_id": "d\ud800", "text": "a"}', "_id"),
    (iter_corpus, r'{"_id": "d2", "title": "x \udfff y", "text": "a"}', "title"),
    (iter_corpus, r'{"_id": "d2", "text": "a \ud83d"}', "text"),
    (iter_corpus, r'{"_id": "d2", "text": "a", "metadata": {"k": ["\udc00"]}}', "metadata"),
    (iter_queries, r'{"_id": "q2", "text": "a \uD800"}', "text"),
    (iter_corpus, r'{"_id": "d2", "\ud800": 1}', r"\ud800"),  # the message itself stays encodable
])
def test_a_lone_surrogate_is_refused_at_read_time(tmp_path, reader, line, field):
    # JSON may escape half of a UTF-16 pair; Python decodes it to a str that no UTF-8 writer
    # accepts, so it failed long after indexing (run.trec, gRPC) with a UnicodeEncodeError.
    path = write(tmp_path / "f.jsonl", '{"_id": "ok", "text": "\\ud83d\\ude00 a pair is fine"}\n' + line + "\n")
    error = error_of(reader, path)
    assert error.line == 2
    assert f"`{field}` contains a lone surrogate" in str(error) and "not valid Unicode" in str(error)
    str(error).encode("utf-8")


def test_an_escaped_backslash_u_is_text_not_a_surrogate(tmp_path):
    path = write(tmp_path / "corpus.jsonl", r'{"_id": "d1", "text": "C:\\ud800"}' + "\n")
    assert [d.text for d in iter_corpus(path)] == [r"C:\ud800"]


def test_empty_corpus_file(tmp_path):
    path = write(tmp_path / "corpus.jsonl", "")
    error = error_of(iter_corpus, path)
    assert error.path == str(path)
    assert "file is empty" in str(error)


def test_readers_stream(tmp_path):
    # Line 3 is broken; the first document is handed out before the reader ever gets there.
    path = write(tmp_path / "corpus.jsonl", '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": "b"}\nnot json\n')
    documents = iter_corpus(path)
    assert next(documents).doc_id == "d1"
    assert next(documents).doc_id == "d2"
    with pytest.raises(DataFormatError) as caught:
        next(documents)
    assert caught.value.line == 3


def test_gzipped_corpus_and_queries(tmp_path):
    corpus = write_gz(tmp_path / "corpus.jsonl.gz", '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": "b"}\n')
    queries = write_gz(tmp_path / "queries.jsonl.gz", '{"_id": "q1", "text": "x"}\n')
    assert [d.doc_id for d in iter_corpus(corpus)] == ["d1", "d2"]
    assert [q.text for q in iter_queries(queries)] == ["x"]


# --- qrels ------------------------------------------------------------------------------------

def test_qrels_header_skipped(tmp_path):
    path = write(tmp_path / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td1\t2\n")
    assert read_beir_qrels(path) == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}


def test_qrels_crlf(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_bytes(b"query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2\td2\t2\r\n")
    assert read_beir_qrels(path) == {"q1": {"d1": 1}, "q2": {"d2": 2}}


def test_qrels_gz(tmp_path):
    path = write_gz(tmp_path / "test.tsv.gz", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert read_beir_qrels(path) == {"q1": {"d1": 1}}


def test_qrels_relevance_1_0_is_1(tmp_path):
    path = write(tmp_path / "test.tsv", "q1\td1\t1.0\n")
    relevance = read_beir_qrels(path)["q1"]["d1"]
    assert relevance == 1 and type(relevance) is int


def test_qrels_non_numeric_relevance(tmp_path):
    path = write(tmp_path / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\tx\n")
    error = error_of(read_beir_qrels, path)
    assert str(error) == f"{path}:3: relevance 'x' is not a number"


def test_qrels_non_integer_relevance(tmp_path):
    path = write(tmp_path / "test.tsv", "q1\td1\t1.5\n")
    error = error_of(read_beir_qrels, path)
    assert str(error) == f"{path}:1: relevance '1.5' is not an integer"


def test_qrels_wrong_column_count(tmp_path):
    path = write(tmp_path / "test.tsv", "q1\td1\t1\nq1\td2\n")
    error = error_of(read_beir_qrels, path)
    assert error.line == 2
    assert "expected 3 tab-separated fields" in str(error) and "got 2" in str(error)


def test_qrels_conflicting_duplicates(tmp_path):
    path = write(tmp_path / "test.tsv", "q1\td1\t1\nq1\td2\t0\nq1\td1\t2\n")
    error = error_of(read_beir_qrels, path)
    assert error.line == 3
    assert "conflicting judgements for query 'q1', document 'd1': 1 (line 1) and 2" in str(error)


def test_qrels_repeated_identical_judgement_accepted(tmp_path):
    path = write(tmp_path / "test.tsv", "q1\td1\t1\nq1\td1\t1\n")
    assert read_beir_qrels(path) == {"q1": {"d1": 1}}


def test_qrels_empty_file(tmp_path):
    path = write(tmp_path / "test.tsv", "")
    error = error_of(read_beir_qrels, path)
    assert str(error) == f"{path}: file is empty"


def test_qrels_only_header(tmp_path):
    path = write(tmp_path / "test.tsv", "query-id\tcorpus-id\tscore\n")
    error = error_of(read_beir_qrels, path)
    assert error.path == str(path)
    assert "no judgements" in str(error)


# --- dataset folder ---------------------------------------------------------------------------

def make_dataset(root: Path) -> BeirDataset:
    write(root / "corpus.jsonl", '{"_id": "d1", "text": "a"}\n')
    write(root / "queries.jsonl", '{"_id": "q1", "text": "x"}\n')
    write(root / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return BeirDataset.open(root)


def test_dataset_open_and_read(tmp_path):
    dataset = make_dataset(tmp_path / "tiny")
    assert dataset.name == "tiny"
    assert [d.doc_id for d in dataset.corpus()] == ["d1"]
    assert [q.query_id for q in dataset.queries()] == ["q1"]
    assert dataset.qrels("test") == {"q1": {"d1": 1}}


def test_dataset_all_gz(tmp_path):
    write_gz(tmp_path / "corpus.jsonl.gz", '{"_id": "d1", "text": "a"}\n')
    write_gz(tmp_path / "queries.jsonl.gz", '{"_id": "q1", "text": "x"}\n')
    write_gz(tmp_path / "qrels" / "dev.tsv.gz", "q1\td1\t2\n")
    dataset = BeirDataset.open(tmp_path)
    assert dataset.corpus_path.name == "corpus.jsonl.gz"
    assert [d.doc_id for d in dataset.corpus()] == ["d1"]
    assert [q.query_id for q in dataset.queries()] == ["q1"]
    assert dataset.qrels("dev") == {"q1": {"d1": 2}}


def test_a_split_whose_queries_are_all_unknown_says_so(tmp_path):
    # Before, this indexed the corpus, wrote run.trec, then failed with "the qrels are empty".
    dataset = make_dataset(tmp_path / "tiny")
    write(dataset.root / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nQ-1\td1\t1\nQ-2\td1\t0\nQ-1\td2\t1\n")
    error = error_of(dataset.qrels, "test")
    assert error.path == str(dataset.root / "qrels" / "test.tsv")
    assert str(error).endswith(
        ": none of the 2 queries of the qrels is in queries.jsonl (qrels: 'Q-1', 'Q-2'; queries.jsonl: 'q1'); "
        "check that both files use the same query ids")


def test_a_split_with_some_unknown_queries_is_read(tmp_path):
    # A few unknown queries are reported by check_qrels_references, not refused.
    dataset = make_dataset(tmp_path / "tiny")
    write(dataset.root / "qrels" / "test.tsv", "qx\td1\t1\nq1\td1\t1\n")
    assert dataset.qrels("test") == {"qx": {"d1": 1}, "q1": {"d1": 1}}


def test_dataset_missing_folder(tmp_path):
    error = error_of(BeirDataset.open, tmp_path / "nope")
    assert str(error) == f"{tmp_path / 'nope'}: dataset folder not found"


def test_dataset_missing_corpus(tmp_path):
    write(tmp_path / "queries.jsonl", '{"_id": "q1", "text": "x"}\n')
    error = error_of(BeirDataset.open, tmp_path)
    assert error.path == str(tmp_path / "corpus.jsonl")
    assert "file not found" in str(error)


def test_missing_split_lists_available(tmp_path):
    dataset = make_dataset(tmp_path)
    write_gz(tmp_path / "qrels" / "dev.tsv.gz", "q1\td1\t1\n")
    error = error_of(dataset.qrels_path, "train")
    assert "split 'train' not found; available: dev, test" in str(error)


def test_corpus_fingerprint_follows_content(tmp_path):
    dataset = make_dataset(tmp_path)
    before = dataset.corpus_fingerprint()
    assert dataset.corpus_fingerprint() == before
    write(tmp_path / "corpus.jsonl", '{"_id": "d1", "text": "b"}\n')
    assert dataset.corpus_fingerprint() != before


# --- qrels pointing at unknown ids ------------------------------------------------------------

def test_check_qrels_references():
    qrels = {"q1": {"d1": 1, "dX": 0}, "qZ": {"d1": 1, "dY": 1}}
    report = check_qrels_references(qrels, query_ids=["q1", "q2"], doc_ids=["d1", "d2"])
    assert (report.unknown_queries, report.unknown_documents) == (1, 2)
    assert report.examples == [
        "document 'dX' (query 'q1') is not in the corpus",
        "query 'qZ' is not in queries.jsonl",
        "document 'dY' (query 'qZ') is not in the corpus",
    ]


def test_check_qrels_references_limits_examples_and_skips_docs():
    qrels = {f"q{i}": {"d1": 1} for i in range(10)}
    report = check_qrels_references(qrels, query_ids=[], doc_ids=None, max_examples=2)
    assert report.as_dict() == {
        "unknown_queries": 10,
        "unknown_documents": 0,
        "examples": ["query 'q0' is not in queries.jsonl", "query 'q1' is not in queries.jsonl"],
    }


# --- the real collections ---------------------------------------------------------------------

@pytest.mark.skipif(not BEIR.is_dir(), reason="shared BEIR copies not present")
def test_real_collections_counts():
    scifact = BeirDataset.open(BEIR / "scifact")
    assert sum(1 for _ in scifact.corpus()) == 5183
    qrels = scifact.qrels("test")
    assert (len(qrels), sum(map(len, qrels.values()))) == (300, 339)

    nfcorpus = BeirDataset.open(BEIR / "nfcorpus").qrels("test")
    assert (len(nfcorpus), sum(map(len, nfcorpus.values()))) == (323, 12334)
