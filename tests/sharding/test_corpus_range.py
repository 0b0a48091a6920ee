"""A worker's document range read by skipping raw lines equals the same slice of iter_corpus."""

from __future__ import annotations

import gzip
import itertools

import pytest
from irforge.data import BeirDataset, DataFormatError
from irforge.sharding.corpus_range import DocumentRange
from irforge.sharding.plan import plan_shards


def pairs(documents) -> list[tuple[str, str]]:
    return [(d.doc_id, d.full_text) for d in documents]


@pytest.mark.parametrize("name", ["scifact", "nfcorpus"])
def test_every_shard_equals_the_slice_of_the_stream(beir_dir, name):
    dataset = BeirDataset.open(beir_dir / name)
    stream = pairs(dataset.corpus())
    shards = plan_shards(len(stream), 7)
    ranges = [DocumentRange(dataset, s.start, s.stop) for s in shards]
    assert [pairs(r) for r in ranges] == [stream[s.start:s.stop] for s in shards]
    assert ranges[-1].rest_is_empty() and not ranges[0].rest_is_empty()


def test_blank_lines_crlf_and_gzip_count_like_iter_corpus(small_corpus, tmp_path):
    lines = (small_corpus / "corpus.jsonl").read_text().splitlines()
    mangled = "\r\n".join(itertools.chain.from_iterable((line, "") if i % 7 == 0 else (line,) for i, line in enumerate(lines)))
    folder = tmp_path / "mangled"
    folder.mkdir()
    with gzip.open(folder / "corpus.jsonl.gz", "wt", newline="") as handle:
        handle.write("\r\n" + mangled + "\r\n\r\n")
    dataset = BeirDataset.open(folder)
    stream = pairs(dataset.corpus())
    assert len(stream) == 61
    for start, stop in [(0, 5), (20, 41), (55, 61), (61, 61)]:
        assert pairs(DocumentRange(dataset, start, stop)) == stream[start:stop]


def test_a_bad_line_inside_the_range_is_named(small_corpus, tmp_path):
    lines = (small_corpus / "corpus.jsonl").read_text().splitlines()
    lines[30] = lines[30].replace('"text": "', '"text": 7, "x": "', 1)
    lines[40] = '{"_id": "broken", "title": '
    (tmp_path / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    dataset = BeirDataset.open(tmp_path)
    with pytest.raises(DataFormatError, match=r"corpus.jsonl:31: `text` must be a string, got int"):
        list(DocumentRange(dataset, 21, 41))
    with pytest.raises(DataFormatError, match=r"corpus.jsonl:41: malformed JSON"):
        list(DocumentRange(dataset, 35, 45))
    assert len(list(DocumentRange(dataset, 45, 61))) == 16   # the bad lines are another shard's to report


def test_a_corpus_shorter_than_the_range_yields_what_it_has(small_corpus):
    dataset = BeirDataset.open(small_corpus)
    assert len(list(DocumentRange(dataset, 50, 70))) == 11
