"""The warm pool (POWER_POLICY=forecast_suspend_v1): the powered free capacity each pool keeps so that a
Pod's added wait stays under WARM_POOL_WAIT_TARGET (issue 37).

Pure. Under idle_suspend_v1 (reactive) a node is resumed only once a Pod is already waiting, so a
boot of B seconds (240-300 s on the profiles' servers) lands on that Pod's wait. Here each pool
keeps free capacity for the demand forecast (``forecast.py``) over the time a resume takes to bring
capacity back:

- the warm pool is used up at some moment; the controller sees it on its next tick (RECONCILE_INTERVAL
  later) and powers a node on, which is Ready B seconds after that. A Pod that finds no room ``x``
  seconds into that window waits ``interval + B - x``; it waits at most the target T when
  ``x >= interval + B - T``. So the pool holds the arrivals of ``interval + B - T`` seconds, at the
  WARM_POOL_QUANTILE of a Poisson count of the forecast rate, each with the forecast's mean cores
  and GPUs. A pool whose resume fits in the target (``interval + B <= T``) needs no warm capacity;
- powered free capacity is each powered schedulable (or resuming) node's allocatable less the
  requests of the Pods bound to it; a pool short of its need has off nodes powered on ahead of the
  demand, the longest off first (wear levelling), and an idle node whose suspend would leave the
  pool short is kept on, its status saying so;
- B is what the controller timed on the pool's own resumes (power-on to Ready), RESUME_BOOT_ESTIMATE
  until it has timed one: the controller reads no boot time from the hardware profile's emulation.

SUSPEND_MIN_POWERED still holds as a floor under the warm pool; with the warm pool sized from the
demand, 0 is a sensible floor for a GPU pool whose GPUs idle most of the day.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from joulie_controller.model.fit import Room
from joulie_controller.power.forecast import PoolForecast, poisson_quantile
from joulie_controller.settings import Settings


@dataclass(frozen=True)
class WarmNeed:
    """A pool's warm-pool target: the free cores and GPUs it keeps powered, and why."""

    pool: str
    cores: float
    gpus: int
    arrivals: int
    """The forecast's arrivals over the window at WARM_POOL_QUANTILE."""
    window_s: float
    """RECONCILE_INTERVAL + boot - WARM_POOL_WAIT_TARGET, at least 0."""
    boot_s: float
    rate_per_min: float
    basis: str

    @property
    def empty(self) -> bool:
        return self.cores <= 0.0 and self.gpus <= 0

    def text(self) -> str:
        """For the status reason and the log: short and stable between ticks of the same need."""
        return (
            f"pool {self.pool} keeps {self.cores:g} cores / {self.gpus} GPUs free: forecast "
            f"{self.rate_per_min:.2g} Pods/min ({self.basis}), {self.arrivals} arrivals in "
            f"{self.window_s:.0f} s (boot {self.boot_s:.0f} s - WARM_POOL_WAIT_TARGET)"
        )

    def target_text(self) -> str:
        """The need alone (a kept node's status reason: rewritten only when the need changes)."""
        return (
            f"pool {self.pool} keeps {self.cores:g} cores / {self.gpus} GPUs free for {self.arrivals} "
            f"arrivals in {self.window_s:.0f} s ({self.basis}, WARM_POOL_WAIT_TARGET)"
        )

    def short_of(self, free: Room) -> bool:
        return free.cpu + 1e-6 < self.cores or free.gpus < self.gpus


def warm_need(pool: str, fc: PoolForecast | None, boot_s: float, s: Settings) -> WarmNeed:
    """The free capacity ``pool`` keeps powered for the demand forecast ``fc`` with a boot of ``boot_s``."""
    window_s = max(0.0, s.reconcile.interval_s + boot_s - s.suspend.warm_wait_target_s)
    if fc is None or window_s <= 0.0:
        return WarmNeed(
            pool,
            0.0,
            0,
            0,
            window_s,
            boot_s,
            fc.rate_per_s * 60.0 if fc else 0.0,
            fc.basis if fc else "no arrivals seen",
        )
    k = poisson_quantile(s.suspend.warm_quantile_pct / 100.0, fc.arrivals(window_s))
    cores = math.ceil(k * fc.cores_per_arrival * 1000.0) / 1000.0
    return WarmNeed(
        pool, cores, math.ceil(k * fc.gpus_per_arrival - 1e-9), k, window_s, boot_s, fc.rate_per_s * 60.0, fc.basis
    )


def add(a: Room, b: Room) -> Room:
    return Room(a.cpu + b.cpu, a.memory_bytes + b.memory_bytes, a.gpus + b.gpus)


def free_by_pool(rooms: Mapping[str, Room], pools: Mapping[str, str]) -> dict[str, Room]:
    """The free capacity of each pool: the sum of its nodes' rooms (``rooms``: powered nodes only)."""
    free: dict[str, Room] = {}
    for name, room in rooms.items():
        pool = pools[name]
        positive = Room(max(0.0, room.cpu), max(0.0, room.memory_bytes), max(0, room.gpus))
        free[pool] = add(free.get(pool, Room(0.0, 0.0, 0)), positive)
    return free
