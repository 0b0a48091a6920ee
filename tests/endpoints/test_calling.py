"""RobustCaller on its own: retry classes, backoff and Retry-After, budget, circuit breaker,
bounded concurrent maps. Failures are real httpx exceptions (what the HTTP endpoints raise);
the endpoint tests exercise the same paths against real servers."""

from __future__ import annotations

import email.utils
import threading
import time

import httpx
import pytest

from irforge.common.call_failures import MAX_RETRY_AFTER_S, TransientError, classify, parse_retry_after
from irforge.common.calling import RobustCaller
from irforge.endpoints.errors import EndpointAnswerError, EndpointError, EndpointUnavailable, RequestBudgetExhausted


def status_error(status: int, headers: dict | None = None, body: str = "nope") -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://team.example/search")
    response = httpx.Response(status, headers=headers or {}, text=body, request=request)
    return httpx.HTTPStatusError(f"HTTP {status}", request=request, response=response)


def script(*outcomes):
    """A request function answering each outcome in turn: an exception is raised, else returned."""
    calls = []

    def fn():
        outcome = outcomes[min(len(calls), len(outcomes) - 1)]
        calls.append(outcome)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    fn.calls = calls
    return fn


def make_caller(**options) -> tuple[RobustCaller, list[float]]:
    slept: list[float] = []
    defaults = dict(max_retries=5, backoff_initial_s=0.5, backoff_max_s=4.0, breaker_failures=5,
                    sleep=slept.append, random=lambda: 1.0)
    return RobustCaller("team.example:443", **{**defaults, **options}), slept


def test_retries_5xx_timeouts_and_connection_errors_with_capped_exponential_backoff():
    caller, slept = make_caller(breaker_failures=10)
    fn = script(status_error(503), httpx.ReadTimeout("slow"), httpx.ConnectError("refused"), status_error(500), "done")
    assert caller.call(fn, what="request 1") == "done"
    assert slept == [0.5, 1.0, 2.0, 4.0]  # random() = 1: the top of each full-jitter window, capped at 4
    assert caller.counters.as_dict() == {"requests": 5, "retries": 4, "failures": 4, "rate_limited": 0, "backoff_s": 7.5,
                                         "timeouts": 1, "splits": 0}


def test_full_jitter_draws_from_zero_to_the_window():
    caller, slept = make_caller(random=lambda: 0.25)
    caller.call(script(status_error(502), status_error(502), "ok"), what="r")
    assert slept == [0.125, 0.25]


def test_retry_after_seconds_and_http_date_are_honoured():
    caller, slept = make_caller(random=lambda: 0.0)
    caller.call(script(status_error(429, {"Retry-After": "2"}), "ok"), what="r")
    assert slept == [2.0]
    assert caller.counters.rate_limited == 1
    future = email.utils.format_datetime(email.utils.localtime(), usegmt=False)
    assert parse_retry_after(future) == pytest.approx(0.0, abs=1.5)
    now = time.time()
    later = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after(later, now=now) == pytest.approx(30.0, abs=1.0)
    assert parse_retry_after("soon") is None and parse_retry_after("-3") == 0.0
    assert classify(status_error(503, {"retry-after-ms": "250"})).retry_after == 0.25


def test_a_retry_after_beyond_the_limit_stops_instead_of_sleeping():
    caller, slept = make_caller()
    with pytest.raises(EndpointError, match=r"asked to retry request 7 after 3600 s .*quota"):
        caller.call(script(status_error(429, {"Retry-After": "3600"}), "ok"), what="request 7")
    assert slept == [] and 3600 > MAX_RETRY_AFTER_S


def test_other_4xx_is_refused_at_once_naming_the_request():
    caller, slept = make_caller()
    fn = script(status_error(404, body='{"error": "no such index"}'), "ok")
    with pytest.raises(EndpointError, match=r"endpoint team.example:443 refused search request for query '12': HTTP 404: .*no such index"):
        caller.call(fn, what="search request for query '12'")
    assert len(fn.calls) == 1 and slept == []


def test_gives_up_after_max_retries_naming_the_request_and_the_last_error():
    caller, slept = make_caller(max_retries=2)
    fn = script(status_error(500, body="boom"))
    with pytest.raises(EndpointError, match=r"gave up on embeddings request 3/9 after 3 attempts; last error: HTTP 500: boom"):
        caller.call(fn, what="embeddings request 3/9")
    assert len(fn.calls) == 3 and len(slept) == 2


def test_answer_errors_and_unknown_errors_are_not_retried():
    caller, _ = make_caller()
    fn = script(EndpointAnswerError("bad dimension"), "ok")
    with pytest.raises(EndpointAnswerError, match="bad dimension"):
        caller.call(fn, what="r")
    bug = script(KeyError("a bug in the request function"), "ok")
    with pytest.raises(KeyError):
        caller.call(bug, what="r")
    assert len(fn.calls) == len(bug.calls) == 1


def test_transient_error_is_retried_with_its_retry_after():
    caller, slept = make_caller(random=lambda: 0.0)
    assert caller.call(script(TransientError("busy", retry_after=0.75), 42), what="r") == 42
    assert slept == [0.75]


def test_request_budget_counts_every_attempt():
    caller, _ = make_caller(request_budget=3)
    assert caller.call(script(status_error(503), "a"), what="first") == "a"   # 2 requests
    assert caller.call(script("b"), what="second") == "b"                      # 3
    with pytest.raises(RequestBudgetExhausted, match=r"request budget of 3 requests is used up \(1 of them retries\) before third"):
        caller.call(script("c"), what="third")
    assert caller.counters.requests == 3


def test_circuit_breaker_opens_after_consecutive_failures_and_stays_open():
    caller, slept = make_caller(max_retries=10, breaker_failures=3)
    fn = script(httpx.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(EndpointUnavailable, match=r"endpoint team.example:443 looks down: 3 consecutive requests failed "
                                                  r"\(last: ConnectError: \[Errno 111\] Connection refused, during batch 1\)"):
        caller.call(fn, what="batch 1")
    assert len(fn.calls) == 3 and len(slept) == 2  # it opened on the third failure, without a third wait
    later = script("ok")
    with pytest.raises(EndpointUnavailable):
        caller.call(later, what="batch 2")
    assert later.calls == []  # nothing more is sent once open


def test_rate_limits_do_not_trip_the_breaker_and_successes_reset_it():
    caller, _ = make_caller(breaker_failures=2, max_retries=10)
    assert caller.call(script(*[status_error(429, {"Retry-After": "0"})] * 5, "ok"), what="r") == "ok"
    for _ in range(3):  # one failure then a success, again and again: never 2 in a row
        assert caller.call(script(status_error(500), "ok"), what="r") == "ok"


def test_secrets_are_redacted_from_messages():
    caller, _ = make_caller(secrets=["sk-secret-123", None])
    with pytest.raises(EndpointError) as error:
        caller.call(script(status_error(401, body="bad key sk-secret-123")), what="r")
    assert "sk-secret-123" not in str(error.value) and "***" in str(error.value)
    assert error.value.__cause__ is None and error.value.__suppress_context__


def test_map_keeps_input_order_and_bounds_concurrency():
    caller = RobustCaller("h")
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def work(n: int) -> int:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.02 * (n % 3))
        with lock:
            state["now"] -= 1
        return n * n

    assert caller.map(work, range(20), max_concurrency=3) == [n * n for n in range(20)]
    assert state["peak"] == 3
    assert caller.map(work, [], max_concurrency=3) == []


def test_map_stops_on_the_first_error_and_wakes_requests_waiting_to_retry():
    caller = RobustCaller("h", max_retries=3, backoff_initial_s=0.01)  # the real, interruptible sleep
    started = []

    def work(n: int) -> int:
        started.append(n)
        if n == 0:
            raise status_error(429, {"Retry-After": "60"})  # would wait a minute before retrying
        if n == 1:
            time.sleep(0.2)
            raise EndpointAnswerError("answer for item 1 is wrong")
        time.sleep(0.05)
        return n

    begun = time.monotonic()
    with pytest.raises(EndpointAnswerError, match="item 1"):
        caller.map(work, range(50), max_concurrency=2, what=lambda n: f"item {n}")
    assert time.monotonic() - begun < 5          # item 0 stopped waiting for its Retry-After
    assert len(started) < 10                     # nothing new started after the failure
    assert caller.map(lambda n: n + 1, [1, 2], max_concurrency=2) == [2, 3]  # usable afterwards


@pytest.mark.parametrize("error", [EndpointAnswerError("bad answer for query '3'"), EndpointUnavailable("down"),
                                   RequestBudgetExhausted("budget"), EndpointError("refused")])
def test_endpoint_errors_cross_grpc_with_their_type(error):
    import grpc

    from irforge.common.grpc_errors import raise_from_rpc, status_for

    class Status(grpc.RpcError):
        def code(self):
            return status_for(error)

        def details(self):
            return f"{type(error).__name__}: {error}"

    with pytest.raises(type(error), match=str(error)) as rebuilt:
        raise_from_rpc(Status(), "127.0.0.1:1")
    assert type(rebuilt.value) is type(error)


@pytest.mark.parametrize("data, named, left_out", [
    ({"kind": "openai-embeddings", "url": "http://127.0.0.1:9/v1", "model": "m", "timeout_s": 30, "batch_size": 16},
     ["`timeout_s` (now 30;", "`batch_size` (now 16)", "`max_concurrency` (now 4)"], []),
    ({"kind": "search-http", "url": "http://127.0.0.1:9/search", "max_concurrency": 8},
     ["`timeout_s` (now 60;", "`max_concurrency` (now 8)"], ["batch_size"]),   # one query a request
    ({"kind": "openai-chat", "url": "http://127.0.0.1:9/v1", "model": "judge", "timeout_s": 5},
     ["`timeout_s` (now 5;", "`max_concurrency` (now 4)"], ["batch_size"]),    # the judge's spec
], ids=["embeddings", "search", "judge"])
def test_timeout_advice_names_each_kinds_settings_with_their_values(data, named, left_out):
    from irforge.endpoints.spec import EndpointSpec
    from irforge.judge.spec import JudgeSpec

    spec = (JudgeSpec if data["kind"] == "openai-chat" else EndpointSpec).from_dict(data)
    advice = RobustCaller.from_spec(spec).timeout_advice()
    assert advice.startswith("The endpoint answers too slowly for these settings: raise `timeout_s`")
    assert all(text in advice for text in named) and not any(text in advice for text in left_out)
