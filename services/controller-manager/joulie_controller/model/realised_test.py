"""The realised slowdown: the time a Pod's boards took at the clocks they reported, against the time
the same work takes at the clock the reference limit leaves."""

from __future__ import annotations

import pytest

from joulie_controller.model.capmodel import gpu_board
from joulie_controller.model.realised import BIN, ClockLog, realised_slowdown, record

MAX_W, DEFAULT_W = 400.0, 310.0


def _speed(r: float, c: float) -> float:
    """Work of compute share c runs at this share of its full speed at clock ratio r (the roofline)."""
    return 1.0 / (c / r + 1.0 - c)


def test_nothing_before_a_measured_clock() -> None:
    assert realised_slowdown(ClockLog(), 0.5, 0.1, 0.5, 0.1, DEFAULT_W, MAX_W) is None
    assert record(ClockLog(), 0.8, 0.0) == ClockLog() and record(ClockLog(), 0.8, -3.0) == ClockLog()


def test_boards_at_full_clock_under_a_limit_that_does_not_bind_lost_nothing() -> None:
    log = record(ClockLog(), 1.0, 300.0)
    got = realised_slowdown(log, 0.5, 0.0, 0.3, 0.0, DEFAULT_W, MAX_W)
    assert got is not None and got.slowdown_pct == pytest.approx(0.0) and got.seconds == 300.0


def test_a_lock_for_half_the_run_costs_what_the_clock_took_from_the_compute_bound_part() -> None:
    c = 0.5
    log = record(record(ClockLog(), 1.0, 100.0), 0.8, 100.0)
    got = realised_slowdown(log, c, 0.0, 0.3, 0.0, DEFAULT_W, MAX_W)
    work_s = 100.0 * _speed(1.0, c) + 100.0 * _speed(0.8, c)  # seconds of full-speed work done
    assert got is not None and got.slowdown_pct == pytest.approx(100.0 * (200.0 / work_s - 1.0))
    assert 5.0 < got.slowdown_pct < 7.0
    # Memory-bound work loses less to the same clocks.
    decode = realised_slowdown(log, 0.1, 0.0, 0.3, 0.0, DEFAULT_W, MAX_W)
    assert decode is not None and 0 < decode.slowdown_pct < got.slowdown_pct


def test_the_clock_the_default_limit_leaves_is_not_counted_as_slowdown() -> None:
    # Full-draw work under its default limit runs below full clock uncapped: that is the reference.
    _, r_ref = gpu_board(DEFAULT_W, MAX_W, 1.0)
    assert r_ref < 0.95
    at_ref = realised_slowdown(record(ClockLog(), r_ref, 60.0), 0.9, 0.0, 1.0, 0.0, DEFAULT_W, MAX_W)
    assert at_ref is not None and abs(at_ref.slowdown_pct) < 100 * BIN  # within the log's bin
    # Boards faster than the model's uncapped clock: negative, as measured, not hidden.
    faster = realised_slowdown(record(ClockLog(), 1.0, 60.0), 0.9, 0.0, 1.0, 0.0, DEFAULT_W, MAX_W)
    assert faster is not None and faster.slowdown_pct < -1.0


def test_the_range_covers_the_estimates_uncertainty_and_closes_without_it() -> None:
    log = record(record(ClockLog(), 1.0, 50.0), 0.7, 150.0)
    sure = realised_slowdown(log, 0.4, 0.0, 0.5, 0.0, DEFAULT_W, MAX_W)
    unsure = realised_slowdown(log, 0.4, 0.15, 0.5, 0.15, DEFAULT_W, MAX_W)
    assert sure is not None and unsure is not None
    assert sure.low_pct == pytest.approx(sure.slowdown_pct) == pytest.approx(sure.high_pct)
    assert unsure.slowdown_pct == pytest.approx(sure.slowdown_pct)
    assert unsure.low_pct < unsure.slowdown_pct - 1.0 and unsure.high_pct > unsure.slowdown_pct + 1.0


def test_the_log_bins_clocks_and_clamps_what_no_board_runs_at() -> None:
    log = record(record(record(ClockLog(), 0.801, 10.0), 0.799, 5.0), 1.3, 7.0)
    assert log.seconds == {0.8: 15.0, 1.0: 7.0} and log.total_s == 22.0
