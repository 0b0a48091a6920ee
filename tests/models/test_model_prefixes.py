"""A sentence-transformers folder's own prompts are its default prefixes (issue 25, deliver 4).

A copy of the packaged all-MiniLM-L6-v2 whose config_sentence_transformers.json declares E5-style
`prompts` ("query" and "document"): irforge applies them, records them and keys the embedding cache
by them; --query-prefix/--passage-prefix override them ('' for none). Checked against
sentence-transformers used directly on the original folder with the prefixes glued on by hand,
numpy cosine and pytrec_eval, on a real Chinese XQuAD slice.
"""

from __future__ import annotations

import json
import shutil

import pytest
from sentence_transformers import SentenceTransformer

from irforge import api
from irforge.models.cache import EmbeddingCache
from irforge.models.encoder import EncoderCore, EncoderSpec
from irforge.models.registry import packaged_model_path

from ..multilingual import slices

PROMPTS = {"query": "query: ", "document": "passage: "}


@pytest.fixture(scope="module")
def original():
    return packaged_model_path("all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def prompted_folder(original, tmp_path_factory):
    """The model with prompts declared, as a user's own folder (e.g. a downloaded multilingual E5)."""
    folder = tmp_path_factory.mktemp("models") / "minilm-with-prompts"
    shutil.copytree(original, folder)
    config = folder / "config_sentence_transformers.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "prompts": PROMPTS}))
    return folder


@pytest.fixture(scope="module")
def zh_slice(tmp_path_factory):
    return slices.write_slice("zh", tmp_path_factory.mktemp("zh"))


def by_hand(original, folder, query_prefix: str, passage_prefix: str):
    """Per-query nDCG@10 with sentence-transformers itself on the folder without prompts."""
    model = SentenceTransformer(str(original), device="cpu")
    paragraphs, questions, qrels = slices.load_slice(folder)
    queries = model.encode([query_prefix + q["text"] for q in questions])
    documents = model.encode([passage_prefix + slices.document_text(p) for p in paragraphs])
    run = slices.cosine_run([q["_id"] for q in questions], queries, [p["_id"] for p in paragraphs], documents)
    return slices.ndcg_at_10(qrels, run)


def test_the_folders_prompts_are_applied_recorded_and_equal_the_prefixes_typed_by_hand(
        original, prompted_folder, zh_slice, tmp_path):
    cache = tmp_path / "embeddings.sqlite3"
    results = api.evaluate(zh_slice, out=tmp_path / "out", retriever="dense", model=str(prompted_folder),
                           embedding_cache=cache, vector_dir=tmp_path / "vectors")
    expected = by_hand(original, zh_slice, "query: ", "passage: ")
    assert {q: v["nDCG@10"] for q, v in results["per_query"].items()} == pytest.approx(expected, abs=1e-4)
    # ... and not what the model gives without them (so the comparison can fail).
    assert expected != pytest.approx(by_hand(original, zh_slice, "", ""), abs=1e-4)
    encoder = results["retriever"]["encoder"]
    assert (encoder["query_prefix"], encoder["passage_prefix"]) == ("query: ", "passage: ")
    assert encoder["prefix_source"] == {"query": "model", "passage": "model"}

    # '' overrides the folder's prompts: plain texts, another cache key, nothing reused.
    plain = api.evaluate(zh_slice, out=tmp_path / "plain", retriever="dense", model=str(prompted_folder),
                         query_prefix="", passage_prefix="", embedding_cache=cache, vector_dir=tmp_path / "vectors")
    assert {q: v["nDCG@10"] for q, v in plain["per_query"].items()} == pytest.approx(by_hand(original, zh_slice, "", ""), abs=1e-4)
    assert plain["retriever"]["encoder"]["prefix_source"] == {"query": "given", "passage": "given"}
    assert plain["counts"]["documents_encoded"] == slices.PARAGRAPHS
    prompted_key = EncoderCore(EncoderSpec(str(prompted_folder))).identity_key
    plain_key = EncoderCore(EncoderSpec(str(prompted_folder), query_prefix="", passage_prefix="")).identity_key
    assert prompted_key != plain_key
    with EmbeddingCache(cache) as stored:
        assert stored.count(prompted_key, "passage") == stored.count(plain_key, "passage") == slices.PARAGRAPHS


def test_a_folder_without_prompts_keeps_its_identity_and_no_prefix(original):
    """all-MiniLM-L6-v2 declares no prompts: no prefix, and the cache key every earlier run used
    (prefixes '' as the flags' old default), so caches and collections made before stay valid."""
    default = EncoderCore(EncoderSpec("all-MiniLM-L6-v2"))
    assert (default.query_prefix, default.passage_prefix) == ("", "")
    assert default.identity_key == EncoderCore(EncoderSpec("all-MiniLM-L6-v2", query_prefix="", passage_prefix="")).identity_key


@pytest.mark.parametrize(("prompts", "passage"), [
    ({"query": "Q: ", "passage": "P: ", "document": "D: ", "corpus": "C: "}, "D: "),   # encode_document's order
    ({"query": "Q: ", "corpus": "C: ", "passage": "P: "}, "P: "),
    ({"query": "Q: ", "corpus": "C: "}, "C: "),
])
def test_the_document_prompt_is_chosen_as_sentence_transformers_does(prompted_folder, tmp_path, prompts, passage):
    folder = tmp_path / "other-prompts"
    shutil.copytree(prompted_folder, folder)
    config = folder / "config_sentence_transformers.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "prompts": prompts}))
    core = EncoderCore(EncoderSpec(str(folder)))
    assert (core.query_prefix, core.passage_prefix) == ("Q: ", passage)
