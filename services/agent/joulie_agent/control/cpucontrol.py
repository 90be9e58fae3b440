"""CPU cap decisions: RAPL write plans, the DVFS fallback controller, power from energy. Pure.

Semantics (and where they differ from the Go original):
- `packagePowerCapWatts` is per socket, as the CRD says. RAPL writes it to each package zone;
  a package split into die zones gets the socket cap divided between its dies (the original gave
  every die the full socket cap, D11). intel-rapl-mmio and psys are never written.
- The DVFS fallback compares the sum of package power with cap x sockets (the original compared
  the node total with the per-socket cap, D7).
- A locked or rejecting PL1 is reported and the DVFS fallback takes over (the original returned
  an error and wrote no status, D10).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from joulie_agent.discovery import powercap
from joulie_api.generated.nodehardware import NodeHardwareStatus
from joulie_api.generated.nodetwin import CPUCapSpec


def published_cap_range_w(hardware: NodeHardwareStatus | None) -> tuple[float, float] | None:
    """The per-socket (min, max) cap range the node itself stated in NodeHardware, or None.

    A range taken from the hardware catalog (inventoryResolution.catalogFacts) gives the controller a
    headroom and a budget, but says nothing about what the node can enforce: control ignores it.
    """
    res = hardware.inventory_resolution if hardware else None
    if res is not None and "cpu.capRange" in (res.catalog_facts or []):
        return None
    cr = hardware.cpu.cap_range if hardware and hardware.cpu else None
    return (cr.min_watts_per_socket or 0.0, cr.max_watts_per_socket or 0.0) if cr else None


@dataclass(frozen=True)
class CPUCap:
    """A resolved CPU intent: watts per socket, or a percentage left for DVFS to interpret."""

    socket_w: float | None
    pct: float | None


def resolve_cpu_cap(spec: CPUCapSpec | None, cap_range_w: tuple[float, float] | None) -> CPUCap | None:
    """None when there is no intent. Percent of max becomes watts when the range is known."""
    if spec is None:
        return None
    if spec.package_power_cap_watts is not None and spec.package_power_cap_watts > 0:
        return CPUCap(float(spec.package_power_cap_watts), None)
    pct = spec.package_power_cap_pct_of_max
    if pct is None or pct <= 0:
        return None
    pct = min(100.0, float(pct))
    if cap_range_w is not None and cap_range_w[1] > 0:
        lo, hi = cap_range_w
        return CPUCap(max(lo, min(hi, pct / 100 * hi)), pct)
    return CPUCap(None, pct)


@dataclass(frozen=True)
class RaplWrite:
    zone_id: str
    constraint: int
    limit_uw: int


@dataclass(frozen=True)
class RaplPlan:
    writes: tuple[RaplWrite, ...]
    # Zones whose PL1 cannot be written (the limit file is not a file): reported, not tried.
    unwritable: tuple[str, ...]


def plan_rapl(zones: list[powercap.Zone], socket_w: float) -> RaplPlan:
    dies = powercap.dies_per_package(zones)
    writes: list[RaplWrite] = []
    unwritable: list[str] = []
    for z in powercap.package_zones(zones):
        c = z.long_term()
        if c is None:
            continue
        if not c.limit_is_file:
            unwritable.append(z.zone_id)
            continue
        share = socket_w / dies.get(z.package_index or 0, 1)
        limit_uw = int(round(share * 1e6))
        if c.max_power_uw:
            limit_uw = min(limit_uw, c.max_power_uw)
        writes.append(RaplWrite(z.zone_id, c.index, limit_uw))
    return RaplPlan(tuple(writes), tuple(unwritable))


@dataclass(frozen=True)
class DvfsConfig:
    """DVFS fallback tuning. Defaults are the original's (env DVFS_*)."""

    ema_alpha: float = 0.30
    high_margin_w: float = 10.0
    low_margin_w: float = 15.0
    step_pct: float = 10.0
    min_freq_khz: int = 1_500_000
    cooldown_s: float = 20.0
    trip_count: int = 2
    energy_window_s: float = 5.0
    """ENERGY_WINDOW: the least counter history one package power estimate spans (energymeter);
    several of the counter's update periods, so a counter read between its updates is not misread."""
    verify_interval_s: float = 60.0
    """DVFS_VERIFY_INTERVAL: how often every policy's scaling_max_freq is read back (drift is
    re-applied and reported); between sweeps only policies whose plan changed are written."""


@dataclass
class DvfsController:
    """EMA of package power against [cap - low, cap + high]; `trip_count` samples out of band
    move the throttle by `step_pct`, then `cooldown_s` of hold."""

    cfg: DvfsConfig = field(default_factory=DvfsConfig)
    throttle_pct: float = 0.0
    ema_w: float | None = None
    above: int = 0
    below: int = 0
    last_action_s: float | None = None

    def step(self, now_s: float, observed_w: float | None, cap_w: float) -> str:
        """Advance one sample; returns the action: throttle_up, throttle_down, hold, cooldown, no-reading."""
        if observed_w is None:
            return "no-reading"
        a = self.cfg.ema_alpha
        self.ema_w = observed_w if self.ema_w is None else a * observed_w + (1 - a) * self.ema_w
        if self.last_action_s is not None and now_s - self.last_action_s < self.cfg.cooldown_s:
            return "cooldown"
        if self.ema_w > cap_w + self.cfg.high_margin_w:
            self.above, self.below = self.above + 1, 0
        elif self.ema_w < cap_w - self.cfg.low_margin_w:
            self.below, self.above = self.below + 1, 0
        else:
            self.above = self.below = 0
        if self.above >= self.cfg.trip_count and self.throttle_pct < 100:
            self.throttle_pct = min(100.0, self.throttle_pct + self.cfg.step_pct)
            self.above, self.last_action_s = 0, now_s
            return "throttle_up"
        if self.below >= self.cfg.trip_count and self.throttle_pct > 0:
            self.throttle_pct = max(0.0, self.throttle_pct - self.cfg.step_pct)
            self.below, self.last_action_s = 0, now_s
            return "throttle_down"
        return "hold"

    def reset(self) -> None:
        self.throttle_pct, self.ema_w, self.above, self.below, self.last_action_s = 0.0, None, 0, 0, None


@dataclass
class PowerMeter:
    """Watts per zone from successive energy_uj readings, wrap-corrected."""

    last: dict[str, tuple[float, int]] = field(default_factory=dict)

    def update(self, now_s: float, readings: dict[str, int], ranges_uj: dict[str, int | None]) -> dict[str, float]:
        out: dict[str, float] = {}
        for zid, uj in readings.items():
            prev = self.last.get(zid)
            self.last[zid] = (now_s, uj)
            if prev is None or now_s <= prev[0]:
                continue
            delta = powercap.energy_delta_uj(prev[1], uj, ranges_uj.get(zid))
            if delta is not None:
                out[zid] = delta / 1e6 / (now_s - prev[0])
        return out
