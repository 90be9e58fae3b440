"""The demand forecast on synthetic Poisson arrivals: its error bounded, with and without a daily cycle."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from joulie_controller.power.forecast import Arrival, forecast, poisson_quantile, prune
from joulie_controller.settings import SuspendSettings

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY_S = 21600.0
S = SuspendSettings(forecast_day_s=DAY_S, forecast_half_life_s=1800.0, forecast_min_days=2)


def _rate(t_s: float, base: float, amplitude: float) -> float:
    return base * (1.0 + amplitude * math.sin(2.0 * math.pi * t_s / DAY_S))


def _arrivals(seed: int, span_s: float, base: float, amplitude: float, pool: str = "cpu") -> list[Arrival]:
    """A Poisson process of rate base x (1 + A sin(2 pi t / day)), by thinning; 4 cores and 0 or 1 GPU each."""
    rng = random.Random(seed)
    out: list[Arrival] = []
    t = 0.0
    peak = base * (1.0 + amplitude)
    while True:
        t += rng.expovariate(peak)
        if t >= span_s:
            return out
        if rng.random() < _rate(t, base, amplitude) / peak:
            out.append(Arrival(T0 + timedelta(seconds=t), pool, 4.0, rng.choice((0, 1))))


def test_poisson_quantile_is_scipys_ppf() -> None:
    # Values of scipy.stats.poisson.ppf(q, mu), written down (the controller does not carry scipy).
    for q, mu, k in ((0.95, 0.5, 2), (0.95, 4.0, 8), (0.5, 10.0, 10), (0.99, 1.0, 4), (0.95, 100.0, 117)):
        assert poisson_quantile(q, mu) == k
    assert poisson_quantile(0.95, 0.0) == 0
    with pytest.raises(ValueError, match="under 1"):
        poisson_quantile(1.0, 3.0)


def test_a_constant_rate_is_forecast_within_a_quarter_on_average() -> None:
    base = 1.0 / 60.0
    errors = []
    for seed in range(10):
        history = _arrivals(seed, 4 * 3600.0, base, 0.0)
        now = T0 + timedelta(hours=4)
        fc = forecast(history, T0, now, 300.0, S)["cpu"]
        errors.append(abs(fc.rate_per_s - base) / base)
        assert fc.basis == "recent"
        assert fc.cores_per_arrival == pytest.approx(4.0)
        assert 0.2 < fc.gpus_per_arrival < 0.8
    assert sum(errors) / len(errors) < 0.25
    assert max(errors) < 0.6


def test_a_short_history_is_not_read_as_a_low_rate() -> None:
    """Ten minutes observed at one arrival a minute: about one a minute, not a tenth of it."""
    history = [Arrival(T0 + timedelta(minutes=m), "cpu", 1.0, 0) for m in range(10)]
    fc = forecast(history, T0, T0 + timedelta(minutes=10), 300.0, S)["cpu"]
    assert fc.rate_per_s * 60 == pytest.approx(1.0, rel=0.15)


def test_the_daily_profile_tracks_a_cycle_the_recent_rate_lags() -> None:
    """Four 6-hour days with the peak 4x the trough (A=0.6): on the fifth day the blended forecast's
    error against the true rate is smaller than the recent rate's alone, and bounded."""
    base, amp = 1.0 / 30.0, 0.6
    blended_err, recent_err = [], []
    for seed in range(4):
        history = _arrivals(100 + seed, 5 * DAY_S, base, amp)
        for hour in range(0, 6):
            now_s = 4 * DAY_S + hour * 3600.0
            now = T0 + timedelta(seconds=now_s)
            seen = [a for a in history if a.at <= now]
            fc = forecast(seen, T0, now, 1800.0, S)["cpu"]
            truth = sum(_rate(now_s + x, base, amp) for x in range(0, 1800, 60)) / 30.0
            assert fc.basis == "daily (4 days)"
            blended_err.append(abs(fc.rate_per_s - truth) / truth)
            recent_err.append(abs(fc.recent_rate_per_s - truth) / truth)
    mean_blended = sum(blended_err) / len(blended_err)
    assert mean_blended < 0.3
    assert mean_blended < sum(recent_err) / len(recent_err)


def test_pools_are_forecast_apart_and_an_old_history_is_pruned() -> None:
    cpu = _arrivals(7, 3600.0, 1.0 / 60.0, 0.0, "cpu")
    gpu = _arrivals(8, 3600.0, 1.0 / 600.0, 0.0, "gpu")
    now = T0 + timedelta(hours=1)
    fcs = forecast(sorted(cpu + gpu, key=lambda a: a.at), T0, now, 300.0, S)
    assert set(fcs) == {"cpu", "gpu"}
    assert fcs["cpu"].rate_per_s > 3 * fcs["gpu"].rate_per_s
    late = now + timedelta(days=9 * DAY_S / 86400.0)
    assert prune(cpu, late, S) == []
