"""Dataset names: what `irforge datasets list` shows, how `--dataset` turns a name into a folder
(or says exactly what to run), and how a team's catalogue file is checked."""

from __future__ import annotations

import json
import shutil

import pytest

from irforge.cli import jobs_cmd
from irforge.cli.main import main
from irforge.datasets import DatasetError, resolve_dataset
from irforge.datasets.catalog import BEIR_MD5, Catalog, load_catalog
from irforge.datasets.store import MARKER

PUBLISHED = {"scifact": "5f7d1de60b170fc8027bb7898e2efca1", "nfcorpus": "a89dba18a62ef92f7d323ec890a0d38d",
             "arguana": "8ad3e3c2a5867cdced806d6503f29b99"}


def lay_out_copy(datasets, name: str, source, checksum: str, algorithm: str = "md5"):
    """A copy as a download leaves it: the files and the marker naming the archive's checksum."""
    copy = datasets / name
    shutil.copytree(source, copy)
    (copy / MARKER).write_text(json.dumps({"name": name, "algorithm": algorithm, "checksum": checksum}))
    return copy


def test_the_beir_catalogue_carries_the_published_checksums():
    catalog = load_catalog()
    assert {n: BEIR_MD5[n] for n in PUBLISHED} == PUBLISHED
    scifact = catalog.get("beir/scifact")
    assert scifact.url == "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"
    assert (scifact.algorithm, scifact.checksum) == ("md5", PUBLISHED["scifact"])
    assert len(list(catalog)) == 15 and "beir/bioasq" not in catalog      # no published archive, not listed


def test_list_shows_names_checksums_urls_and_copies(tmp_path, scifact_slice, capsys):
    datasets = tmp_path / "datasets"
    copy = lay_out_copy(datasets, "beir/scifact", scifact_slice, PUBLISHED["scifact"])
    lay_out_copy(datasets, "beir/nfcorpus", scifact_slice, "0" * 32)     # a copy of some other archive
    assert main(["datasets", "list", "--dir", str(datasets)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["datasets"] == f"datasets folder: {datasets}"
    assert lines["beir/scifact"].split()[1:] == [f"md5:{PUBLISHED['scifact']}", str(copy),
                                                 "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"]
    assert f"other archive at {datasets / 'beir/nfcorpus'} (md5 {'0' * 32})" in lines["beir/nfcorpus"]
    assert lines["beir/arguana"].split()[1:3] == [f"md5:{PUBLISHED['arguana']}", "-"]
    assert lines["not"].startswith("not listed: beir/bioasq, beir/signal1m, beir/trec-news, beir/robust04")
    assert main(["datasets", "list", "--dir", str(datasets), "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["beir/scifact"]["complete"] and rows["beir/scifact"]["path"] == str(copy)
    assert not rows["beir/nfcorpus"]["complete"] and rows["beir/nfcorpus"]["path"] is None


def test_a_name_resolves_to_its_complete_copy_and_a_folder_always_wins(tmp_path, scifact_slice, monkeypatch):
    datasets = tmp_path / "datasets"
    copy = lay_out_copy(datasets, "beir/scifact", scifact_slice, PUBLISHED["scifact"])
    assert resolve_dataset("beir/scifact", datasets_dir=datasets) == copy
    assert resolve_dataset("beir/scifact/qrels", datasets_dir=datasets) == copy / "qrels"   # a folder inside the copy
    monkeypatch.setenv("IRFORGE_DATASETS_DIR", str(datasets))
    assert resolve_dataset("beir/scifact") == copy                       # the variable is the default folder
    monkeypatch.chdir(tmp_path)
    (tmp_path / "beir" / "scifact").mkdir(parents=True)                  # a folder of the user's, same spelling
    assert resolve_dataset("beir/scifact").resolve() == (tmp_path / "beir" / "scifact").resolve()


def test_a_known_name_not_downloaded_says_the_exact_command(tmp_path, scifact_slice, capsys):
    datasets = tmp_path / "datasets"
    with pytest.raises(DatasetError) as error:
        resolve_dataset("beir/nfcorpus", datasets_dir=datasets)
    assert str(error.value).endswith(f"run: irforge datasets download beir/nfcorpus --to {datasets}")
    (datasets / "beir").mkdir(parents=True)
    (datasets / "beir" / ".nfcorpus.zip.part").write_bytes(b"PK")         # an interrupted download is not a copy
    with pytest.raises(DatasetError, match=r"partial \(2 bytes; download resumes it\); run: irforge datasets download"):
        resolve_dataset("beir/nfcorpus", datasets_dir=datasets)
    shutil.copytree(scifact_slice, datasets / "beir" / "nfcorpus")       # files without the marker: not complete
    with pytest.raises(DatasetError, match="not an irforge download"):
        resolve_dataset("beir/nfcorpus", datasets_dir=datasets)


@pytest.mark.parametrize("value, suggestion", [
    ("scifact", "did you mean 'beir/scifact'?"),          # a bare word is a folder; the name is suggested
    ("beir/scifct", "did you mean 'beir/scifact'?"),
    ("beir/nfcorps", "did you mean 'beir/nfcorpus'?"),
])
def test_an_unknown_name_suggests_the_nearest(value, suggestion, tmp_path, capsys):
    with pytest.raises(DatasetError, match=f"{value}: dataset folder not found, nor is it a dataset name; {suggestion}"):
        resolve_dataset(value, datasets_dir=tmp_path)
    assert main(["datasets", "download", value, "--to", str(tmp_path)]) == 2
    assert suggestion in capsys.readouterr().err


def test_eval_and_eval_instructions_resolve_names_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("IRFORGE_DATASETS_DIR", str(tmp_path / "datasets"))
    for command in ("eval", "eval-instructions"):
        assert main([command, "--dataset", "beir/scifact", "--out", str(tmp_path / "out")]) == 2
        assert (f"irforge {command}: error: beir/scifact: dataset beir/scifact is not downloaded in "
                f"{tmp_path / 'datasets'}; run: irforge datasets download beir/scifact\n") in capsys.readouterr().err
        assert main([command, "--dataset", "beir/scifct", "--out", str(tmp_path / "out")]) == 2
        assert "did you mean 'beir/scifact'?" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, said", [
    ("- name: tickets\n  url: https://x.example/t.zip\n  md5: " + "a" * 32, "must look like SOURCE/NAME"),
    ("- name: team/t\n  url: ftp://x.example/t.zip\n  md5: " + "a" * 32, "must be an http(s) URL of a .zip archive"),
    ("- name: team/t\n  url: https://x.example/t.zip", "give exactly one checksum, md5 or sha256"),
    ("- name: team/t\n  url: https://x.example/t.zip\n  sha256: abc", "is not a sha256 hex digest"),
    ("- name: team/t\n  url: https://x.example/t.zip\n  md5: " + "a" * 32 + "\n  size: 3", "unknown key 'size'"),
    ("- name: beir/scifact\n  url: https://x.example/s.zip\n  md5: " + "a" * 32, "beir/ names are BEIR's own"),
    ("name: team/t", "expected a list of {name, url, md5 or sha256}"),
    ("- [unclosed", "not valid YAML"),
], ids=["bare-name", "ftp", "no-checksum", "short-sha256", "unknown-key", "beir-name", "not-a-list", "bad-yaml"])
def test_a_bad_catalogue_is_refused_naming_file_and_entry(content, said, tmp_path, capsys):
    path = tmp_path / "catalog.yaml"
    path.write_text(content)
    with pytest.raises(DatasetError, match=f"catalogue {path}"):
        load_catalog(path)
    assert main(["datasets", "list", "--catalog", str(path)]) == 2
    assert said in capsys.readouterr().err


def test_catalogue_entries_are_listed_and_the_variable_names_the_file(tmp_path, capsys, monkeypatch):
    path = tmp_path / "team.json"
    path.write_text(json.dumps({"datasets": [{"name": "team/tickets", "url": "https://data.example/tickets.zip",
                                              "sha256": "B" * 64}]}))
    monkeypatch.setenv("IRFORGE_DATASETS_CATALOG", str(path))
    assert main(["datasets", "list", "--json", "--dir", str(tmp_path)]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["team/tickets"]["checksum"] == "b" * 64 and rows["team/tickets"]["source"] == str(path)
    assert isinstance(load_catalog(), Catalog) and "team/tickets" in load_catalog()


def test_submit_sends_the_copy_a_name_resolves_to_and_other_paths_unchanged(tmp_path, scifact_slice, monkeypatch):
    """`irforge submit` resolves names here, as eval does; a missing path may be the orchestrator's own."""
    from irforge.cli.main import build_parser
    from irforge.orchestrator.errors import JobSpecError

    datasets = tmp_path / "datasets"
    monkeypatch.setenv("IRFORGE_DATASETS_DIR", str(datasets))
    copy = lay_out_copy(datasets, "beir/scifact", scifact_slice, PUBLISHED["scifact"])

    def submitted(dataset: str) -> str:
        return jobs_cmd.submit_spec(build_parser().parse_args(["submit", "--dataset", dataset])).dataset

    assert submitted("beir/scifact") == str(copy.resolve())
    assert submitted("/on/the/orchestrator/scifact") == "/on/the/orchestrator/scifact"
    with pytest.raises(JobSpecError, match="run: irforge datasets download beir/fiqa"):
        submitted("beir/fiqa")


@pytest.mark.parametrize("typed", ["scifactt", "SciFact", "scifac"])
def test_a_mistyped_folder_suggests_the_folder_beside_it_not_a_download(typed, scifact_slice, tmp_path):
    """Issue 29: `../shared/data/beir/scifactt` pointed at the catalogue name beir/scifact (a download)."""
    beside = tmp_path / "beir" / "scifact"
    shutil.copytree(scifact_slice, beside)
    with pytest.raises(DatasetError) as raised:
        resolve_dataset(tmp_path / "beir" / typed, datasets_dir=tmp_path / "datasets")
    assert f"did you mean the folder {beside}?" in str(raised.value)
    assert "beir/scifact'" not in str(raised.value)
