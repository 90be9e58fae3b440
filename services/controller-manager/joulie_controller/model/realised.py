"""How much longer a GPU Pod's work has taken so far than it would have uncapped: its realised
slowdown, from the SM clock its boards reported. Pure: no I/O.

What a real cluster shows is the clock, not the progress: ``hw.gpu.speed`` over
``hw.gpu.speed.limit`` per board (NVML's SM clock over its highest), which the controller already
reads for the estimate (``jobestimate.GpuSample.clock_ratio``). The controller logs, per Pod, how
many seconds its boards (their mean) ran at each clock ratio (``ClockLog``, bins of
``BIN``). Through its own model of the work (``capmodel.throughput``: work of compute share ``c``
runs at ``1 / (c / r + 1 - c)`` of its full speed at clock ratio ``r``):

- the work done is ``W = sum(seconds_i * throughput(r_i, c))``;
- at the reference limit (the board's default: "uncapped", as the rest of the policy means it) the
  boards would have run at ``r_ref``, the clock ``capmodel.gpu_board`` gives a board of draw ``u``
  under that limit (1 where the work draws less than it), so the same work takes
  ``W / throughput(r_ref, c)``;
- the realised slowdown is the time seen over that, minus one.

It is the measured clock, not the predicted one: a budget cap lowered past the lever's choice, an
operator's lock, another Pod's lock on the same node or a board the power limit throttles more than
the model said all show in it. What it still takes from the model, and so its uncertainty:

- ``c`` and ``u`` are the Pod's estimate (its kind's prior before any sample); the low and high
  figures are the four corners one sd each way (``c`` moves how much a lower clock costs, ``u`` moves
  ``r_ref``). They leave out the model's form (the roofline split), checked against the emulator in
  docs/work-aware-caps.md;
- ``r_ref`` is modelled, never measured (the Pod never ran uncapped while capped): where the boards
  ran faster than the model's uncapped clock the figure is negative, and says so;
- seconds are the controller's ticks with a fresh sample (``jobestimate.MAX_AGE_S``), each weighted by
  the time since the last tick: phases shorter than a tick are seen at the clock the sample caught.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from joulie_controller.model.capmodel import GPU_MODEL, gpu_board, throughput

BIN: Final = 0.01
"""Clock ratios are logged in bins of 1 % of the highest clock: a lock's step is 2.5 %, and at most
a hundred bins per Pod keep the log small for a Pod that runs for weeks."""


@dataclass(frozen=True)
class ClockLog:
    """Seconds a Pod's boards were seen at each clock ratio (keyed by the ratio rounded to the nearest bin, ``BIN`` wide)."""

    seconds: Mapping[float, float] = field(default_factory=dict)

    @property
    def total_s(self) -> float:
        return sum(self.seconds.values())


def record(log: ClockLog, clock_ratio: float, dt_s: float) -> ClockLog:
    """``log`` with ``dt_s`` more seconds at ``clock_ratio`` (clamped to (0, 1]: a board reporting a
    clock above its limit runs at its limit as the model counts it). A non-positive interval adds
    nothing."""
    if not dt_s > 0:
        return log
    r = min(1.0, max(BIN, clock_ratio))
    key = round(round(r / BIN) * BIN, 4)
    out = dict(log.seconds)
    out[key] = out.get(key, 0.0) + dt_s
    return ClockLog(out)


@dataclass(frozen=True)
class Realised:
    slowdown_pct: float
    """At the estimate's mean."""
    low_pct: float
    high_pct: float
    """At the corners of the estimate (compute share and draw one sd each way)."""
    seconds: float
    """The busy time the figure covers (seconds the boards ran work)."""


def _at(log: ClockLog, c: float, u: float, ref_w: float, max_w: float) -> float:
    _, r_ref = gpu_board(ref_w, max_w, u, GPU_MODEL)
    at_ref = throughput(r_ref, c)
    work_s = sum(s * throughput(r, c) for r, s in log.seconds.items()) / at_ref
    return 100.0 * (log.total_s / work_s - 1.0) if work_s > 0 else 0.0


def realised_slowdown(log: ClockLog, c: float, c_sd: float, u: float, u_sd: float, ref_w: float,
                      max_w: float) -> Realised | None:
    """The Pod's realised slowdown so far (None before any measured clock): ``ref_w`` the boards'
    reference limit (their default), ``max_w`` their maximum, both per board."""
    if log.total_s <= 0 or max_w <= 0:
        return None

    def clamp(x: float) -> float:
        return min(1.0, max(0.0, x))

    mid = _at(log, clamp(c), clamp(u), ref_w, max_w)
    corners = [_at(log, clamp(c + dc), clamp(u + du), ref_w, max_w) for dc in (-c_sd, c_sd) for du in (-u_sd, u_sd)]
    return Realised(mid, min([*corners, mid]), max([*corners, mid]), log.total_s)
