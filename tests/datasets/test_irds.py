"""`--dataset irds:NAME` through the ir_datasets package, from its local cache, never downloading.

The cache is laid out as ir_datasets keeps beir/scifact (IR_DATASETS_HOME/beir/scifact/source.zip,
the BEIR archive's files: here zipped from the shared SciFact folder, as no download is possible;
ir_datasets reads a cached archive without re-checking its md5). What ir_datasets hands over must
have BEIR's published counts (5,183 documents, 300 test queries, 339 judgements), the shared
qrels read by hand, and BM25 the bm25s figure on SciFact (0.6762, /work/shared/ENVIRONMENT.md).
A dataset not in the cache (beir/nfcorpus) is refused for real, offline, with how to fetch it."""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

from irforge.cli.main import main
from irforge.datasets import DatasetError, resolve_dataset
from irforge.datasets.irds import split_of


@pytest.fixture(scope="module")
def irds_home(beir_dir, tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("ir_datasets_home")
    (home / "beir" / "scifact").mkdir(parents=True)
    source = beir_dir / "scifact"
    with zipfile.ZipFile(home / "beir" / "scifact" / "source.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
            archive.write(source / name, f"scifact/{name}")
    return home


@pytest.fixture()
def offline_cache(irds_home, tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(irds_home))
    # ir_datasets fixes its paths when first imported, and ranx (tests/fusion) imports it: set
    # aside any copy already loaded so irforge's import reads this IR_DATASETS_HOME, as a fresh
    # process would (monkeypatch puts the old modules back afterwards).
    for name in [name for name in sys.modules if name == "ir_datasets" or name.startswith("ir_datasets.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setenv("IRFORGE_DATASETS_DIR", str(tmp_path / "datasets"))
    return tmp_path / "datasets"


def test_a_cached_dataset_becomes_a_folder_with_beirs_published_counts(offline_cache, beir_dir):
    folder = resolve_dataset("irds:beir/scifact/test")
    assert folder == offline_cache / "irds" / "beir" / "scifact" / "test"
    source = json.loads((folder / "source.json").read_text())
    assert (source["documents"], source["queries"], source["qrels_judgements"]) == (5183, 300, 339)
    assert source["name"] == "beir/scifact/test" and source["split"] == "test"
    by_hand = sorted(line.split("\t")[:2] for line in (beir_dir / "scifact/qrels/test.tsv").read_text().splitlines()[1:])
    written = sorted(line.split("\t")[:2] for line in (folder / "qrels/test.tsv").read_text().splitlines()[1:])
    assert written == by_hand
    stamp = (folder / "corpus.jsonl").stat().st_mtime_ns
    assert resolve_dataset("irds:beir/scifact/test") == folder and (folder / "corpus.jsonl").stat().st_mtime_ns == stamp


def test_eval_on_irds_gives_the_bm25_figure_and_records_the_source(offline_cache, tmp_path):
    out = tmp_path / "out"
    assert main(["eval", "--dataset", "irds:beir/scifact/test", "--out", str(out), "--index-dir", str(tmp_path / "idx")]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["metrics"]["nDCG@10"] == pytest.approx(0.6762, abs=5e-4)
    assert results["dataset"] == "beir/scifact/test"
    assert results["data"]["source"]["format"] == "ir_datasets"
    assert results["data"]["source"]["ir_datasets_version"] == "0.6.3"


def test_a_dataset_not_in_the_cache_says_how_to_fetch_it_and_downloads_nothing(offline_cache, irds_home, tmp_path, capsys):
    code = main(["eval", "--dataset", "irds:beir/nfcorpus/test", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert "not in the ir_datasets cache" in err
    assert str(irds_home / "beir" / "nfcorpus" / "source.zip") in err        # where it would go
    assert "nfcorpus.zip" in err and "ir_datasets.load('beir/nfcorpus/test')" in err   # what to run where connected
    assert not (irds_home / "beir" / "nfcorpus" / "source.zip").exists()
    assert list((offline_cache / "irds").iterdir()) == []   # no half-written copy, no staging folder


def test_an_unknown_name_suggests_the_nearest(offline_cache):
    with pytest.raises(DatasetError, match=r"'beir/scifakt/test' is not an ir_datasets dataset; did you mean 'beir/scifact/test'"):
        resolve_dataset("irds:beir/scifakt/test")


@pytest.mark.parametrize("name, split", [("beir/scifact/test", "test"), ("msmarco-passage/dev/small", "dev"),
                                         ("cranfield", "test"), ("beir/fiqa/train", "train")])
def test_the_split_is_the_names_split_segment(name, split):
    assert split_of(name)[0] == split
