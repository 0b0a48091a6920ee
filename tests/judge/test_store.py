"""The judgement store (SQLite, WAL) and JudgeCore over it: a re-run is free, only labels are reused,
provenance stays reachable by record id, several threads and processes can write at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from dataclasses import replace

import pytest

from irforge.judge.backends.llm import OpenAIChatJudge
from irforge.judge.base import Judgement, JudgePair, Verdict, identity_sha256, text_sha256
from irforge.judge.core import JudgeCore
from irforge.judge.errors import JudgeRequestError, JudgeStoreError
from irforge.judge.spec import JudgeSpec
from irforge.judge.store import STORE_ENV, JudgementStore, default_store_path, resolve_store_path

scripted = sys.modules["irforge_judge_tests_scripted_chat"]  # loaded by this folder's conftest.py

IDENTITY = {"backend": "test", "model": "m", "template_sha256": "t" * 64}
JUDGE_ID = identity_sha256(IDENTITY)


def judgement(pair: JudgePair, verdict=Verdict.LABELLED, label=2, **fields) -> Judgement:
    return Judgement(query_id=pair.query_id, doc_id=pair.doc_id, verdict=verdict, label=label,
                     raw_output=str(label) if label is not None else "nonsense", backend="test", model="m",
                     template_sha256="t" * 64, judge_id=JUDGE_ID, calls=1, prompt_tokens=10, completion_tokens=1,
                     cost_usd=0.25, created_at="2026-11-22T07:00:00+00:00", **fields)


PAIRS = [JudgePair("q1", "what is aspirin?", f"d{i}", f"document {i} about aspirin") for i in range(4)]


@pytest.fixture()
def store(tmp_path):
    with JudgementStore(tmp_path / "judgements.sqlite3") as opened:
        yield opened


def test_where_the_store_lives(tmp_path, monkeypatch):
    monkeypatch.delenv(STORE_ENV, raising=False)
    assert default_store_path().parts[-3:] == ("irforge", "judge", "judgements.sqlite3")
    monkeypatch.setenv(STORE_ENV, str(tmp_path / "env.sqlite3"))
    assert default_store_path() == tmp_path / "env.sqlite3" == resolve_store_path(None)
    assert resolve_store_path(tmp_path / "flag.sqlite3") == tmp_path / "flag.sqlite3"   # --store wins
    JudgementStore().close()
    assert (tmp_path / "env.sqlite3").is_file()


def test_recorded_labels_come_back_with_provenance(store):
    saved = store.record([judgement(PAIRS[0], label=3, score=0.71)], PAIRS[:1], IDENTITY)
    assert saved[0].record_id is not None
    found = store.lookup(PAIRS[:2], JUDGE_ID)
    assert found[1] is None
    hit = found[0]
    assert (hit.label, hit.verdict, hit.record_id, hit.from_store, hit.score) == (3, Verdict.LABELLED, saved[0].record_id, True, 0.71)
    assert (hit.calls, hit.prompt_tokens, hit.cost_usd) == (0, 0, 0.0)   # this call's spend
    record = store.get_record(saved[0].record_id)
    assert (record.calls, record.prompt_tokens, record.completion_tokens, record.cost_usd) == (1, 10, 1, 0.25)
    assert (record.raw_output, record.model, record.created_at) == ("3", "m", "2026-11-22T07:00:00+00:00")
    assert store.record_keys(saved[0].record_id) == (text_sha256(PAIRS[0].query), text_sha256(PAIRS[0].document))
    assert store.judge_identity(JUDGE_ID) == IDENTITY
    assert store.get_record(10_000) is None
    journal = sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert journal == "wal"


def test_the_key_is_the_texts_and_the_judge_not_the_ids(store):
    store.record([judgement(PAIRS[0])], PAIRS[:1], IDENTITY)
    renamed = replace(PAIRS[0], query_id="other-q", doc_id="other-d")
    [hit] = store.lookup([renamed], JUDGE_ID)
    assert hit is not None and (hit.query_id, hit.doc_id) == ("other-q", "other-d")
    assert store.lookup([replace(PAIRS[0], document=PAIRS[0].document + " ")], JUDGE_ID) == [None]
    assert store.lookup(PAIRS[:1], identity_sha256({**IDENTITY, "model": "m2"})) == [None]


def test_only_labels_are_reused_and_the_latest_wins(store):
    first = store.record([judgement(PAIRS[0], label=1)], PAIRS[:1], IDENTITY)[0]
    store.record([judgement(PAIRS[0], Verdict.UNPARSED, None, error="no label"),
                  judgement(PAIRS[1], Verdict.FAILED, None, error="down")], PAIRS[:2], IDENTITY)
    found = store.lookup(PAIRS[:2], JUDGE_ID)
    assert found[0].record_id == first.record_id and found[0].label == 1   # the unparsed row is not reused
    assert found[1] is None                                                # a failure is asked again
    latest = store.record([judgement(PAIRS[0], label=3)], PAIRS[:1], IDENTITY)[0]
    assert store.lookup(PAIRS[:1], JUDGE_ID)[0].record_id == latest.record_id
    assert store.get_record(first.record_id).label == 1                     # old provenance stays
    assert store.count(JUDGE_ID) == 4 and store.count(verdict=Verdict.FAILED) == 1


def test_a_bad_judgement_is_skipped_and_the_rest_of_its_batch_written(store, caplog):
    good, bad = judgement(PAIRS[0]), judgement(PAIRS[1], Verdict.FAILED, label=2)   # a FAILED verdict with a label
    saved = store.record([bad, good], PAIRS[1::-1], IDENTITY)
    # The good one was paid for: it is kept (issue 24), the bad one comes back unrecorded, said in the log.
    assert saved[0].record_id is None and saved[1].record_id is not None and store.count() == 1
    assert "not recorded" in caplog.text
    with pytest.raises(JudgeStoreError, match="judge_id"):
        store.record([replace(good, judge_id="x" * 64)], PAIRS[:1], IDENTITY)


def test_not_a_judgement_store(tmp_path):
    path = tmp_path / "other.sqlite3"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE embeddings (x)")
    with pytest.raises(JudgeStoreError, match="not an irforge judgement store"):
        JudgementStore(path)
    (tmp_path / "garbage.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(JudgeStoreError, match="unusable"):
        JudgementStore(tmp_path / "garbage.sqlite3")


def test_threads_and_processes_write_at_once(tmp_path):
    path = tmp_path / "shared.sqlite3"
    script = f"""
import sys
from irforge.judge.base import JudgePair, Judgement, Verdict, identity_sha256
from irforge.judge.store import JudgementStore
identity = {IDENTITY!r}
tag = sys.argv[1]
with JudgementStore({str(path)!r}) as store:
    for i in range(40):
        pair = JudgePair("q", "query " + tag, f"d{{i}}", f"doc {{i}}")
        store.record([Judgement("q", f"d{{i}}", Verdict.LABELLED, i % 4, str(i % 4), "test", "m", "t" * 64,
                                identity_sha256(identity), created_at="now")], [pair], identity)
"""
    JudgementStore(path).close()
    processes = [subprocess.Popen([sys.executable, "-c", script, f"p{n}"]) for n in range(2)]
    with JudgementStore(path) as store:
        def write(tag):
            for i in range(40):
                pair = JudgePair("q", f"query {tag}", f"d{i}", f"doc {i}")
                store.record([replace(judgement(pair), label=i % 4, raw_output=str(i % 4))], [pair], IDENTITY)

        threads = [threading.Thread(target=write, args=(f"t{n}",)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [process.wait(timeout=60) for process in processes] == [0, 0]
        assert store.count() == 160
        ids = [row[0] for row in sqlite3.connect(path).execute("SELECT record_id FROM judgements")]
        assert len(set(ids)) == 160
        for tag in ("p0", "p1", "t0", "t1"):
            found = store.lookup([JudgePair("q", f"query {tag}", f"d{i}", f"doc {i}") for i in range(40)], JUDGE_ID)
            assert [hit.label for hit in found] == [i % 4 for i in range(40)]


# -- JudgeCore over the store and a real (scripted) LLM endpoint ------------------------------
@pytest.fixture()
def core(llm_spec_data, tmp_path):
    def make(store_path=tmp_path / "core.sqlite3", **overrides) -> JudgeCore:
        return JudgeCore(OpenAIChatJudge(JudgeSpec.from_dict(llm_spec_data(**overrides))), JudgementStore(store_path))

    return make


def test_a_second_judge_call_makes_no_request(core, scripted_chat, scifact_pairs, tmp_path):
    with core(price_per_million_prompt_tokens=1.0) as judge:
        first = judge.judge(scifact_pairs)
        assert first.stats.calls == len(scifact_pairs) == len(scripted_chat.chat_requests)
        assert first.stats.labelled == len(scifact_pairs) and first.stats.cost_usd > 0
        assert all(j.record_id is not None and not j.from_store for j in first.judgements)
    with core() as judge:   # a new process would see the same: the labels are on disk
        second = judge.judge(list(reversed(scifact_pairs)))
    assert len(scripted_chat.chat_requests) == len(scifact_pairs)
    assert (second.stats.calls, second.stats.from_store, second.stats.cost_usd) == (0, len(scifact_pairs), 0.0)
    assert [j.label for j in second.judgements] == [j.label for j in reversed(first.judgements)]
    assert [j.record_id for j in second.judgements] == [j.record_id for j in reversed(first.judgements)]


def test_unparsed_and_failed_pairs_are_asked_again(core, scripted_chat, scifact_pairs):
    pairs = scifact_pairs[:3]
    scripted_chat.script("no idea", "no idea", scripted.status(400), "1")
    with core(max_unparsed_retries=1, max_concurrency=1) as judge:
        first = judge.judge(pairs)
        assert [j.verdict for j in first.judgements] == [Verdict.UNPARSED, Verdict.FAILED, Verdict.LABELLED]
        assert first.stats.as_dict() | {"cost_usd": 0} == {
            "pairs": 3, "from_store": 0, "calls": 4, "labelled": 1, "unparsed": 1, "failed": 1,
            "prompt_tokens": first.stats.prompt_tokens, "completion_tokens": first.stats.completion_tokens, "cost_usd": 0}
        second = judge.judge(pairs)
        failed_record = judge.store.get_record(first.judgements[1].record_id)
    assert second.stats.calls == 2 and second.stats.from_store == 1 and second.stats.labelled == 3
    assert len(scripted_chat.chat_requests) == 6
    assert failed_record.verdict is Verdict.FAILED and "HTTP 400" in failed_record.error   # kept for audit


def test_identical_pairs_in_one_request_are_judged_once(core, scripted_chat, scifact_pairs):
    pair = scifact_pairs[0]
    copy = replace(pair, query_id="copy-q", doc_id="copy-d")
    seen = []
    with core() as judge:
        outcome = judge.judge([pair, copy, pair], progress=seen.append)
    assert len(scripted_chat.chat_requests) == 1 and outcome.stats.calls == 1 and sum(seen) == 3
    assert [j.label for j in outcome.judgements] == [outcome.judgements[0].label] * 3
    assert (outcome.judgements[1].query_id, outcome.judgements[1].doc_id, outcome.judgements[1].calls) == ("copy-q", "copy-d", 0)


def test_each_chunk_is_stored_before_the_next_is_sent(core, scripted_chat, scifact_pairs, tmp_path):
    judge = core()
    judge.chunk_pairs = 4
    calls = []
    backend_judge = judge.backend.judge

    def judge_then_crash(pairs, progress=None):
        calls.append(len(pairs))
        if len(calls) == 3:
            raise KeyboardInterrupt   # the process killed during the third chunk
        return backend_judge(pairs, progress)

    judge.backend.judge = judge_then_crash
    with pytest.raises(KeyboardInterrupt):
        judge.judge(scifact_pairs[:12])
    judge.close()
    with core() as again:
        outcome = again.judge(scifact_pairs[:12])
    assert outcome.stats.from_store == 8 and outcome.stats.calls == 4


def test_malformed_requests_name_the_pair(core):
    with core() as judge:
        with pytest.raises(JudgeRequestError, match=r"pair 2 \(query q1, document d1\): the query text is empty"):
            judge.judge([PAIRS[0], replace(PAIRS[1], query="  ")])
        with pytest.raises(JudgeRequestError, match="pair 1: query_id and doc_id must not be empty"):
            judge.judge([replace(PAIRS[0], doc_id="")])
        with pytest.raises(JudgeRequestError, match="`document` must be text"):
            judge.judge([replace(PAIRS[0], document=None)])


def test_the_key_never_reaches_the_store(core, scripted_chat, scifact_pairs, fake_key, tmp_path):
    scripted_chat.script(f"key {fake_key}", f"{fake_key}!", scripted.echo_auth())
    with core(store_path=tmp_path / "secret.sqlite3", max_unparsed_retries=1, max_concurrency=1) as judge:
        outcome = judge.judge(scifact_pairs[:3])
        assert [j.verdict for j in outcome.judgements] == [Verdict.UNPARSED, Verdict.FAILED, Verdict.FAILED]
        for path in tmp_path.glob("secret.sqlite3*"):   # the database and its WAL
            assert fake_key.encode() not in path.read_bytes()
        assert "***" in judge.store.get_record(outcome.judgements[0].record_id).raw_output


def test_open_judge_builds_an_llm_judge_from_a_spec_file(llm_spec_file, scripted_chat, scifact_pairs, tmp_path):
    from irforge.judge.errors import JudgeSpecError
    from irforge.judge.factory import open_judge

    with open_judge(str(llm_spec_file()), tmp_path / "f.sqlite3") as judge:
        assert judge.identity()["backend"] == "openai-chat" and judge.store.path == tmp_path / "f.sqlite3"
        assert judge.judge(scifact_pairs[:2]).stats.labelled == 2
    with pytest.raises(JudgeSpecError, match="neither 'embedded' nor an existing judge spec file"):
        open_judge(str(tmp_path / "missing.yaml"), tmp_path / "f.sqlite3")
