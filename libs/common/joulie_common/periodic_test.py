"""The shared push loop: ticks at its interval, none after stop."""

from __future__ import annotations

import threading
import time

from joulie_common.periodic import Periodic


def test_ticks_every_interval_and_never_after_stop() -> None:
    ticks: list[float] = []
    seen = threading.Event()

    def tick() -> None:
        ticks.append(time.monotonic())
        if len(ticks) >= 3:
            seen.set()

    p = Periodic(0.02, tick, "test")
    p.start()
    assert seen.wait(5)
    p.stop()
    count = len(ticks)
    time.sleep(0.1)
    assert len(ticks) == count >= 3


def test_stop_before_start_is_harmless() -> None:
    Periodic(10.0, lambda: None, "idle").stop()
