"""Stopping deployed processes: many at once, SIGKILL for those that ignore SIGTERM."""

from __future__ import annotations

import subprocess
import time

from joulie_simcluster.runtimes.pids import pid_alive, stop_pids


def _start(script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sh", "-c", script], start_new_session=True)


def test_processes_that_ignore_sigterm_are_stopped_together_not_one_grace_after_another() -> None:
    # Pool agents blocked on a stalled FUSE view do not stop on SIGTERM; one grace each took minutes.
    stubborn = [_start("trap '' TERM; sleep 60 & wait; sleep 60") for _ in range(6)]
    polite = [_start("sleep 60") for _ in range(2)]
    time.sleep(0.3)  # the traps are set
    t0 = time.monotonic()
    assert stop_pids([p.pid for p in stubborn + polite], grace_s=2.0) == 8
    took = time.monotonic() - t0
    assert not any(pid_alive(p.pid) for p in stubborn + polite)
    # One grace for all, then SIGKILL: the six one after another would have been 12 s at least.
    assert took < 8.0, took
    # Nothing running: nothing to stop.
    assert stop_pids([p.pid for p in polite]) == 0
