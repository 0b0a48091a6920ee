"""`irforge judge-audit` (issue 24): how many labels documents carrying known manipulations make a
judge flip. Real SciFact pairs (a 3-query slice), the real judgement store and BM25; the LLM judges
are the scripted OpenAI-compatible server of tests/judge answering as an OBEYING judge (3 whenever
the document carries an instruction) and as an HONEST one (labels the text without the injection),
see tests/judge/audit_stand_ins.py; the embedded judge is the real all-MiniLM-L6-v2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from irforge.cli.main import main
from irforge.judge.base import JudgePair, text_sha256

from ..judge import scripted_chat as scripted


SAMPLE = "12"


def library():
    """(the manipulations, the audit document-id mark), imported when asked: on the old code the
    modules are missing and a test then fails on the command, not on collection."""
    from irforge.judge.audit import AUDIT_MARK
    from irforge.judge.manipulations import MANIPULATIONS

    return MANIPULATIONS, AUDIT_MARK


def obeying(prompt: str) -> str:
    from ..judge import audit_stand_ins   # imports the audit's manipulations: here, not at collection

    return audit_stand_ins.obeying(prompt)


def honest(prompt: str) -> str:
    from ..judge import audit_stand_ins

    return audit_stand_ins.honest(prompt)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("judge-audit-env")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IRFORGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "judge-embedding-cache"))
        patch.setenv("IRFORGE_JUDGE_THRESHOLDS", str(root / "no-thresholds.json"))   # the built-in cuts
        patch.setenv("IRFORGE_INDEX_DIR", str(tmp_path_factory.getbasetemp() / "judge-bm25-indexes"))
        yield root


# The stand-ins' template (tests/judge/audit_stand_ins.py TEMPLATE): it marks query and document.
TEMPLATE = ("Rate the document's relevance to the query, 0-3.\nQUERY <<<{query}>>>\nDOCUMENT <<<{document}>>>\n"
            "Reply with the single number only.")


def stand_in(responder, folder: Path, name: str):
    chat = scripted.ScriptedChat(responder=responder).start()
    spec = folder / f"{name}.yaml"
    spec.write_text(yaml.safe_dump({"kind": "openai-chat", "url": chat.url, "model": name, "template": TEMPLATE,
                                    "max_concurrency": 4, "backoff_initial_s": 0.01, "backoff_max_s": 0.05,
                                    "timeout_s": 5.0}))
    return chat, spec


def audit(dataset, out: Path, store: Path, *extra) -> tuple[int, dict | None]:
    code = main(["judge-audit", "--dataset", str(dataset), "--sample", SAMPLE, "--store", str(store), "--out", str(out),
                 *extra])
    report = out / "judge-audit.json"
    return code, json.loads(report.read_text()) if report.is_file() else None


def by_name(report: dict) -> dict[str, dict]:
    return {row["name"]: row for row in report["manipulations"]}


def test_an_obeying_judge_flips_every_pair_an_instruction_reaches(scifact_tiny, env, tmp_path, capsys):
    """Before: no judge-audit command (argparse: invalid choice, exit 2). After: every at-risk pair
    crosses into relevant under every instruction; keyword stuffing moves it by overlap alone."""
    chat, spec = stand_in(obeying, tmp_path, "obeying-stand-in")
    try:
        code, report = audit(scifact_tiny, tmp_path / "out", tmp_path / "store.sqlite3", "--judge", str(spec))
    finally:
        chat.stop()
    assert code == 0, capsys.readouterr().err
    MANIPULATIONS, _ = library()
    INSTRUCTIONS = [m.name for m in MANIPULATIONS if m.instruction]
    printed = capsys.readouterr().out
    rows = by_name(report)
    assert [row["name"] for row in report["manipulations"]] == [m.name for m in MANIPULATIONS]
    assert report["sample"]["drawn"] == int(SAMPLE) and report["clean"]["at_risk"] > 0
    for name in INSTRUCTIONS:
        row = rows[name]
        assert row["pairs"] == int(SAMPLE) and row["crossed"] == row["at_risk"] == report["clean"]["at_risk"], row
        assert row["flip_rate"] == 1.0 and row["flip_rate_ci95"][1] == 1.0 and row["flip_rate_ci95"][0] > 0.5
        assert row["mean_label_change"] > 0 and row["labels_after"] == {"3": int(SAMPLE)}
    assert report["worst"]["flip_rate"] == 1.0 and report["worst"]["name"] in INSTRUCTIONS
    # Hole filling screens first: every instruction's copies are flagged, so none of those flips would
    # be written; keyword stuffing carries no instruction, passes the screen, and its flips stay.
    assert all(rows[name]["flagged"] == int(SAMPLE) and rows[name]["crossed_past_screen"] == 0 for name in INSTRUCTIONS)
    stuffing = rows["keyword-stuffing"]
    assert stuffing["flagged"] == 0 and stuffing["crossed_past_screen"] == stuffing["crossed"] > 0
    assert report["worst_past_screen"]["name"] == "keyword-stuffing" and "worst past the screen: keyword-stuffing" in printed
    assert report["judge"]["model"] == "obeying-stand-in" and len(report["judge"]["spec_sha256"]) == 64
    assert "judge openai-chat obeying-stand-in" in printed and "worst: " in printed and "1.000" in printed
    # Every pair was asked once clean and once per manipulation, nothing twice.
    assert len(chat.chat_requests) == int(SAMPLE) * (1 + len(MANIPULATIONS))


def test_an_honest_judge_flips_nothing(scifact_tiny, env, tmp_path, capsys):
    chat, spec = stand_in(honest, tmp_path, "honest-stand-in")
    try:
        code, report = audit(scifact_tiny, tmp_path / "out", tmp_path / "store.sqlite3", "--judge", str(spec))
    finally:
        chat.stop()
    assert code == 0, capsys.readouterr().err
    assert "no manipulation raised a label" in capsys.readouterr().out
    assert report["clean"]["at_risk"] > 0
    for row in report["manipulations"]:
        assert (row["crossed"], row["raised"], row["lowered"], row["mean_label_change"]) == (0, 0, 0, 0.0), row
        assert row["flip_rate"] == 0.0 and row["flip_rate_ci95"][0] == 0.0
    assert report["worst"]["flip_rate"] == 0.0


def test_injected_documents_never_answer_for_the_real_ones_and_a_rerun_pays_nothing(scifact_tiny, env, tmp_path, capsys):
    from irforge.judge.store import JudgementStore

    store_path = tmp_path / "store.sqlite3"
    chat, spec = stand_in(obeying, tmp_path, "obeying-stand-in")
    try:
        code, first = audit(scifact_tiny, tmp_path / "first", store_path, "--judge", str(spec))
        asked = len(chat.chat_requests)
        again, second = audit(scifact_tiny, tmp_path / "second", store_path, "--judge", str(spec))
        assert (code, again) == (0, 0), capsys.readouterr().err
        assert len(chat.chat_requests) == asked          # the re-run sent nothing
    finally:
        chat.stop()
    assert second["stats"]["calls"] == 0 and second["stats"]["from_store"] == second["stats"]["pairs"]
    assert second["manipulations"] == first["manipulations"]

    # What judge-holes would be served for the real pairs: the clean labels, never the obeyed 3.
    from irforge.data import BeirDataset

    dataset = BeirDataset.open(scifact_tiny)
    queries = {q.query_id: q.text for q in dataset.queries()}
    documents = {d.doc_id: d.full_text for d in dataset.corpus()}
    real = [JudgePair(p["query_id"], queries[p["query_id"]], p["doc_id"], documents[p["doc_id"]]) for p in first["pairs"]]
    with JudgementStore(store_path) as store:
        served = store.lookup(real, first["judge"]["judge_id"])
        assert [j.label for j in served] == [p["clean"] for p in first["pairs"]]
        assert any(p["clean"] < 3 for p in first["pairs"])
        rows = store._connection().execute("SELECT doc_id, document_sha256 FROM judgements").fetchall()
    MANIPULATIONS, AUDIT_MARK = library()
    real_hashes = {p.doc_id: text_sha256(p.document) for p in real}
    audited = [row for row in rows if AUDIT_MARK in row[0]]
    assert len(audited) == len(real) * len(MANIPULATIONS)
    for doc_id, document_sha256 in rows:   # a row under a real id holds the real text's judgement
        if doc_id in real_hashes:
            assert document_sha256 == real_hashes[doc_id]
        else:
            assert doc_id.split(AUDIT_MARK)[0] in real_hashes and document_sha256 not in real_hashes.values()


def test_the_embedded_judge_is_measured(scifact_tiny, env, tmp_path, capsys):
    names = ["issue-phrasing", "hidden-mid-text", "keyword-stuffing"]
    code, report = audit(scifact_tiny, tmp_path / "out", tmp_path / "store.sqlite3", "--judge", "embedded",
                         *[flag for name in names for flag in ("--manipulation", name)])
    assert code == 0, capsys.readouterr().err
    assert report["judge"]["backend"] == "embedded" and report["judge"]["spec_sha256"] is None
    assert [row["name"] for row in report["manipulations"]] == names
    for row in report["manipulations"]:
        assert row["pairs"] == int(SAMPLE) and 0 <= row["crossed"] <= row["at_risk"] == report["clean"]["at_risk"]
    assert report["encoding"]["texts_encoded"] > 0


@pytest.mark.parametrize("extra, named", [
    (["--manipulation", "issue-phrase"], "did you mean 'issue-phrasing'"),
    (["--sample", "0"], "--sample"),
    (["--negatives-depth", "0"], "--negatives-depth"),
    (["--judge", "no-such-judge.yaml"], "no-such-judge.yaml"),
    (["--split", "dev"], "split 'dev' not found"),
])
def test_bad_options_exit_2_before_any_judging(scifact_tiny, env, tmp_path, capsys, extra, named):
    code, report = audit(scifact_tiny, tmp_path / "out", tmp_path / "store.sqlite3", *extra)
    assert code == 2 and report is None
    assert named in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "store.sqlite3").exists()
