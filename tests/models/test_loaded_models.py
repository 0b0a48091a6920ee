"""A process loads a model once: EncoderCores asking for the same weights and settings share it
(a notebook, an orchestrator or the test session run many evaluations); other settings load anew."""

from __future__ import annotations

from irforge.models import encoder as encoder_module
from irforge.models.encoder import EncoderCore, EncoderSpec, TextRole


def test_same_weights_and_settings_share_one_loaded_model():
    first = EncoderCore(EncoderSpec("all-MiniLM-L6-v2", max_seq_length=48))
    again = EncoderCore(EncoderSpec("sentence-transformers/all-MiniLM-L6-v2", max_seq_length=48, batch_size=8))
    assert again.model is first.model   # the alias and the hub name are one model; batch size is not a load setting
    other = EncoderCore(EncoderSpec("all-MiniLM-L6-v2", max_seq_length=40))
    assert other.model is not first.model and other.model.max_seq_length == 40 and first.model.max_seq_length == 48
    texts = ["vitamin d and bone density"]
    assert (first.encode(texts, TextRole.QUERY) == again.encode(texts, TextRole.QUERY)).all()


def test_only_the_most_recent_models_are_kept(monkeypatch):
    monkeypatch.setattr(encoder_module, "MAX_LOADED_MODELS", 1)
    first = EncoderCore(EncoderSpec("all-MiniLM-L6-v2", max_seq_length=33))
    EncoderCore(EncoderSpec("all-MiniLM-L6-v2", max_seq_length=34))
    assert len(encoder_module._LOADED) == 1
    assert EncoderCore(EncoderSpec("all-MiniLM-L6-v2", max_seq_length=33)).model is not first.model
