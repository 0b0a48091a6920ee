"""The environment is tested, not assumed: the installed versions are the ones pyproject.toml pins
(a drifted venv fails here, loudly, rather than reporting other numbers), and the libraries that
users commonly have beside irforge (orjson, which ranx, ir_datasets and many others install) are
importable in the suite, so BM25 indexing runs as it does on their machines."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from irforge.corpus.lexical.embedded import EmbeddedBackend
from irforge.corpus.settings import Bm25Settings
from irforge.data.types import Document, Query

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
# Packages whose version can move a reported number: an exact pin, never a range (see pyproject.toml).
NUMERIC = {"numpy", "scipy", "pytrec-eval-terrier", "bm25s", "pystemmer", "qdrant-edge-py", "torch",
           "transformers", "sentence-transformers", "tokenizers", "orjson",
           # language analysis: tokens, stopwords, Thai words and the detected language all move BM25
           "regex", "stop-words", "stopwordsiso", "pythainlp", "py3langid",
           # the fusion tests' reference numbers (ranx's fuse, compiled by numba)
           "ranx", "numba"}


def requirements() -> list[Requirement]:
    """What CI installs (`pip install -e '.[all,test]'`): the core and every extra `all` and `test`
    bring, following an extra that names another (`irforge[dense,...]`)."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return [Requirement(line) for line in project["dependencies"]] + extra_requirements(project, ["all", "test"])


def extra_requirements(project: dict, extras: list[str]) -> list[Requirement]:
    found, seen = [], set()
    while extras:
        extra = extras.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in map(Requirement, project["optional-dependencies"][extra]):
            if canonical(requirement.name) == canonical(project["name"]):
                extras.extend(requirement.extras)
            else:
                found.append(requirement)
    return list({str(requirement): requirement for requirement in found}.values())


def canonical(name: str) -> str:
    return name.lower().replace("_", "-")


def test_every_numeric_dependency_is_pinned_exactly():
    pinned = {canonical(r.name): r for r in requirements()}
    assert NUMERIC <= set(pinned), f"not declared at all: {sorted(NUMERIC - set(pinned))}"
    loose = [str(pinned[name]) for name in sorted(NUMERIC)
             if [spec.operator for spec in pinned[name].specifier] != ["=="]]
    assert not loose, f"numeric dependencies must be pinned with ==: {loose}"


@pytest.mark.parametrize("requirement", requirements(), ids=str)
def test_installed_version_is_the_declared_one(requirement):
    try:
        installed = metadata.version(requirement.name)
    except metadata.PackageNotFoundError:
        pytest.fail(f"{requirement.name} is declared in pyproject.toml but not installed: pip install -e '.[all,test]'")
    assert requirement.specifier.contains(installed, prereleases=True), (
        f"{requirement.name} {installed} is installed, pyproject.toml asks {requirement.specifier}: "
        "reinstall with pip install -e '.[all,test]', or move the pin in a reviewed change")


def test_bm25s_writes_its_index_with_orjson_and_irforge_indexes_and_searches(tmp_path):
    # bm25s picks orjson when it is importable; orjson refused the int keys of the vocabulary
    # irforge handed it ("TypeError: Dict key must be str"), so every new BM25 index failed.
    from bm25s.utils import json_functions

    assert json_functions.ORJSON_AVAILABLE, "orjson (a test extra) is not importable: pip install -e '.[all,test]'"
    backend = EmbeddedBackend(tmp_path)
    backend.create("c", "fp", Bm25Settings())
    docs = [Document("a", "Vitamin D", "Vitamin D deficiency and bone loss."),
            Document("b", "Aspirin", "Aspirin lowers the risk of heart attack.")]
    list(backend.ingest("c", iter([docs])))
    list(backend.ingest("c", iter([[Document("z", "", "zebrafish aspirin")]])))   # a second generation
    hits = EmbeddedBackend(tmp_path).search("c", [Query("q", "aspirin")], 10)[0]
    assert sorted(hits.doc_ids.tolist()) == ["b", "z"]
