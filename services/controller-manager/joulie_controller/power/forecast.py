"""The demand forecast the warm pool is sized from: arrivals and requested resources per hardware pool (issue 37).

Pure. The input is what the controller itself sees: each workload Pod's first sighting (its arrival,
to within one reconcile) with its requests (cores, GPUs) and the pool of the node it was bound to.
Never the benchmark's trace or the emulator's truth.

Two estimates of a pool's arrival rate over the coming ``horizon_s``:
- the recent level, an exponentially weighted rate: each arrival counts ``exp(-age / tau)`` with
  ``tau = FORECAST_HALF_LIFE / ln 2``, divided by ``tau (1 - exp(-observed / tau))`` so a history
  shorter than ``tau`` is not read as a low rate (the weights' integral over what was observed);
- the daily cycle, once the history covers FORECAST_MIN_DAYS whole days (FORECAST_DAY each, 24 h by
  default): the arrivals seen at the same time of day on each past day, in a window of the horizon
  (at least a 24th of a day, so a 5-minute horizon does not rest on one or two arrivals), divided by
  the days and the window. It sees a rise coming an hour before the recent level does.

With ``d`` whole days observed (``d >= FORECAST_MIN_DAYS``) the forecast is
``(1 - 1/d) x daily + (1/d) x recent``: with two days the two weigh the same, and the daily profile
earns trust as days accumulate. Before that the recent level alone. The resources per arrival are
the same weighted means of the pool's requests.

``poisson_quantile`` is ``scipy.stats.poisson.ppf`` (the controller does not carry scipy): the number
of arrivals over the horizon that a Poisson process of the forecast rate stays at or under with
probability ``q``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from joulie_controller.settings import SuspendSettings

MIN_PROFILE_WINDOW_FRAC: Final = 1.0 / 24.0
"""The daily profile's window is at least this share of a day (an hour of a 24-hour day)."""
HISTORY_DAYS: Final = 8
"""Arrivals older than this many days are dropped: the profile weighs at most a week of them."""
MAX_ARRIVALS: Final = 200_000
"""A hard bound on the history kept (memory), the oldest dropped first."""


@dataclass(frozen=True)
class Arrival:
    """One workload Pod as the controller first saw it: when, in which pool, what it requested."""

    at: datetime
    pool: str
    cores: float
    gpus: int


@dataclass(frozen=True)
class PoolForecast:
    """A pool's expected demand: arrivals per second over the horizon and the requests per arrival."""

    pool: str
    rate_per_s: float
    cores_per_arrival: float
    gpus_per_arrival: float
    basis: str
    """How it was made, for the power status reason and the log: "recent" or "daily (N days)"."""
    recent_rate_per_s: float = 0.0
    daily_rate_per_s: float | None = None

    def arrivals(self, horizon_s: float) -> float:
        """The expected arrivals over the next ``horizon_s``."""
        return self.rate_per_s * max(0.0, horizon_s)


def poisson_quantile(q: float, mean: float) -> int:
    """The smallest k with P(N <= k) >= q for N ~ Poisson(mean): scipy.stats.poisson.ppf(q, mean)."""
    if mean <= 0.0 or q <= 0.0:
        return 0
    if q >= 1.0:
        raise ValueError(f"q={q!r}: expected a probability under 1 (the quantile at 1 is unbounded)")
    if mean > 500.0:  # the normal approximation with continuity correction; the pmf below underflows
        z = _normal_quantile(q)
        return max(0, math.ceil(mean + z * math.sqrt(mean) - 0.5))
    pmf = math.exp(-mean)
    cdf, k = pmf, 0
    while cdf < q - 1e-12:
        k += 1
        pmf *= mean / k
        cdf += pmf
    return k


def _normal_quantile(q: float) -> float:
    """The standard normal quantile, by bisection on erf (accurate to 1e-9; called rarely)."""
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2.0
        if 0.5 * (1.0 + math.erf(mid / math.sqrt(2.0))) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def prune(arrivals: Sequence[Arrival], now: datetime, s: SuspendSettings) -> list[Arrival]:
    """The history worth keeping: the last HISTORY_DAYS days (of FORECAST_DAY), at most MAX_ARRIVALS."""
    keep_s = HISTORY_DAYS * s.forecast_day_s
    kept = [a for a in arrivals if (now - a.at).total_seconds() <= keep_s]
    return kept[-MAX_ARRIVALS:]


def forecast(
    arrivals: Iterable[Arrival], observed_since: datetime, now: datetime, horizon_s: float, s: SuspendSettings
) -> dict[str, PoolForecast]:
    """Each pool's forecast over ``[now, now + horizon_s]`` from the arrivals seen since ``observed_since``."""
    by_pool: dict[str, list[Arrival]] = defaultdict(list)
    for a in arrivals:
        if a.at <= now:
            by_pool[a.pool].append(a)
    observed_s = max(0.0, (now - observed_since).total_seconds())
    return {pool: _pool_forecast(pool, items, observed_s, now, horizon_s, s) for pool, items in sorted(by_pool.items())}


def _pool_forecast(
    pool: str, items: Sequence[Arrival], observed_s: float, now: datetime, horizon_s: float, s: SuspendSettings
) -> PoolForecast:
    tau = s.forecast_half_life_s / math.log(2.0)
    weights = [math.exp(-(now - a.at).total_seconds() / tau) for a in items]
    exposure = tau * (1.0 - math.exp(-observed_s / tau)) if observed_s > 0 else 0.0
    recent = sum(weights) / exposure if exposure > 0 else 0.0
    total_w = sum(weights)
    if total_w > 1e-12:
        cores = sum(w * a.cores for w, a in zip(weights, items, strict=True)) / total_w
        gpus = sum(w * a.gpus for w, a in zip(weights, items, strict=True)) / total_w
    else:  # nothing recent: the plain means of the history
        cores = sum(a.cores for a in items) / len(items)
        gpus = sum(a.gpus for a in items) / len(items)
    days = int(observed_s // s.forecast_day_s) if s.forecast_day_s > 0 else 0
    if days < max(1, s.forecast_min_days):
        return PoolForecast(pool, recent, cores, gpus, "recent", recent, None)
    daily = _daily_rate(items, now, horizon_s, days, s.forecast_day_s)
    w_daily = 1.0 - 1.0 / days
    rate = w_daily * daily + (1.0 - w_daily) * recent
    return PoolForecast(pool, rate, cores, gpus, f"daily ({days} days)", recent, daily)


def _daily_rate(items: Sequence[Arrival], now: datetime, horizon_s: float, days: int, day_s: float) -> float:
    """Arrivals per second at this time of day on the past ``days`` days, in a window around the horizon."""
    width = min(day_s, max(horizon_s, day_s * MIN_PROFILE_WINDOW_FRAC))
    centre = horizon_s / 2.0
    count = 0
    for a in items:
        age = (now - a.at).total_seconds()
        k = round((age + centre) / day_s)  # the past day whose window this arrival may fall in
        if 1 <= k <= days and abs(centre - (k * day_s - age)) <= width / 2.0:
            count += 1
    return count / (days * width)
