"""The embedded judge: thresholds (files, precedence, identity) and real scoring of SciFact pairs
with all-MiniLM-L6-v2 through the embedding cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from irforge.judge.backends.embedded import (
    BUILTIN_THRESHOLDS, SCORE_WITH_CROSS_ENCODER, EmbeddedJudge, Thresholds, ThresholdsError, find_thresholds,
)
from irforge.judge.base import Verdict, identity_sha256
from irforge.judge.core import JudgeCore
from irforge.judge.store import JudgementStore


@pytest.fixture()
def cache_dir(monkeypatch, tmp_path_factory):
    path = tmp_path_factory.getbasetemp() / "judge-embedding-cache"   # shared by the session's judge tests
    monkeypatch.setenv("IRFORGE_CACHE_DIR", str(path))
    return path


def test_labels_count_the_thresholds_reached():
    thresholds = Thresholds((0.2, 0.4, 0.6))
    assert [thresholds.label(s) for s in (-1.0, 0.19, 0.2, 0.39, 0.4, 0.59, 0.6, 1.0)] == [0, 0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize("content, message", [
    ('{"thresholds": [0.5, 0.4, 0.6]}', "strictly ascending"),
    ('{"thresholds": [0.1, 0.2]}', "three finite numbers"),
    ('{"thresholds": [0.1, "x", 0.3]}', "three finite numbers"),
    ('{"cuts": [0.1, 0.2, 0.3]}', '"thresholds"'),
    ("not json", "JSON"),
    ('{"thresholds": [0.1, 0.2, 0.3], "score": "bm25"}', "not a score this judge computes"),
    ('{"thresholds": [0.1, 0.2, 0.3], "score": "%s"}' % SCORE_WITH_CROSS_ENCODER, "not a score this judge computes"),
])
def test_bad_thresholds_files_name_the_file_and_the_problem(tmp_path, content, message):
    path = tmp_path / "thresholds.json"
    path.write_text(content)
    with pytest.raises(ThresholdsError, match=message) as raised:
        Thresholds.from_file(path)
    assert str(path) in str(raised.value)


def test_thresholds_precedence(tmp_path, monkeypatch):
    default = tmp_path / "default.json"
    monkeypatch.setenv("IRFORGE_JUDGE_THRESHOLDS", str(default))
    assert find_thresholds() is BUILTIN_THRESHOLDS                  # nothing calibrated yet
    Thresholds((0.1, 0.2, 0.3)).save(default)
    assert find_thresholds().cuts == (0.1, 0.2, 0.3)                # the default location, once calibrated
    explicit = Thresholds((0.3, 0.5, 0.7)).save(tmp_path / "explicit.json")
    assert find_thresholds(explicit).cuts == (0.3, 0.5, 0.7)        # an explicit file wins
    with pytest.raises(ThresholdsError, match="not found"):
        find_thresholds(tmp_path / "missing.json")                  # an explicit file must exist
    saved = json.loads(explicit.read_text())
    assert saved["thresholds"] == [0.3, 0.5, 0.7] and saved["sha256"] == Thresholds((0.3, 0.5, 0.7)).sha256


def test_identity_follows_the_thresholds_without_loading_the_model(cache_dir):
    judge = EmbeddedJudge(Thresholds((0.2, 0.4, 0.6)))
    other = judge.with_thresholds(Thresholds((0.2, 0.4, 0.61)))
    identity = judge.identity()
    assert identity["backend"] == "embedded" and identity["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert identity["revision"].startswith("sha256:") and identity["cross_encoder"] == "none"
    assert identity_sha256(identity) != identity_sha256(other.identity())   # refitting: no stale store hits
    assert judge._encoder is None                                          # identity needs no model load


def test_embedded_judge_scores_scifact_for_real(scifact_pairs, cache_dir, tmp_path):
    judge = EmbeddedJudge(BUILTIN_THRESHOLDS)
    judgements = judge.judge(scifact_pairs)
    assert len(judgements) == len(scifact_pairs)
    for pair, judgement in zip(scifact_pairs, judgements):
        assert (judgement.query_id, judgement.doc_id) == (pair.query_id, pair.doc_id)
        assert judgement.verdict is Verdict.LABELLED and judgement.label in (0, 1, 2, 3)
        assert judgement.raw_output == repr(judgement.score) and judgement.calls == 0
        assert judgement.label == BUILTIN_THRESHOLDS.label(judgement.score)
        assert judgement.judge_id == identity_sha256(judge.identity())
    # Cosine of normalised MiniLM vectors, recomputed here from the model itself.
    vectors = judge._encoder.model.encode([scifact_pairs[0].query, scifact_pairs[0].document], normalize_embeddings=True)
    assert judgements[0].score == pytest.approx(float(np.dot(vectors[0], vectors[1])), abs=1e-4)
    # Human-judged documents score above the two arbitrary corpus documents of their query.
    judged = {}
    for pair, judgement in zip(scifact_pairs, judgements):
        judged.setdefault(pair.query_id, []).append(judgement.score)
    positives = [s for scores in judged.values() for s in scores[:-2]]
    others = [s for scores in judged.values() for s in scores[-2:]]
    assert np.mean(positives) > np.mean(others) + 0.2
    assert sum(j.label >= 2 for j in judgements) > 0 and sum(j.label == 0 for j in judgements) > 0

    # A second judge on the same cache encodes nothing; through a JudgeCore with a store, nothing at all.
    again = EmbeddedJudge(BUILTIN_THRESHOLDS)
    assert [j.score for j in again.judge(scifact_pairs)] == [j.score for j in judgements]
    assert again.encoding.texts_encoded == 0
    with JudgeCore(again, JudgementStore(tmp_path / "store.sqlite3")) as core:
        first = core.judge(scifact_pairs)
        second = core.judge(scifact_pairs)
    assert second.stats.from_store == len(scifact_pairs) and second.stats.calls == 0
    assert [j.label for j in second.judgements] == [j.label for j in first.judgements]
    judge.close()


def test_a_cross_encoder_is_optional_and_named(scifact_pairs, cache_dir):
    from irforge.models.registry import packaged_model_path

    # No cross-encoder weights exist here: a MiniLM folder with an untrained head is plumbing only.
    model = str(packaged_model_path("all-MiniLM-L6-v2"))
    thresholds = Thresholds((0.3, 0.5, 0.7), score=SCORE_WITH_CROSS_ENCODER, cross_encoder=model)
    judge = EmbeddedJudge(thresholds)
    assert judge.identity()["cross_encoder"] == model
    pairs = [p for p in scifact_pairs if p.query_id == scifact_pairs[0].query_id]   # one query
    combined = judge.scores(pairs)
    cosine = EmbeddedJudge(BUILTIN_THRESHOLDS).scores(pairs)
    cross = judge._cross_encoder.score(pairs[0].query, [p.document for p in pairs])
    assert combined == pytest.approx((cosine + cross) / 2, abs=1e-5)
    with pytest.raises(ThresholdsError, match="ascending"):
        Thresholds((0.3, 0.3, 0.7))
