"""The Judge service over gRPC: the same judgements as the in-process core, chunked requests, the
same error types, and `irforge service judge` as a real server process."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from irforge.common.grpc_errors import raise_from_rpc
from irforge.common.grpc_server import open_channel, start_server
from irforge.judge import protocol, server
from irforge.judge.backends.llm import OpenAIChatJudge
from irforge.judge.base import JudgePair, Verdict, identity_sha256
from irforge.judge.client import RemoteJudge
from irforge.judge.core import JudgeCore
from irforge.judge.errors import JudgeRequestError
from irforge.judge.spec import JudgeSpec
from irforge.judge.store import JudgementStore
from irforge.v1 import judge_pb2_grpc

scripted = sys.modules["irforge_judge_tests_scripted_chat"]  # loaded by this folder's conftest.py

# What differs between two runs of the same judge: when, and which store row.
RUN_SPECIFIC = ("created_at", "record_id")


def comparable(judgement):
    return {k: v for k, v in dataclasses.asdict(judgement).items() if k not in RUN_SPECIFIC}


@pytest.fixture()
def make_core(llm_spec_data, tmp_path):
    def make(name: str) -> JudgeCore:
        spec = JudgeSpec.from_dict(llm_spec_data(price_per_million_prompt_tokens=0.5,
                                                 price_per_million_completion_tokens=1.5, max_unparsed_retries=1))
        return JudgeCore(OpenAIChatJudge(spec), JudgementStore(tmp_path / f"{name}.sqlite3"))

    return make


@pytest.fixture()
def remote(make_core):
    core = make_core("server")
    running = start_server([server.binding(core)])
    client = RemoteJudge(f"127.0.0.1:{running.port}", chunk_pairs=5)
    yield client, core
    client.close()
    running.stop(0)
    core.close()


def garbage_for_some(prompt: str):
    """Deterministic per prompt: a few pairs answer garbage (-> UNPARSED), the rest a label."""
    label = scripted.label_by_hash(prompt)
    return "I cannot tell" if label == "0" else label


def test_the_round_trip_equals_the_core(remote, make_core, scripted_chat, scifact_pairs):
    client, server_core = remote
    scripted_chat.responder = garbage_for_some
    over_grpc = client.judge(scifact_pairs)
    sent = len(scripted_chat.chat_requests)
    with make_core("local") as local:
        in_process = local.judge(scifact_pairs)
    assert [comparable(j) for j in over_grpc.judgements] == [comparable(j) for j in in_process.judgements]
    # Summed over 5 chunks of 5 pairs: the same figures (cost up to float summation order).
    assert dataclasses.replace(over_grpc.stats, cost_usd=0) == dataclasses.replace(in_process.stats, cost_usd=0)
    assert over_grpc.stats.cost_usd == pytest.approx(in_process.stats.cost_usd) and over_grpc.stats.cost_usd > 0
    assert over_grpc.stats.unparsed > 0 and over_grpc.stats.labelled > 0 and over_grpc.stats.calls == sent
    assert all((j.label is None) == (j.verdict is not Verdict.LABELLED) for j in over_grpc.judgements)
    assert all(j.record_id is not None for j in over_grpc.judgements)
    assert client.identity() == server_core.identity()
    assert over_grpc.judgements[0].judge_id == identity_sha256(client.identity()) == client.judge_id == server_core.judge_id
    # A re-run through the server reuses every label; only the unparsed pairs are asked again (twice each).
    before = len(scripted_chat.chat_requests)
    again = client.judge(scifact_pairs)
    assert again.stats.from_store == over_grpc.stats.labelled
    assert again.stats.calls == 2 * over_grpc.stats.unparsed == len(scripted_chat.chat_requests) - before


def test_optional_fields_survive_the_wire():
    from irforge.judge.base import Judgement

    for label, score, record_id in ((None, None, None), (0, 0.0, 0), (3, 0.42, 17)):
        judgement = Judgement("q", "d", Verdict.LABELLED if label is not None else Verdict.FAILED, label, "", "b", "m",
                              "t", "j", score=score, record_id=record_id)
        assert protocol.judgement_from_proto(protocol.judgement_to_proto(judgement)) == judgement


def test_errors_keep_their_type(remote, scifact_pairs):
    client, _ = remote
    bad = dataclasses.replace(scifact_pairs[0], query="")
    with pytest.raises(JudgeRequestError, match="pair 1"):
        client.judge([bad])
    # Past the client's own check: the server's error comes back as the same type.
    stub = judge_pb2_grpc.JudgeStub(open_channel(client.address))
    with pytest.raises(grpc.RpcError) as caught:
        stub.Judge(protocol.pairs_to_proto([scifact_pairs[0], bad]))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(JudgeRequestError, match=r"pair 2 .* the query text is empty"):
        raise_from_rpc(caught.value, client.address)


def test_irforge_service_judge(llm_spec_file, scripted_chat, scifact_pairs, tmp_path):
    spec_path = llm_spec_file()
    store_path = tmp_path / "served.sqlite3"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "irforge.cli.main", "service", "judge", "--port", "0", "--judge", str(spec_path),
         "--store", str(store_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = process.stdout.readline()
        match = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
        assert match, f"server did not start: {line!r} {process.stderr.read() if process.poll() is not None else ''}"
        with open_channel(match.group(1)) as channel:
            health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="irforge.v1.Judge"))
            assert health.status == health_pb2.HealthCheckResponse.SERVING
        with RemoteJudge(match.group(1)) as client:
            outcome = client.judge(scifact_pairs[:3])
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0
    assert outcome.stats.labelled == 3 and outcome.stats.calls == 3 == len(scripted_chat.chat_requests)
    with JudgementStore(store_path) as store:
        assert store.count() == 3
        assert [j.label for j in store.lookup(scifact_pairs[:3], outcome.judgements[0].judge_id)] == \
            [j.label for j in outcome.judgements]
    assert os.environ["IRFORGE_TEST_JUDGE_KEY"] not in store_path.read_bytes().decode("utf-8", "replace")
    assert JudgePair  # the contract type travels with the client
