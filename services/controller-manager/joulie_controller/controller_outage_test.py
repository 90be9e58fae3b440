"""Issue 23, defect 2: through an API server outage the controller manager backs off quietly —
one log line when its ticks start failing, one when they work again, no traceback per retry."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from joulie_controller.controller import Controller
from joulie_controller.settings import ReconcileSettings, Settings
from joulie_controller.telemetry.prometheus import PowerReading

MaxRetryError = type("MaxRetryError", (Exception,), {"__module__": "urllib3.exceptions"})


class DownKube:
    def __init__(self, stop: threading.Event, fail_for: int) -> None:
        self.calls, self.stop, self.fail_for = 0, stop, fail_for

    def snapshot(self, *args: Any) -> Any:
        self.calls += 1
        if self.calls <= self.fail_for:
            raise MaxRetryError("HTTPConnectionPool(host='127.0.0.1', port=6443): Max retries exceeded with url: "
                                "/api/v1/nodes (Caused by NewConnectionError('Connection refused'))")
        self.stop.set()
        raise KeyError("the API server is back, and then a bug")


class NoPower:
    def read(self) -> PowerReading:
        return PowerReading()

    def agent_times(self) -> None:
        return None


def test_a_long_outage_logs_one_line_and_a_bug_after_it_one_traceback(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    kube = DownKube(stop, fail_for=354)
    c = Controller(Settings(reconcile=ReconcileSettings(interval_s=0.0)), kube, NoPower())  # type: ignore[arg-type]
    if hasattr(c, "tick_health"):
        c.tick_health.delays_s = (0.0,)  # retry at once: the test is about what is logged
    with caplog.at_level(logging.INFO):
        c.run(stop)
    assert kube.calls == 355
    failing = [r for r in caplog.records if "failing" in r.getMessage()]
    assert len(caplog.records) == 1 and len(failing) == 1, [r.getMessage() for r in caplog.records]
    assert failing[0].getMessage().startswith("reconcile tick failing (MaxRetryError: HTTPConnectionPool(")
    assert failing[0].exc_info is None  # an outage is no bug: no traceback
    assert "Traceback" not in caplog.text


def test_a_tick_failing_for_a_bug_carries_its_traceback_once(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    kube = DownKube(stop, fail_for=0)
    c = Controller(Settings(reconcile=ReconcileSettings(interval_s=0.0)), kube, NoPower())  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO):
        c.run(stop)
    assert len(caplog.records) == 1 and caplog.records[0].exc_info is not None
