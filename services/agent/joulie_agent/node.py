"""One node's control loop: discovery, CPU and GPU cap enforcement, control feedback.

Shell over the pure modules (`discovery`, `cpucontrol`, `gpucontrol`): it reads and writes the
node's files and runs its GPU tools. Kubernetes is not here; `runner` moves the results.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from joulie_agent import cpucontrol, cpufreq, gpucontrol, gputools, hostread, powercap
from joulie_agent.catalog import Catalog
from joulie_agent.clock import Clock
from joulie_agent.discovery import HostFacts, build_status
from joulie_agent.metrics import AgentMetrics
from joulie_agent.nvml import NVML
from joulie_agent.sysfswrite import read_int, write_attr
from joulie_agent.toolrun import Runner
from joulie_api.generated.nodehardware import NodeHardwareStatus
from joulie_api.generated.nodetwin import CPUControlStatus, GPUControlStatus, NodeTwinSpec

log = logging.getLogger(__name__)

CPUBackend = Literal["rapl", "dvfs", "http", "none"]
GPUBackend = Literal["host-nvidia", "host-amd", "http", "none"]
Result = Literal["applied", "blocked", "error", "none"]

MSG_NO_CPU_BACKEND = "RAPL unavailable, no cpufreq host control, and no HTTP control backend"


@dataclass(frozen=True)
class CPUOutcome:
    backend: CPUBackend
    result: Result
    message: str

    def status(self, clock: Clock) -> CPUControlStatus:
        return CPUControlStatus(backend=self.backend, result=self.result, message=self.message,
                                updated_at=clock.now())


@dataclass(frozen=True)
class GPUOutcome:
    backend: GPUBackend
    result: Result
    message: str

    def status(self, clock: Clock) -> GPUControlStatus:
        return GPUControlStatus(backend=self.backend, result=self.result, message=self.message,
                                updated_at=clock.now())


@dataclass
class NodeOptions:
    simulate_only: bool = False
    dvfs: cpucontrol.DvfsConfig = field(default_factory=cpucontrol.DvfsConfig)
    # GPU limits are re-read from the tools at most this often when the intent is unchanged.
    gpu_verify_interval_s: float = 60.0


class NodeController:
    def __init__(self, node: str, paths: hostread.HostPaths, catalog: Catalog, run: Runner, nvml: NVML | None,
                 clock: Clock, metrics: AgentMetrics | None = None, options: NodeOptions | None = None,
                 writer: Callable[[Path, str], str | None] = write_attr):
        self.node = node
        self.paths = paths
        self.catalog = catalog
        self.run = run
        self.nvml = nvml
        self.clock = clock
        self.metrics = metrics
        self.opts = options or NodeOptions()
        # The one way host files are written (tests inject kernel refusals root cannot provoke).
        self.write = writer
        self.facts = HostFacts()
        self.hardware: NodeHardwareStatus | None = None
        self.dvfs = cpucontrol.DvfsController(self.opts.dvfs)
        self.meter = cpucontrol.PowerMeter()
        # PL1 values found before the agent's first write, restored when the intent goes away.
        self.rapl_original_uw: dict[str, int] = {}
        self.dvfs_active = False
        self.gpu_checked_s: float | None = None
        self.gpu_intent: tuple[float | None, float | None] | None = None

    # ----- discovery -----
    def discover(self, labels: dict[str, str], allocatable: dict[str, str]) -> NodeHardwareStatus:
        self.facts = hostread.read_facts(self.paths, labels, allocatable, self.run, self.nvml)
        self.hardware = build_status(self.facts, self.catalog)
        self.gpu_checked_s = self.clock.monotonic()
        return self.hardware

    # ----- CPU -----
    def _sockets(self) -> int:
        return (self.hardware.cpu.sockets if self.hardware and self.hardware.cpu else None) or 1

    def _package_power_w(self) -> float | None:
        pkgs = powercap.energy_zones(self.facts.zones)
        readings = hostread.read_energy(self.paths, [z.zone_id for z in pkgs])
        watts = self.meter.update(self.clock.monotonic(), readings, {z.zone_id: z.max_energy_range_uj for z in pkgs})
        if self.metrics:
            for zid, uj in readings.items():
                self.metrics.rapl_energy_uj.labels(self.node, zid).set(uj)
            for zid, w in watts.items():
                self.metrics.rapl_power_w.labels(self.node, zid).set(w)
        if not watts or len(watts) < len(pkgs):
            return None
        total = sum(watts.values())
        if self.metrics:
            self.metrics.rapl_package_total_w.labels(self.node).set(total)
        return total

    def _limit_path(self, w: cpucontrol.RaplWrite) -> Path:
        return self.paths.powercap / w.zone_id / f"constraint_{w.constraint}_power_limit_uw"

    def _apply_rapl(self, socket_w: float) -> tuple[list[str], list[str]]:
        """Write PL1 on every package zone; (written zones, rejected 'zone: reason')."""
        plan = cpucontrol.plan_rapl(self.facts.zones, socket_w)
        written: list[str] = []
        rejected = [f"{z}: {'PL1 not writable'}" for z in plan.unwritable]
        for w in plan.writes:
            path = self._limit_path(w)
            current = read_int(path)
            if current == w.limit_uw:
                written.append(w.zone_id)
                continue
            err = self.write(path, str(w.limit_uw))
            if err is None:
                # Read back: a kernel that silently keeps the old value has not applied the cap.
                # The hardware's power unit quantises the limit (e.g. 125000 µW), so allow one unit.
                after = read_int(path)
                if after is None or abs(after - w.limit_uw) > 125_000:
                    err = f"limit reads back {after} µW after writing {w.limit_uw} µW (locked?)"
            if err is None:
                if current is not None:
                    self.rapl_original_uw.setdefault(w.zone_id, current)
                written.append(w.zone_id)
            else:
                rejected.append(f"{w.zone_id}: {err}")
        return written, rejected

    def _restore_rapl(self) -> None:
        for zid, uw in list(self.rapl_original_uw.items()):
            path = self.paths.powercap / zid / "constraint_0_power_limit_uw"
            zone = next((z for z in self.facts.zones if z.zone_id == zid), None)
            c = zone.long_term() if zone else None
            if c is not None:
                path = self.paths.powercap / zid / f"constraint_{c.index}_power_limit_uw"
            if self.write(path, str(uw)) is None:
                del self.rapl_original_uw[zid]

    def _apply_throttle(self, pct: float) -> tuple[int, list[str]]:
        """Set scaling_max_freq per policy; (policies held low, failures)."""
        plan = cpufreq.throttle_plan(self.facts.policies, pct, self.opts.dvfs.min_freq_khz)
        low = 0
        failures: list[str] = []
        by_id = {p.policy_id: p for p in self.facts.policies}
        for pid, khz in plan.items():
            p = by_id[pid]
            if p.cpuinfo_max_khz and khz < p.cpuinfo_max_khz:
                low += 1
            if self.metrics:
                self.metrics.dvfs_max_khz.labels(self.node, pid).set(khz)
                if p.scaling_cur_khz:  # as of the last discovery
                    self.metrics.dvfs_cur_khz.labels(self.node, pid).set(p.scaling_cur_khz)
            path = self.paths.cpufreq / pid / "scaling_max_freq"
            if read_int(path) == khz:
                continue
            err = self.write(path, str(khz))
            if err:
                failures.append(f"{pid}: {err}")
        return low, failures

    def _restore_dvfs(self) -> None:
        if self.dvfs_active:
            self._apply_throttle(0)
            self.dvfs.reset()
            self.dvfs_active = False

    def reconcile_cpu(self, spec: NodeTwinSpec | None) -> CPUOutcome:
        cap_range = None
        if self.hardware and self.hardware.cpu and self.hardware.cpu.cap_range:
            cr = self.hardware.cpu.cap_range
            cap_range = (cr.min_watts_per_socket or 0.0, cr.max_watts_per_socket or 0.0)
        cap = cpucontrol.resolve_cpu_cap(spec.cpu if spec else None, cap_range)
        observed = self._package_power_w()
        if cap is None:
            if not self.opts.simulate_only:
                self._restore_rapl()
                self._restore_dvfs()
            self._backend_metric("none")
            return CPUOutcome("none", "none", "no CPU cap intent")
        if self.metrics and cap.socket_w is not None:
            self.metrics.policy_cap_watts.labels(self.node, (spec.policy.name if spec and spec.policy else "") or "").set(cap.socket_w)
        if self.opts.simulate_only:
            what = f"{cap.socket_w:.1f}W per socket" if cap.socket_w is not None else f"{cap.pct:.0f}% of max"
            return CPUOutcome("none", "none", f"simulate-only mode: CPU cap {what} not enforced")

        rapl_note = ""
        if cap.socket_w is not None and cpucontrol.plan_rapl(self.facts.zones, cap.socket_w).writes:
            written, rejected = self._apply_rapl(cap.socket_w)
            if written and not rejected:
                self._restore_dvfs()
                self._backend_metric("rapl")
                return CPUOutcome("rapl", "applied",
                                  f"RAPL package cap {cap.socket_w:.1f}W per socket applied on {', '.join(written)}")
            if written:
                self._backend_metric("rapl")
                return CPUOutcome("rapl", "error",
                                  f"RAPL package cap {cap.socket_w:.1f}W per socket applied on {len(written)} of "
                                  f"{len(written) + len(rejected)} package zones; rejected: {'; '.join(rejected)}")
            rapl_note = f"RAPL limit rejected ({'; '.join(rejected)}); "
        elif cap.socket_w is not None:
            unwritable = cpucontrol.plan_rapl(self.facts.zones, cap.socket_w).unwritable
            if unwritable:
                rapl_note = f"RAPL PL1 not writable on {', '.join(unwritable)}; "
        return self._reconcile_dvfs(cap, observed, rapl_note)

    def _reconcile_dvfs(self, cap: cpucontrol.CPUCap, observed: float | None, note: str) -> CPUOutcome:
        if not cpufreq.controllable(self.facts.policies):
            self._backend_metric("none")
            return CPUOutcome("none", "blocked", note + MSG_NO_CPU_BACKEND)
        if cap.socket_w is None:
            assert cap.pct is not None
            pct = float(round(100 - cap.pct))
            self.dvfs.throttle_pct = pct
            action = "percent"
            band = f"cap {cap.pct:.0f}% of max (no RAPL cap range): throttle {pct:.0f}%"
        else:
            if observed is None and self.dvfs.ema_w is None and not powercap.energy_zones(self.facts.zones):
                self._backend_metric("none")
                return CPUOutcome("none", "blocked", note + "DVFS fallback needs package power, and no package "
                                  "energy counter is readable")
            node_cap = cap.socket_w * self._sockets()
            action = self.dvfs.step(self.clock.monotonic(), observed, node_cap)
            band = (f"holding package power under {node_cap:.1f}W ({self._sockets()}x{cap.socket_w:.1f}W per "
                    f"socket): throttle {self.dvfs.throttle_pct:.0f}%")
            if self.metrics:
                if observed is not None:
                    self.metrics.dvfs_observed_w.labels(self.node).set(observed)
                if self.dvfs.ema_w is not None:
                    self.metrics.dvfs_ema_w.labels(self.node).set(self.dvfs.ema_w)
                self.metrics.dvfs_above.labels(self.node).set(self.dvfs.above)
                self.metrics.dvfs_below.labels(self.node).set(self.dvfs.below)
                if action in ("throttle_up", "throttle_down"):
                    self.metrics.dvfs_actions.labels(self.node, action).inc()
        low, failures = self._apply_throttle(self.dvfs.throttle_pct)
        self.dvfs_active = True
        self._backend_metric("dvfs")
        if self.metrics:
            self.metrics.dvfs_throttle_pct.labels(self.node).set(self.dvfs.throttle_pct)
        n = len(cpufreq.controllable(self.facts.policies))
        if failures:
            return CPUOutcome("dvfs", "error", f"{note}DVFS fallback {band}; scaling_max_freq write failed on "
                              f"{len(failures)} of {n} policies: {'; '.join(failures[:3])}")
        log.debug("node %s dvfs action %s", self.node, action)
        return CPUOutcome("dvfs", "applied", f"{note}DVFS fallback {band} on {low} of {n} cpufreq policies")

    def _backend_metric(self, mode: str) -> None:
        if self.metrics:
            self.metrics.set_backend(self.node, mode)

    # ----- GPU -----
    def _gpu_inventory(self, intent: tuple[float | None, float | None]) -> gputools.Inventory | None:
        now = self.clock.monotonic()
        stale = self.gpu_checked_s is None or now - self.gpu_checked_s >= self.opts.gpu_verify_interval_s
        if stale or intent != self.gpu_intent:
            from joulie_agent.discovery import expected_gpu_vendor

            vendor = self.facts.gpu.vendor if self.facts.gpu and self.facts.gpu.devices else expected_gpu_vendor(
                self.facts.labels, self.facts.nvidiactl)
            self.facts.gpu = hostread.gpu_inventory(vendor, self.run, self.nvml)
            self.gpu_checked_s = now
        return self.facts.gpu

    def reconcile_gpu(self, spec: NodeTwinSpec | None) -> GPUOutcome:
        cap = spec.gpu.power_cap if spec and spec.gpu else None
        if cap is None or (cap.cap_watts_per_gpu is None and cap.cap_pct_of_max is None):
            self.gpu_intent = None
            return GPUOutcome("none", "none", "no GPU cap intent")
        intent = (cap.cap_watts_per_gpu, cap.cap_pct_of_max)
        inv = self._gpu_inventory(intent)
        self.gpu_intent = intent
        if inv is None or not inv.devices:
            if inv is not None and inv.warnings:
                return GPUOutcome("none", "error", f"gpu inventory failed: {'; '.join(inv.warnings)[:300]}")
            return GPUOutcome("none", "blocked", "node has no GPUs: no allocatable GPU resources and no device "
                              "answered NVML or the GPU tools")
        backend: GPUBackend = "host-nvidia" if inv.vendor == "nvidia" else "host-amd"
        plan = gpucontrol.plan_gpu_caps(cap, inv.devices)
        if plan.blocked:
            return GPUOutcome("none", "blocked", plan.blocked)
        todo = gpucontrol.changed_targets(plan, inv.devices)
        watts = sorted(set(plan.targets.values()))
        label = f"{watts[0]:.1f}W" if len(watts) == 1 else f"{watts[0]:.1f}-{watts[-1]:.1f}W"
        if self.opts.simulate_only:
            return GPUOutcome("none", "none", f"simulate-only mode: gpu cap {label} on {len(plan.targets)} devices "
                              "not enforced")
        failures = self._set_gpu_caps(inv, todo)
        if failures:
            ok = len(plan.targets) - len(failures)
            return GPUOutcome(backend, "error", f"gpu cap {label} applied on {ok} of {len(plan.targets)} devices; "
                              f"failed: {'; '.join(failures)[:400]}")
        return GPUOutcome(backend, "applied", f"applied gpu cap {label} on {len(plan.targets)} devices")

    def _set_gpu_caps(self, inv: gputools.Inventory, todo: dict[int, float]) -> list[str]:
        failures: list[str] = []
        done: dict[int, float] = {}
        for idx, w in sorted(todo.items()):
            err: str | None = None
            if inv.source == "nvml" and self.nvml is not None:
                err = self.nvml.set_power_limit(idx, w)
            elif inv.vendor == "nvidia":
                res = self.run(gputools.nvidia_set_argv(idx, w))
                err = None if res.ok else res.describe()
            elif inv.source == "amd-smi":
                res = self.run(gputools.amdsmi_set_argv(idx, w, inv.amdsmi_ppt))
                err = None if res.ok and not gputools.amdsmi_set_failed(res.output) else res.describe()
            else:
                res = self.run(gputools.rocmsmi_set_argv(idx, w))
                err = None if res.ok and gputools.rocmsmi_set_succeeded(res.output) else (
                    f"{res.describe()}" if not res.ok else f"{' '.join(res.argv)}: cap not set: "
                    f"{gputools.rocmsmi_failure_reason(res.output)[:160]}")
            if err:
                failures.append(f"gpu {idx}: {err}")
            else:
                done[idx] = w
        if done and inv.source == "amd-smi":
            # amd-smi exits 0 whatever happened: trust only what it reads back.
            again = gputools.parse_amdsmi_limits(self.run(gputools.AMDSMI_LIMITS).output)
            now = {d.index: d.current_cap_w for d in again.devices}
            for idx, w in list(done.items()):
                got = now.get(idx)
                if got is None or abs(got - w) > 1.0:
                    failures.append(f"gpu {idx}: amd-smi reports cap {got} W after setting {w:.0f} W")
                    del done[idx]
        inv.devices = [gputools.GPUDevice(d.index, d.name, d.min_w, d.max_w, done.get(d.index, d.current_cap_w),
                                          d.default_w, d.draw_w) for d in inv.devices]
        return failures

    def reconcile(self, spec: NodeTwinSpec | None) -> tuple[CPUOutcome, GPUOutcome]:
        return self.reconcile_cpu(spec), self.reconcile_gpu(spec)
