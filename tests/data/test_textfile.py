"""The line reader under every data reader: line numbers that match an editor's, a UTF-8 BOM
accepted at the start of any file, plain or gzip."""

import gzip
from pathlib import Path

import pytest

from irforge.data import DataFormatError, iter_corpus, iter_queries, read_beir_qrels, read_trec_qrels
from irforge.runs import read_run_file
from irforge.data.textfile import numbered_lines

BOM = b"\xef\xbb\xbf"


def write_bytes(path: Path, data: bytes, gz: bool = False) -> Path:
    if gz:
        path = path.with_name(path.name + ".gz")
        with gzip.open(path, "wb") as handle:
            handle.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("bad_line", [1, 200, 4000])
def test_invalid_utf8_is_reported_on_its_own_line(tmp_path, gz, bad_line):
    # The decoder works ahead of the line being read: a whole buffer is decoded before line 1 is
    # handed out, so the failing line must be found per line, not per buffer.
    lines = [b'{"_id": "d%d", "text": "some words here"}\n' % n for n in range(1, bad_line)]
    lines.append(b'{"_id": "bad", "text": "caf\xe9"}\n')
    lines += [b'{"_id": "after%d", "text": "x"}\n' % n for n in range(50)]
    path = write_bytes(tmp_path / "corpus.jsonl", b"".join(lines), gz)
    with pytest.raises(DataFormatError) as caught:
        list(iter_corpus(path))
    assert caught.value.line == bad_line
    assert str(caught.value).startswith(f"{path}:{bad_line}: not valid UTF-8")


def test_invalid_utf8_in_qrels_line_200(tmp_path):
    data = b"query-id\tcorpus-id\tscore\n" + b"q1\td1\t1\n" * 198 + b"q1\td\xff\t1\n"
    path = write_bytes(tmp_path / "test.tsv", data)
    with pytest.raises(DataFormatError, match=r"test\.tsv:200: not valid UTF-8"):
        read_beir_qrels(path)


@pytest.mark.parametrize("gz", [False, True])
def test_a_bom_is_accepted_at_the_start_of_every_file(tmp_path, gz):
    corpus = write_bytes(tmp_path / "corpus.jsonl", BOM + b'{"_id": "d1", "text": "a"}\r\n', gz)
    queries = write_bytes(tmp_path / "queries.jsonl", BOM + b'{"_id": "q1", "text": "a"}\n', gz)
    beir_qrels = write_bytes(tmp_path / "test.tsv", BOM + b"query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\n", gz)
    trec_qrels = write_bytes(tmp_path / "qrels.txt", BOM + b"q1 0 d1 1\n", gz)
    run = write_bytes(tmp_path / "run.txt", BOM + b"q1 Q0 d1 1 0.5 tag\n", gz)
    assert [d.doc_id for d in iter_corpus(corpus)] == ["d1"]
    assert [q.query_id for q in iter_queries(queries)] == ["q1"]
    assert read_beir_qrels(beir_qrels) == {"q1": {"d1": 1}}
    assert read_trec_qrels(trec_qrels) == {"q1": {"d1": 1}}
    assert read_run_file(run).run == {"q1": {"d1": 0.5}}


def test_a_bom_inside_a_file_is_still_an_error(tmp_path):
    # Only a file's first bytes may be a BOM; elsewhere U+FEFF is data, and here a bad query id.
    path = write_bytes(tmp_path / "test.tsv", b"q1\td1\t1\n" + BOM + b"q2\td1\tx\n")
    with pytest.raises(DataFormatError, match=r":2: relevance 'x'"):
        read_beir_qrels(path)


def test_line_endings_lf_crlf_and_cr_count_lines_alike(tmp_path):
    for ending in (b"\n", b"\r\n", b"\r"):
        path = write_bytes(tmp_path / "f.txt", ending.join([b"a", b"", b"b", b"c"]) + ending)
        assert list(numbered_lines(path)) == [(1, "a"), (3, "b"), (4, "c")], ending


def test_a_line_separator_inside_text_is_not_a_line_end(tmp_path):
    # U+2028 and friends may sit unescaped in JSON strings; only \n, \r\n and \r end a line.
    path = write_bytes(tmp_path / "corpus.jsonl", '{"_id": "d1", "text": "a\u2028b\x85c"}\n'.encode())
    assert [d.text for d in iter_corpus(path)] == ["a\u2028b\x85c"]
