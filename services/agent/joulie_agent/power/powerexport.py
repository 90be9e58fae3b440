"""Measured node power as OpenTelemetry hardware samples. Pure: readings in, samples out.

Why it exists: the controller manager reads `hw.host.energy` / `hw.energy` / `hw.power` from
Prometheus (joulie_controller/readings/promql.py), and on a real node nothing but the agent can measure
them. The shell (`otlpexport.py`) reads the counters and sends what this module computes.

Sources, per node (`plan_sources`):
- CPU packages: RAPL package zones (`intel-rapl:N`, `package-N`, also on AMD since Linux 5.8),
  else the `amd_energy` hwmon's `Esocket<N>` counters. `hw.type=cpu`, `hw.id=package-N` (a
  multi-die package adds `-die-M`).
- DRAM: RAPL `dram` sub-zones (`intel-rapl:N:M`). `hw.type=memory`, `hw.id=dram-N`.
- GPUs: AMD GPUs' amdgpu hwmon `power1_input` (else `power1_average`, µW) read from sysfs, in PCI
  address order (no tool process per export); otherwise the power draw the agent's GPU tool layer
  reports (NVML, nvidia-smi). Integrated over time into energy (trapezoids). `hw.type=gpu`,
  `hw.id=gpu-<index>`.
- Host (`HostEnergy`): the BMC's input power over Redfish where one is configured and answers
  (`joulie.host.power.source=bmc`: the wall-side reading, fans and PSU losses included), otherwise
  the sum of the measured components (`joulie.host.power.source=sum-of-components`, so nobody
  mistakes it for a wall meter). Each source has its own `hw.host.energy` counter, and each
  interval's energy goes to the one source the interval was measured with: a BMC that fails and
  comes back leaves two monotonic counters whose rates add up to the host's power, never the same
  joules twice (`sum by (node) (rate(...))` is what the controller queries).

Counters: RAPL's `energy_uj` wraps at `max_energy_range_uj`; a reading below the previous one
adds the range (one wrap per interval, as Kepler does per zone: at 10 s even 1 kW takes
~262 J of a 262 kJ range). A backwards reading without a known range is a reset: the counter is
re-based and the interval adds nothing. Energies are joules since the agent started, so the
exported counters are monotonic and a failed export loses nothing.

Memory: one small state per component, replaced on every update.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from joulie_agent.discovery import powercap
from joulie_telemetry.vocabulary import HOST_SOURCE_BMC, HOST_SOURCE_SUM, HW_CPU, HW_GPU, HW_MEMORY

NO_COUNTERS_REASON: Final = (
    "power export: no energy counter (no RAPL package zone with energy_uj, no amd_energy hwmon) and no GPU "
    "power reading on this node; nothing is exported"
)
BMC_ONLY_REASON: Final = (
    "power export: no energy counter (no RAPL package zone with energy_uj, no amd_energy hwmon) and no GPU "
    "power reading on this node; only the host power from its BMC is exported, nothing while the BMC does not answer"
)


@dataclass(frozen=True)
class CounterSource:
    """One energy counter file: `energy_uj` of a powercap zone or `energyN_input` of amd_energy (µJ)."""

    hw_type: str
    hw_id: str
    path_key: str
    """What the shell reads: a powercap zone id (`intel-rapl:0`) or an hwmon file (`hwmon3/energy5_input`)."""
    max_range_uj: int | None = None


@dataclass(frozen=True)
class MeterSource:
    """One power file in µW (amdgpu hwmon `power1_input`), relative to the hwmon class directory."""

    hw_type: str
    hw_id: str
    path_key: str


@dataclass(frozen=True)
class ExportPlan:
    counters: tuple[CounterSource, ...] = ()
    meters: tuple[MeterSource, ...] = ()
    gpus: bool = False
    """Whether the node's GPU power comes from the tool layer (GPUs present, no sysfs meters)."""

    @property
    def empty(self) -> bool:
        return not self.counters and not self.meters and not self.gpus


@dataclass(frozen=True)
class HwmonEnergy:
    """One `energyN_input` of the amd_energy hwmon with its label (`Esocket0`, `Ecore012`)."""

    path_key: str
    label: str


def _dram_id(zone: powercap.Zone) -> str | None:
    """`dram-N` for a RAPL DRAM sub-zone `intel-rapl:N:M` (N is the package)."""
    m = powercap.ZONE_DIR_RE.match(zone.zone_id)
    if zone.name != "dram" or zone.control_type != powercap.RAPL_CONTROL_TYPE or not m or not m.group("sub"):
        return None
    return f"dram-{int(m.group('idx'), 16)}"


def plan_sources(zones: Sequence[powercap.Zone], hwmon: Sequence[HwmonEnergy], gpu_count: int,
                 amdgpu_power: Sequence[str] = ()) -> ExportPlan:
    """Which counters and meters this node exports (empty: nothing; see NO_COUNTERS_REASON)."""
    counters: list[CounterSource] = []
    for z in powercap.energy_zones(list(zones)):
        die = f"-die-{z.die_index}" if z.die_index is not None else ""
        counters.append(CounterSource(HW_CPU, f"package-{z.package_index}{die}", z.zone_id, z.max_energy_range_uj))
    if not counters:
        # amd_energy: per-socket counters; the per-core ones (Ecore*) would double count.
        for h in hwmon:
            socket = h.label.removeprefix("Esocket")
            if socket != h.label and socket.isascii() and socket.isdigit() and len(socket) < 10:
                counters.append(CounterSource(HW_CPU, f"package-{int(socket)}", h.path_key))
    for z in zones:
        dram = _dram_id(z)
        if dram is not None and z.energy_uj is not None:
            counters.append(CounterSource(HW_MEMORY, dram, z.zone_id, z.max_energy_range_uj))
    meters = tuple(MeterSource(HW_GPU, f"gpu-{i}", key) for i, key in enumerate(amdgpu_power))
    return ExportPlan(tuple(counters), meters, gpu_count > 0 and not meters)


@dataclass(frozen=True)
class Component:
    hw_type: str
    hw_id: str
    energy_j: float
    power_w: float | None
    """None until two readings exist."""


@dataclass(frozen=True)
class NodeSample:
    components: tuple[Component, ...]
    host_energy_j: float
    """Of the current source."""
    host_power_w: float | None
    """None while any component's power is still unknown (sum) or before the first BMC reading."""
    host_source: str = HOST_SOURCE_SUM
    host_energy_by_source_j: tuple[tuple[str, float], ...] = ()
    """Every source's counter since the agent started (sorted by source); empty: only `host_energy_j`."""

    @property
    def measured(self) -> bool:
        """Whether there is anything to export (a BMC-only node while its BMC is down has not)."""
        return bool(self.components) or self.host_source == HOST_SOURCE_BMC


@dataclass
class _State:
    raw: float
    t_s: float
    energy_j: float = 0.0
    power_w: float | None = None


@dataclass
class EnergyAccumulator:
    """Monotonic joules per component from wrapping counters and power readings, for one node."""

    _states: dict[tuple[str, str], _State] = field(default_factory=dict)

    def counter(self, src: CounterSource, raw_uj: int, t_s: float) -> Component:
        key = (src.hw_type, src.hw_id)
        st = self._states.get(key)
        if st is None:
            self._states[key] = _State(raw=raw_uj, t_s=t_s)
            return Component(src.hw_type, src.hw_id, 0.0, None)
        dt = t_s - st.t_s
        delta = powercap.energy_delta_uj(int(st.raw), raw_uj, src.max_range_uj)
        st.raw, st.t_s = raw_uj, t_s
        if delta is None:  # reset, not a wrap: re-base, add nothing
            return Component(src.hw_type, src.hw_id, st.energy_j, st.power_w)
        st.energy_j += delta / 1e6
        if dt > 0:
            st.power_w = delta / 1e6 / dt
        return Component(src.hw_type, src.hw_id, st.energy_j, st.power_w)

    def meter(self, hw_type: str, hw_id: str, power_w: float, t_s: float) -> Component:
        """A power reading (W) integrated into energy with the trapezoid rule."""
        key = (hw_type, hw_id)
        st = self._states.get(key)
        if st is None:
            self._states[key] = _State(raw=power_w, t_s=t_s, power_w=power_w)
            return Component(hw_type, hw_id, 0.0, power_w)
        dt = max(t_s - st.t_s, 0.0)
        st.energy_j += (st.raw + power_w) / 2 * dt
        st.raw, st.t_s, st.power_w = power_w, t_s, power_w
        return Component(hw_type, hw_id, st.energy_j, power_w)

    def forget_except(self, keep: set[tuple[str, str]]) -> None:
        """Drop components no longer read (a GPU gone), so memory follows the hardware."""
        for key in set(self._states) - keep:
            del self._states[key]


def node_sample(components: Sequence[Component]) -> NodeSample:
    """The components with the host as their sum (see the module docstring)."""
    powers = [c.power_w for c in components]
    host_power = sum(p for p in powers if p is not None) if powers and all(p is not None for p in powers) else None
    return NodeSample(tuple(components), sum(c.energy_j for c in components), host_power)


@dataclass
class HostEnergy:
    """The host's power and its energy per source, for one node (see the module docstring).

    Each `update` books the interval since the previous one to the source it was measured with: the
    BMC (trapezoid between its readings, or its one reading times the interval when the previous
    interval was not the BMC's), else the components' energy growth (a component that restarted
    from 0, e.g. a GPU gone and back, adds nothing for that interval rather than going backwards).
    """

    _energy_j: dict[str, float] = field(default_factory=dict)
    _t_s: float | None = None
    _components_j: dict[tuple[str, str], float] = field(default_factory=dict)
    _bmc_w: float | None = None

    def update(self, components: Sequence[Component], bmc_w: float | None, t_s: float) -> NodeSample:
        comps_j = {(c.hw_type, c.hw_id): c.energy_j for c in components}
        dt_s = t_s - self._t_s if self._t_s is not None else 0.0
        if bmc_w is not None:
            source = HOST_SOURCE_BMC
            before_w = self._bmc_w if self._bmc_w is not None else bmc_w
            add_j = (before_w + bmc_w) / 2 * max(dt_s, 0.0)
            power_w: float | None = bmc_w
        else:
            source = HOST_SOURCE_SUM
            add_j = sum(max(0.0, e - self._components_j.get(k, e)) for k, e in comps_j.items())
            power_w = node_sample(components).host_power_w
        if bmc_w is not None or components:
            self._energy_j[source] = self._energy_j.get(source, 0.0) + add_j
        self._t_s, self._components_j, self._bmc_w = t_s, comps_j, bmc_w
        by_source = tuple(sorted(self._energy_j.items()))
        return NodeSample(tuple(components), self._energy_j.get(source, 0.0), power_w, source, by_source)
