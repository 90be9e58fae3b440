"""A counter's increase per receipts window from its raw samples: consecutive windows add up to the
counter's difference exactly, restarts counted as increase() counts them, late and missing samples."""

from __future__ import annotations

import itertools
import random

import pytest

from joulie_controller.readings.counterwindow import (
    Mark,
    increase,
    increase_over,
    increases,
    lookback_s,
    max_gap_s,
    series_key,
)

WATTS = 400.0


def meter(times: list[float], restart_s: float | None = None) -> list[tuple[float, float]]:
    """A 400 W meter's cumulative joules at ``times``; the agent restarted at ``restart_s`` (from 0)."""
    return [(t, WATTS * (t - restart_s if restart_s is not None and t >= restart_s else t)) for t in times]


def windows(samples: list[tuple[float, float]], edges: list[float], gap: float = 60.0) -> list[float | None]:
    mark: Mark | None = None
    out: list[float | None] = []
    for start, end in itertools.pairwise(edges):
        got, mark = increase(samples, mark, start, end, gap)
        out.append(got)
    return out


def test_consecutive_windows_add_up_to_the_meters_own_difference_across_a_restart() -> None:
    rng = random.Random(7)
    times = sorted(t + rng.uniform(0.0, 1.9) for t in range(0, 120, 2))  # a jittered 2 s export
    samples = meter(times, restart_s=37.0)
    edges = [12.0 * k for k in range(11)]  # ten 12 s windows, as the smoke's
    got = windows(samples, edges)
    assert all(g is not None and g >= 0 for g in got)
    first = max(t for t in times if t <= edges[0]) if any(t <= edges[0] for t in times) else min(times)
    last = max(t for t in times if t <= edges[-1])
    before_restart = max(t for t in times if t < 37.0)
    # What the meter measured between the two samples, less what the restart lost (between the last
    # sample before it and the restart itself: no counter holds that, increase() loses it too).
    expected = WATTS * (last - first) - WATTS * (37.0 - before_restart)
    assert sum(g or 0.0 for g in got) == pytest.approx(expected, rel=1e-12)
    # Each window is its own samples' span: never off by extrapolation beyond what the edges lag.
    for g, (start, end) in zip(got, itertools.pairwise(edges), strict=True):
        if not start <= 37.0 < end:
            assert g == pytest.approx(WATTS * (end - start), abs=WATTS * 2 * 1.9 + 1e-9)


def test_a_sample_that_arrives_after_the_close_is_counted_by_the_next_window() -> None:
    samples = meter([0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0, 22.0, 24.0])
    # At the first close (t=12) the sample of 11.5 was not in Prometheus yet.
    early = [s for s in samples if s[0] <= 10.0]
    first, mark = increase(early, None, 0.0, 12.0, 60.0)
    assert first == pytest.approx(WATTS * 10.0) and mark == Mark(10.0, WATTS * 10.0)
    second, mark = increase(samples, mark, 12.0, 24.0, 60.0)
    assert (first or 0.0) + (second or 0.0) == pytest.approx(WATTS * 24.0)


def test_a_window_without_a_new_sample_has_no_reading_and_the_next_bills_the_energy_in_between() -> None:
    samples = meter([0.0, 10.0, 30.0])
    got = windows(samples, [0.0, 12.0, 24.0, 36.0])
    assert got == [pytest.approx(WATTS * 10.0), None, pytest.approx(WATTS * 20.0)]


def test_an_outage_longer_than_the_gap_is_nobodys_energy() -> None:
    samples = meter([0.0, 10.0, 200.0, 210.0])
    got = windows(samples, [0.0, 60.0, 120.0, 180.0, 240.0], gap=max_gap_s(60.0))
    # 10 s -> 200 s spans more than a minute without a sample: counting starts again at 200 s.
    assert got == [pytest.approx(WATTS * 10.0), None, None, pytest.approx(WATTS * 10.0)]
    # And a mark that old is dropped, not kept for ever.
    assert increase(samples[:2], Mark(10.0, WATTS * 10.0), 120.0, 180.0, 60.0) == (None, None)


def test_without_a_mark_the_window_starts_at_the_sample_before_it_else_at_its_first() -> None:
    samples = meter([5.0, 15.0, 25.0])
    got, mark = increase(samples, None, 10.0, 30.0, 60.0)
    assert got == pytest.approx(WATTS * 20.0) and mark == Mark(25.0, WATTS * 25.0)
    got, _ = increase(samples[1:], None, 10.0, 30.0, 60.0)
    assert got == pytest.approx(WATTS * 10.0)  # nothing before 15 s: from its first sample
    # A lone first sample: no reading yet, but the next window counts from it.
    got, mark = increase(samples[1:2], None, 10.0, 20.0, 60.0)
    assert got is None and mark == Mark(15.0, WATTS * 15.0)


def test_each_series_of_a_range_result_its_own_increase_and_mark() -> None:
    def series(node: str, values: list[tuple[float, float]]) -> dict[str, object]:
        return {
            "metric": {"__name__": "hw_host_energy_joules_total", "k8s_node_name": node},
            "values": [[t, str(v)] for t, v in values],
        }

    a, b = series("a", meter([1.0, 5.0, 9.0])), series("b", [(1.0, 0.0), (5.0, float("nan")), (9.0, 80.0)])
    got = increases([a, b], {}, 0.0, 10.0, 60.0)
    assert [(m["k8s_node_name"], v) for m, v in got.values] == [("a", pytest.approx(WATTS * 8.0)), ("b", 80.0)]
    key_a = series_key({"__name__": "hw_host_energy_joules_total", "k8s_node_name": "a"})
    assert got.marks[key_a] == Mark(9.0, WATTS * 9.0)
    # A series gone from the result loses its mark.
    assert set(increases([a], got.marks, 10.0, 20.0, 60.0).marks) == {key_a}


def test_the_range_reaches_the_oldest_mark_and_a_baseline_before_the_window() -> None:
    assert lookback_s({}, 100.0, 160.0, 60.0) == pytest.approx(121.0)
    assert lookback_s({(("a", "b"),): Mark(20.0, 1.0)}, 100.0, 160.0, 60.0) == pytest.approx(141.0)


def test_a_reading_says_which_samples_it_spans() -> None:
    samples = [(98.0, 0.0), (108.0, 100.0), (118.0, 200.0), (158.0, 600.0)]
    got, mark, span = increase_over(samples, None, 100.0, 160.0, 60.0)
    assert got == 600.0 and mark == Mark(158.0, 600.0) and span == (98.0, 158.0)
    assert increase_over([], None, 100.0, 160.0, 60.0) == (None, None, None)
