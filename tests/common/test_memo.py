"""irforge.common.memo: a remembered fact is returned only for its own key; a cache dir that
cannot be written costs the time, never the command; an exception is not remembered."""

from __future__ import annotations

import json

import pytest

from irforge.common import memo


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IRFORGE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_fact_is_computed_once_and_only_for_its_key(cache):
    calls = []

    def compute(value):
        calls.append(value)
        return {"n": value}

    assert memo.remembered("kind", {"a": 1}, lambda: compute(1)) == {"n": 1}
    assert memo.remembered("kind", {"a": 1}, lambda: compute(9)) == {"n": 1}
    assert memo.remembered("kind", {"a": 2}, lambda: compute(2)) == {"n": 2}
    assert memo.remembered("other", {"a": 1}, lambda: compute(3)) == {"n": 3}
    assert calls == [1, 2, 3]
    stored = [json.loads(path.read_text()) for path in (cache / "facts" / "kind").glob("*.json")]
    assert sorted((s["key"]["a"], s["value"]["n"]) for s in stored) == [(1, 1), (2, 2)]


def test_a_file_holding_another_key_is_not_taken(cache):
    memo.remember("kind", {"a": 1}, 41)
    [path] = (cache / "facts" / "kind").glob("*.json")
    path.write_text(json.dumps({"key": {"a": 2}, "value": 99}))
    assert memo.recall("kind", {"a": 1}) is None
    assert memo.remembered("kind", {"a": 1}, lambda: 42) == 42


def test_an_unwritable_cache_dir_costs_only_the_time(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache dir should be")
    monkeypatch.setenv("IRFORGE_CACHE_DIR", str(blocker))
    with caplog.at_level("INFO", logger="irforge.common.memo"):
        assert memo.remembered("kind", {"a": 1}, lambda: [1, 2]) == [1, 2]
        assert memo.remembered("kind", {"a": 1}, lambda: [3]) == [3]
    assert "could not remember kind" in caplog.text


def test_an_exception_is_not_remembered(cache):
    def fails():
        raise ValueError("mixed languages")

    with pytest.raises(ValueError):
        memo.remembered("kind", {"a": 1}, fails)
    assert memo.recall("kind", {"a": 1}) is None
    assert not (cache / "facts").exists()
