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
- the demand is of two kinds: GPUs per pool (the GPU Pods that landed in it) and cores for the
  Pods that request no GPU, which any pool serves (``ANY_POOL``);
- powered free capacity is each powered schedulable (or resuming) node's allocatable less the
  requests of the Pods bound to it; a pool short of GPUs has its off nodes powered on ahead of the
  demand, the longest off first (wear levelling); a shortage of cores powers on the lowest-TDP off
  node of any pool (a CPU server before a GPU one), then the longest off. An idle node whose
  suspend would leave either short is kept on, its status saying so;
- B is what the controller timed on the pool's own resumes (power-on to Ready), RESUME_BOOT_ESTIMATE
  until it has timed one: the controller reads no boot time from the hardware profile's emulation.

SUSPEND_MIN_POWERED still holds as a floor under the warm pool; with the warm pool sized from the
demand, 0 is a sensible floor for a GPU pool whose GPUs idle most of the day.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Final

from joulie_controller.model.fit import Room
from joulie_controller.power.forecast import PoolForecast, poisson_quantile
from joulie_controller.settings import Settings

ANY_POOL: Final = "*"
"""The demand of Pods that request no GPU: cores, which every pool's nodes offer. A GPU Pod's demand is
the GPUs of the pool it landed in. (Under a packing scheduler CPU Pods land on the GPU servers too; read
per pool, their demand kept a second GPU server warm for cores a CPU server offers for a third the power.)
The cores kept warm for it are those of servers without GPUs where the cluster has any: a GPU server's
free cores let a CPU Pod in, and then the GPU Pod that needs the whole server waits (the benchmark's
8-GPU jobs waited longer than under the reactive policy when they counted)."""


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
    """The free capacity ``pool`` keeps powered for the demand forecast ``fc`` with a boot of ``boot_s``:
    GPUs for a pool's GPU Pods, cores for the Pods that request no GPU (``ANY_POOL``, any pool serves them)."""
    window_s = max(0.0, s.reconcile.interval_s + boot_s - s.suspend.warm_wait_target_s)
    rate_per_min, basis = (fc.rate_per_s * 60.0, fc.basis) if fc is not None else (0.0, "no arrivals seen")
    if fc is None or window_s <= 0.0:
        return WarmNeed(pool, 0.0, 0, 0, window_s, boot_s, rate_per_min, basis)
    k = poisson_quantile(s.suspend.warm_quantile_pct / 100.0, fc.arrivals(window_s))
    cores = math.ceil(k * fc.cores_per_arrival * 1000.0) / 1000.0 if pool == ANY_POOL else 0.0
    gpus = math.ceil(k * fc.gpus_per_arrival - 1e-9) if pool != ANY_POOL else 0
    return WarmNeed(pool, cores, gpus, k, window_s, boot_s, rate_per_min, basis)


def rate_left(per_min: int, done_last_min: int) -> int:
    """What SUSPEND_RATE or RESUME_RATE (nodes per minute, 0: no limit) allows this tick."""
    return per_min - done_last_min if per_min > 0 else 1 << 30


def draws_on(need_pool: str, node_pool: str) -> bool:
    """Whether a node of ``node_pool`` serves the demand of ``need_pool``."""
    return need_pool in (ANY_POOL, node_pool)


def shifted(free: Mapping[str, Room], pool: str, room: Room, sign: float, serves_any: bool) -> dict[str, Room]:
    """``free`` with a node's ``room`` added (sign 1) or taken away (-1) in its pool, and in ``ANY_POOL``
    when the node serves CPU Pods' cores (``serves_any``)."""
    out = dict(free)
    for key in (pool, ANY_POOL) if serves_any else (pool,):
        was = out.get(key, Room(0.0, 0.0, 0))
        out[key] = Room(
            was.cpu + sign * room.cpu, was.memory_bytes + sign * room.memory_bytes, was.gpus + int(sign) * room.gpus
        )
    return out


def free_by_pool(rooms: Mapping[str, Room], pools: Mapping[str, str], serves_any: Set[str]) -> dict[str, Room]:
    """The free capacity of each pool and, in ``ANY_POOL``, of the nodes ``serves_any`` names: the sum of
    the nodes' rooms (``rooms``: powered nodes only; a node over-committed counts as 0, not less)."""
    free: dict[str, Room] = {ANY_POOL: Room(0.0, 0.0, 0)}
    for name, room in rooms.items():
        positive = Room(max(0.0, room.cpu), max(0.0, room.memory_bytes), max(0, room.gpus))
        free = shifted(free, pools[name], positive, 1.0, name in serves_any)
    return free
