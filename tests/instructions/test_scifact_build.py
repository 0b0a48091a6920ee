"""The SciFact instruction-following collection builder, on the real SciFact data: the InfoSearch
and FollowIR layouts, each dimension's pairs and labels, determinism and the output-folder rules."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from irforge.common.output_set import OutputFolderError
from irforge.cli.main import build_parser
from irforge.cli.main import main as irforge_main
from irforge.instructions.scifact_build import build, split_sentences

SMALL = ["--max-queries", "20", "--distractors", "200"]
MODES = ("og", "changed", "reversed")


def main(argv: list[str]) -> int:
    """`irforge build-instructions ARGV`, in this process."""
    return irforge_main(["build-instructions", *argv])


def _args(beir_dir: Path, out: Path, *extra: str) -> list[str]:
    return ["--source", str(beir_dir / "scifact"), "--out", str(out), *SMALL, *extra]


@pytest.fixture(scope="module")
def built(beir_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("scifact-if") / "collection"
    assert main(_args(beir_dir, out)) == 0
    return out


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _corpus(folder: Path) -> dict[str, dict]:
    return {doc["_id"]: doc for doc in _jsonl(folder / "corpus.jsonl")}


def _qrels(folder: Path, mode: str) -> dict[str, dict[str, int]]:
    lines = (folder / f"qrels_{mode}" / "test.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore"
    qrels: dict[str, dict[str, int]] = {}
    for line in lines[1:]:
        query_id, doc_id, score = line.split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def _mentions(doc: dict, term: str) -> bool:
    return re.search(rf"\b{re.escape(term)}\b", f"{doc['title']}\n{doc['text']}", re.IGNORECASE) is not None


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_infosearch_layout_files_and_build_json(built):
    for dimension in ("keyword", "length"):
        folder = built / dimension
        for name in ("corpus.jsonl", "queries.jsonl", *(f"qrels_{m}/test.tsv" for m in MODES)):
            assert (folder / name).is_file(), name
        queries = _jsonl(folder / "queries.jsonl")
        assert len(queries) == 20
        for query in queries:
            assert query["instruction_og"] == "" and query["dimension"] == dimension
            assert query["instruction_changed"] and query["instruction_reversed"]
            assert query["instruction_changed"] != query["instruction_reversed"]
        assert all(set(_qrels(folder, m)) == {q["_id"] for q in queries} for m in MODES)
    summary = json.loads((built / "BUILD.json").read_text())
    assert len(summary["source_corpus_sha256"]) == 64
    assert summary["options"] == {"max_queries": 20, "distractors": 200, "layout": "infosearch"}
    for dimension, counts in summary["dimensions"].items():
        folder = built / dimension
        assert counts["queries"] == 20 and counts["distractors"] == 200
        assert counts["corpus_documents"] == len(_corpus(folder))
        assert counts["description"] and set(counts["labelling"]) == set(MODES)
        for mode in MODES:
            qrels = _qrels(folder, mode)
            assert counts["judgements"][mode]["judgements"] == sum(map(len, qrels.values()))
            assert counts["judgements"][mode]["relevant"] == sum(v >= 1 for q in qrels.values() for v in q.values())


def test_every_judged_document_is_in_the_corpus(built):
    for dimension in ("keyword", "length"):
        corpus = _corpus(built / dimension)
        for mode in MODES:
            for judged in _qrels(built / dimension, mode).values():
                assert set(judged) <= set(corpus), (dimension, mode)


def test_keyword_pairs(built):
    folder = built / "keyword"
    corpus, og, changed, reversed_ = _corpus(folder), *(_qrels(folder, m) for m in MODES)
    pairs = 0
    for query in _jsonl(folder / "queries.jsonl"):
        term, query_id = query["keywords"], query["_id"]
        assert f'"{term}"' in query["instruction_changed"] and f'"{term}"' in query["instruction_reversed"]
        assert re.fullmatch(r"[a-z]{6,}", term) and not _mentions({"title": "", "text": query["text"]}, term)
        assert set(og[query_id]) == set(changed[query_id]) == set(reversed_[query_id])
        for doc_id, label in og[query_id].items():
            assert label == 1  # every version is about the query
            assert changed[query_id][doc_id] + reversed_[query_id][doc_id] == 1  # complementary
            assert changed[query_id][doc_id] == int(_mentions(corpus[doc_id], term))
        pair = [d for d in og[query_id] if d.endswith(f"-no-{term}")]
        assert pair, query_id
        for version_id in pair:
            original = corpus[version_id.removesuffix(f"-no-{term}")]
            version = corpus[version_id]
            assert _mentions(original, term) and not _mentions(version, term)
            assert changed[query_id][original["_id"]] == 1 and reversed_[query_id][version_id] == 1
            assert version["title"] == original["title"] and version["text"]
            assert set(split_sentences(version["text"])) < set(split_sentences(original["text"]))
            pairs += 1
    assert pairs >= 20


def test_length_pairs(built):
    folder = built / "length"
    corpus, og, changed, reversed_ = _corpus(folder), *(_qrels(folder, m) for m in MODES)
    asks_sentence = []
    for query in _jsonl(folder / "queries.jsonl"):
        query_id = query["_id"]
        wants_sentence = query["instruction_changed"].startswith("Only documents whose text is a single sentence")
        asks_sentence.append(wants_sentence)
        versions = [d for d in og[query_id] if re.search(r"-sentence-\d+$", d)]
        originals = [d for d in og[query_id] if d not in versions]
        assert len(versions) == len(originals) >= 1
        for version_id in versions:
            version, original = corpus[version_id], corpus[re.sub(r"-sentence-\d+$", "", version_id)]
            assert version["text"] in original["text"] and version["title"] == original["title"]
            assert re.search(r"[.?!]\s+[A-Z]", version["text"]) is None  # one sentence
            assert len(split_sentences(original["text"])) >= 2
            assert og[query_id][version_id] == og[query_id][original["_id"]] == 1
            assert changed[query_id][version_id] == int(wants_sentence)
            assert changed[query_id][original["_id"]] == int(not wants_sentence)
            for doc_id in (version_id, original["_id"]):
                assert changed[query_id][doc_id] + reversed_[query_id][doc_id] == 1
    assert asks_sentence == [n % 2 == 0 for n in range(len(asks_sentence))]


def test_rebuild_is_byte_identical_and_force_replaces_an_earlier_build(built, beir_dir, tmp_path):
    again = tmp_path / "again"
    shutil.copytree(built, again)
    (again / "keyword" / "corpus.jsonl").write_text("stale\n")
    (again / "stray.txt").write_text("left from before\n")
    assert main(_args(beir_dir, again)) == 2  # not empty, no --force
    assert main(_args(beir_dir, again, "--force")) == 0
    assert _tree(again) == _tree(built)
    assert not [p for p in tmp_path.iterdir() if p.name != "again"]  # no staging folder left behind


def test_refuses_a_non_empty_out(beir_dir, tmp_path, capsys):
    out = tmp_path / "busy"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    assert main(_args(beir_dir, out)) == 2
    assert "not empty" in capsys.readouterr().err
    with pytest.raises(OutputFolderError, match="earlier build"):  # --force replaces only an earlier build
        build(beir_dir / "scifact", out, max_queries=2, distractors=10, force=True)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    with pytest.raises(OutputFolderError, match="overlaps the source"):
        build(beir_dir / "scifact", beir_dir / "scifact" / "out", max_queries=2, distractors=10)


def test_followir_layout_has_no_reversed_mode(beir_dir, tmp_path):
    out = tmp_path / "followir"
    summary = build(beir_dir / "scifact", out, max_queries=5, distractors=20, layout="followir")
    assert json.loads((out / "BUILD.json").read_text()) == summary
    assert not list(out.rglob("*reversed*"))
    for dimension in ("keyword", "length"):
        assert sorted(p.name for p in (out / dimension).iterdir()) == ["corpus.jsonl", "qrels_changed", "qrels_og",
                                                                       "queries.jsonl"]
        assert all("instruction_reversed" not in q for q in _jsonl(out / dimension / "queries.jsonl"))
        assert set(summary["dimensions"][dimension]["judgements"]) == {"og", "changed"}


def test_command_line_help_describes_every_option():
    shown = subprocess.run([sys.executable, "-m", "irforge.cli.main", "build-instructions", "--help"],
                           capture_output=True, text=True, check=True).stdout
    for option in ("--source", "--out", "--max-queries", "--distractors", "--layout", "--force"):
        assert option in shown
    commands = next(a for a in build_parser()._actions if a.dest == "command")
    assert all(action.help for action in commands.choices["build-instructions"]._actions)
    assert main(["--source", "x", "--out", "y", "--layout", "infosearh"]) == 2  # argparse's usage error
