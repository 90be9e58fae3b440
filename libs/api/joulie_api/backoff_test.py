from collections.abc import Callable

import pytest

from joulie_api.backoff import DEFAULT_DELAYS_S, Backoff, retry


class Temporary(Exception):
    pass


class Permanent(Exception):
    pass


def _flaky(failures: int, exc: type[Exception]) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def op() -> str:
        calls.append(1)
        if len(calls) <= failures:
            raise exc("boom")
        return "done"

    return calls, op


def test_temporary_failures_are_retried_with_the_written_down_delays() -> None:
    slept: list[float] = []
    calls, op = _flaky(3, Temporary)
    result = retry(op, is_temporary=lambda e: isinstance(e, Temporary), backoff=Backoff(sleep=slept.append))
    assert result == "done"
    assert len(calls) == 4
    assert slept == list(DEFAULT_DELAYS_S[:3])


def test_permanent_failure_raises_at_once_without_sleeping() -> None:
    slept: list[float] = []
    calls, op = _flaky(1, Permanent)
    with pytest.raises(Permanent):
        retry(op, is_temporary=lambda e: isinstance(e, Temporary), backoff=Backoff(sleep=slept.append))
    assert len(calls) == 1
    assert slept == []


def test_retries_stop_when_delays_run_out_and_the_error_is_reported() -> None:
    slept: list[float] = []
    calls, op = _flaky(100, Temporary)
    with pytest.raises(Temporary):
        retry(op, is_temporary=lambda e: True, backoff=Backoff(delays_s=(0.5, 2), sleep=slept.append))
    assert len(calls) == 3
    assert slept == [0.5, 2]
