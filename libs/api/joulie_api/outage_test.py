"""One log line per state change, quiet backoff in between."""

import logging

import pytest

from joulie_api.outage import Outage, short_error, unanswered


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_a_long_outage_logs_two_lines_and_backs_off(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    o = Outage("API server", logging.getLogger("t"), clock)
    tries = 0
    with caplog.at_level(logging.INFO):
        while clock.t < 360:  # six minutes, a tick a second
            if o.due():
                tries += 1
                o.failed(ConnectionRefusedError(111, "Connection refused"))
            clock.t += 1
        assert o.due() is False or o.down
        clock.t += 21
        assert o.due()
        o.ok()
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["API server failing",
                                                                       "API server works again after 381 s"]
    assert 15 < tries < 30  # 1, 1, 2, 3, 5, 8, 13, then every 21 s: not one per tick
    assert "Traceback" not in caplog.text and not o.down and o.due()


def test_errors_are_one_bounded_line() -> None:
    err = RuntimeError("HTTPConnectionPool(host='127.0.0.1', port=1): Max retries exceeded " + "x" * 500 + "\nmore")
    text = short_error(err)
    assert text.startswith("RuntimeError: HTTPConnectionPool") and len(text) < 230 and "\n" not in text
    assert short_error(TimeoutError()) == "TimeoutError"


def test_no_answer_is_told_from_a_refusal() -> None:
    from joulie_api.kube import KubeWriteError

    MaxRetryError = type("MaxRetryError", (Exception,), {"__module__": "urllib3.exceptions"})
    assert unanswered(MaxRetryError("/api/v1/nodes/n1")) and unanswered(ConnectionRefusedError())
    assert unanswered(KubeWriteError("apply", "NodeTwin", "n1", "m", 503, "unavailable"))
    assert unanswered(KubeWriteError("apply", "NodeTwin", "n1", "m", 429, "slow down"))
    assert not unanswered(KubeWriteError("apply", "NodeTwin", "n1", "m", 422, "invalid"))
    assert not unanswered(RuntimeError("apiserver said no"))


def test_an_http_error_is_one_line_with_its_status_and_the_servers_message() -> None:
    # The kubernetes client's ApiException prints every response header on a line of its own.
    from kubernetes.client.exceptions import ApiException

    err = ApiException(status=429, reason="Too Many Requests")
    err.headers = {"Retry-After": "1", "Content-Type": "application/json"}
    err.body = '{"kind": "Status", "message": "storage is\\nre-initializing"}'
    assert "\n" in str(err)
    assert short_error(err) == "ApiException: HTTP 429 Too Many Requests: storage is re-initializing"
    err.body = "not json"
    assert short_error(err) == "ApiException: HTTP 429 Too Many Requests"


def test_a_conflict_is_for_now_a_refusal_is_for_good() -> None:
    from joulie_api.kube import KubeWriteError
    from joulie_api.outage import not_now

    assert not_now(KubeWriteError("apply status of", "NodeTwin", "n1", "m", 409, "conflict"))
    assert not_now(ConnectionRefusedError()) and not not_now(KubeWriteError("apply", "NodeTwin", "n1", "m", 422, "x"))
