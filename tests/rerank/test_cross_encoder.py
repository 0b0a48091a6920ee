"""The CrossEncoder core: scores per document, batching that changes nothing, identity, the
untrained-head flag, and errors for missing models and unusable scores."""

from __future__ import annotations

import numpy as np
import pytest
from irforge.models.errors import ModelNotFound
from irforge.models.reranker import (
    CrossEncoderReranker,
    RerankError,
    RerankerSpec,
    check_scores,
)

QUERY = "vitamin D deficiency and bone density"


def test_scores_one_finite_value_per_document(core, scifact_texts):
    scores = core.score(QUERY, scifact_texts[:10])
    assert scores.shape == (10,) and scores.dtype == np.float32
    assert np.isfinite(scores).all() and ((scores > 0) & (scores < 1)).all()  # sigmoid of one logit
    assert core.score(QUERY, []).shape == (0,)


def test_score_batch_equals_one_query_at_a_time(core, scifact_texts):
    items = [(QUERY, scifact_texts[:7]), ("p53 and apoptosis", []), ("scurvy", scifact_texts[7:20])]
    batched = core.score_batch(items)
    assert [len(scores) for scores in batched] == [7, 0, 13]
    for (query, documents), scores in zip(items, batched):
        np.testing.assert_allclose(scores, core.score(query, documents), atol=1e-6, rtol=0)


def test_identity_and_description(core, cross_encoder_dir):
    assert core.identity["kind"] == "cross-encoder"
    assert core.identity["model"] == cross_encoder_dir.name
    assert core.identity["revision"].startswith("sha256:")  # a folder is identified by its weights
    # No max_length in the spec: the folder's own cap (tests/conftest.py saves it with 256 tokens).
    assert core.identity["activation"] == "Sigmoid" and core.identity["max_length"] == 256
    description = core.describe()
    assert description["head_trained"] is True  # saved as a sequence-classification checkpoint
    assert description["device"] == "cpu" and description["spec"]["batch_size"] == 32


def test_the_minilm_bi_encoder_builds_with_an_untrained_head_flagged(minilm_dir, scifact_texts, caplog):
    reranker = CrossEncoderReranker(RerankerSpec("all-MiniLM-L6-v2", max_length=128, batch_size=8))
    assert reranker.identity["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert reranker.identity["max_length"] == 128
    assert reranker.describe()["head_trained"] is False
    assert "no trained classification head" in caplog.text
    scores = reranker.score(QUERY, scifact_texts[:5])
    assert scores.shape == (5,) and np.isfinite(scores).all()


def test_missing_model_is_model_not_found():
    with pytest.raises(ModelNotFound, match="does not exist"):
        CrossEncoderReranker(RerankerSpec("/nonexistent/cross-encoder"))
    with pytest.raises(ModelNotFound, match="nobody/no-such-reranker"):
        CrossEncoderReranker(RerankerSpec("nobody/no-such-reranker"))


@pytest.mark.parametrize("scores, message", [
    (np.array([0.1, np.nan]), "NaN or infinite"),
    (np.array([0.1, np.inf]), "NaN or infinite"),
    (np.array([0.1]), "1 scores for 2 documents"),
    (np.zeros((2, 2)), "shape"),
    (np.array(["a", "b"]), "non-numeric"),
])
def test_unusable_scores_are_refused(scores, message):
    with pytest.raises(RerankError, match=message):
        check_scores(scores, 2, "test reranker")
