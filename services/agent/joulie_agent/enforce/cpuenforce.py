"""CPU cap enforcement on one node: RAPL PL1 on every package zone, and where RAPL cannot (absent,
locked, refused) the DVFS fallback that holds package power under the cap through
``scaling_max_freq``. A shell: it reads and writes the node's files; the decisions (which limit,
which throttle) come from the pure ``cpucontrol`` and ``cpufreq``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from joulie_agent.control import cpucontrol
from joulie_agent.control.outcomes import MSG_NO_CPU_BACKEND, CPUOutcome
from joulie_agent.control.readings import UnusableReadings
from joulie_agent.discovery import cpufreq, powercap
from joulie_agent.discovery.status import HostFacts
from joulie_agent.host import hostread
from joulie_agent.host.sysfswrite import read_int
from joulie_agent.power.energymeter import WindowedPowerMeter
from joulie_agent.telemetry.nodemetrics import NodeMetrics
from joulie_api.generated.nodehardware import NodeHardwareStatus
from joulie_api.generated.nodetwin import NodeTwinSpec
from joulie_common.clock import Clock

log = logging.getLogger(__name__)

# The hardware's power unit quantises a written limit (e.g. 125000 µW): a read-back within one
# unit of what was written is the same limit.
RAPL_UNIT_TOLERANCE_UW = 125_000

# Writes one host file; returns None, or why the kernel refused (see ``sysfswrite.write_attr``).
Writer = Callable[[Path, str], str | None]


class CPUEnforcer:
    def __init__(self, paths: hostread.HostPaths, clock: Clock, record: NodeMetrics, write: Writer,
                 dvfs: cpucontrol.DvfsConfig, simulate_only: bool):
        self.paths = paths
        self.clock = clock
        self.record = record
        # The one way host files are written (tests inject kernel refusals root cannot provoke).
        self.write = write
        self.dvfs_config = dvfs
        self.simulate_only = simulate_only
        self.dvfs = cpucontrol.DvfsController(dvfs)
        self.meter = WindowedPowerMeter(min_window_s=dvfs.energy_window_s)
        # PL1 values found before the agent's first write, restored when the intent goes away.
        self.rapl_original_uw: dict[str, int] = {}
        # PL1 the agent last wrote (or found) per zone: a later read-back that differs is drift.
        self.rapl_applied_uw: dict[str, int] = {}
        self.dvfs_active = False
        # scaling_max_freq per policy as the agent last wrote or read it back. A policy whose plan
        # is unchanged is not read again before the next verification sweep (every
        # ``DvfsConfig.verify_interval_s``): a node has up to 384 policies, and reading each one
        # every reconcile was most of an emulated cluster's file reads.
        self.dvfs_known_khz: dict[str, int] = {}
        self.dvfs_checked_s: float | None = None
        self.dvfs_drift_logged = ""  # as drift_logged, from one sweep to the next
        # Energy counters and PL1 files that read garbage: logged on change, noted in controlStatus.
        self.unusable = UnusableReadings(record.node, log)
        # The drift last logged: a drift that persists (a file that keeps refusing the re-write) is
        # in controlStatus each tick, in the log once.
        self.drift_logged = ""

    def reconcile(self, spec: NodeTwinSpec | None, facts: HostFacts, hardware: NodeHardwareStatus | None) -> CPUOutcome:
        """Enforce the spec's CPU cap (or restore the limits found when it goes away); the message
        names any host file whose reading was unusable."""
        out = self._reconcile(spec, facts, hardware)
        note = self.unusable.note()
        if note:
            out = replace(out, message=f"{out.message}; {note}"[:1024])
        return out

    def _reconcile(self, spec: NodeTwinSpec | None, facts: HostFacts, hardware: NodeHardwareStatus | None) -> CPUOutcome:
        cap = cpucontrol.resolve_cpu_cap(spec.cpu if spec else None, cpucontrol.published_cap_range_w(hardware))
        observed = self.package_power_w(facts.zones)
        if cap is None:
            if not self.simulate_only:
                self._restore_rapl(facts.zones)
                self._restore_dvfs(facts.policies)
            self.record.backend("none")
            return CPUOutcome("none", "none", "no CPU cap intent")
        if cap.socket_w is not None:
            self.record.policy_cap((spec.policy.name if spec and spec.policy else "") or "", cap.socket_w)
        if self.simulate_only:
            what = f"{cap.socket_w:.1f}W per socket" if cap.socket_w is not None else f"{cap.pct:.0f}% of max"
            return CPUOutcome("none", "none", f"simulate-only mode: CPU cap {what} not enforced")

        rapl_note = ""
        if cap.socket_w is not None and cpucontrol.plan_rapl(facts.zones, cap.socket_w).writes:
            written, rejected, drift = self._apply_rapl(facts.zones, cap.socket_w)
            drift_text = f"{'; '.join(drift)}; re-applied" if drift else ""
            if drift_text and drift_text != self.drift_logged:
                log.warning("node %s: RAPL cap drift: %s", self.record.node, drift_text)
            self.drift_logged = drift_text
            if written and not rejected:
                self._restore_dvfs(facts.policies)
                self.record.backend("rapl")
                return CPUOutcome("rapl", "applied",
                                  f"RAPL package cap {cap.socket_w:.1f}W per socket applied on {', '.join(written)}",
                                  drift_text)
            if written:
                self.record.backend("rapl")
                return CPUOutcome("rapl", "error",
                                  f"RAPL package cap {cap.socket_w:.1f}W per socket applied on {len(written)} of "
                                  f"{len(written) + len(rejected)} package zones; rejected: {'; '.join(rejected)}",
                                  drift_text)
            rapl_note = f"RAPL limit rejected ({'; '.join(rejected)}); "
        elif cap.socket_w is not None:
            unwritable = cpucontrol.plan_rapl(facts.zones, cap.socket_w).unwritable
            if unwritable:
                rapl_note = f"RAPL PL1 not writable on {', '.join(unwritable)}; "
        return self._reconcile_dvfs(cap, observed, rapl_note, facts, _sockets(hardware))

    # ----- RAPL -----
    def package_power_w(self, zones: list[powercap.Zone]) -> float | None:
        """The node's package power from the energy counters (None until every package has two samples)."""
        pkgs = powercap.energy_zones(zones)
        readings, problems = hostread.read_energy(self.paths, [z.zone_id for z in pkgs])
        self.unusable.update([f"{z.zone_id}/energy_uj" for z in pkgs], problems)
        watts = self.meter.update(self.clock.monotonic(), readings, {z.zone_id: z.max_energy_range_uj for z in pkgs})
        self.record.rapl(readings, watts)
        # An unusable counter leaves no stale number behind in the metrics either.
        self.record.forget_rapl([z.zone_id for z in pkgs if z.zone_id not in readings])
        if not watts or len(watts) < len(pkgs):
            return None
        total = sum(watts.values())
        self.record.package_total(total)
        return total

    def _limit_path(self, w: cpucontrol.RaplWrite) -> Path:
        return self.paths.zone_file(w.zone_id, f"constraint_{w.constraint}_power_limit_uw")

    def _apply_rapl(self, zones: list[powercap.Zone], socket_w: float) -> tuple[list[str], list[str], list[str]]:
        """Write PL1 on every package zone; (written zones, rejected 'zone: reason', drifted 'zone: what')."""
        plan = cpucontrol.plan_rapl(zones, socket_w)
        written: list[str] = []
        rejected = [f"{z}: {'PL1 not writable'}" for z in plan.unwritable]
        drift: list[str] = []
        limit_files = {f"{w.zone_id}/{self._limit_path(w).name}": w for w in plan.writes}
        found: dict[str, str] = {}
        for key, w in limit_files.items():
            path = self._limit_path(w)
            current, why = hostread.read_uw(path)
            if why is not None:
                found[key] = why
                drift.append(f"{w.zone_id} PL1 {why}, intent {w.limit_uw / 1e6:.1f}W")
            if current == w.limit_uw:
                written.append(w.zone_id)
                self.rapl_applied_uw[w.zone_id] = w.limit_uw
                continue
            if (self.rapl_applied_uw.get(w.zone_id) == w.limit_uw and current is not None
                    and abs(current - w.limit_uw) > RAPL_UNIT_TOLERANCE_UW):
                # The limit the agent wrote reads back changed: a BIOS/BMC, another tool or a reset.
                drift.append(f"{w.zone_id} PL1 reads {current / 1e6:.1f}W, intent {w.limit_uw / 1e6:.1f}W")
            err = self.write(path, str(w.limit_uw))
            if err is None:
                # Read back: a kernel that silently keeps the old value has not applied the cap.
                # The hardware's power unit quantises the limit (e.g. 125000 µW), so allow one unit.
                after = read_int(path)
                if after is None or abs(after - w.limit_uw) > RAPL_UNIT_TOLERANCE_UW:
                    err = f"limit reads back {after} µW after writing {w.limit_uw} µW (locked?)"
            if err is None:
                if current is not None:
                    self.rapl_original_uw.setdefault(w.zone_id, current)
                written.append(w.zone_id)
                self.rapl_applied_uw[w.zone_id] = w.limit_uw
            else:
                self.rapl_applied_uw.pop(w.zone_id, None)
                rejected.append(f"{w.zone_id}: {err}")
        self.unusable.update(limit_files, found)
        return written, rejected, drift

    def _restore_rapl(self, zones: list[powercap.Zone]) -> None:
        for zid, uw in list(self.rapl_original_uw.items()):
            path = self.paths.powercap / zid / "constraint_0_power_limit_uw"
            zone = next((z for z in zones if z.zone_id == zid), None)
            c = zone.long_term() if zone else None
            if c is not None:
                path = self.paths.powercap / zid / f"constraint_{c.index}_power_limit_uw"
            if self.write(path, str(uw)) is None:
                del self.rapl_original_uw[zid]
        self.rapl_applied_uw.clear()

    # ----- DVFS -----
    def apply_throttle(self, policies: list[cpufreq.Policy], pct: float) -> tuple[int, list[str], list[str] | None]:
        """Set scaling_max_freq per policy; (policies held low, failures, drift found and re-applied,
        None when this call was no sweep and so did not look for drift).

        A policy is written when its plan changes. Every ``verify_interval_s`` all policies are read
        back: one holding another value than the agent left there has drifted (another tool, a
        thermal driver, a kernel reset), and is written again and reported."""
        plan = cpufreq.throttle_plan(policies, pct, self.dvfs_config.min_freq_khz)
        now = self.clock.monotonic()
        sweep = self.dvfs_checked_s is None or now - self.dvfs_checked_s >= self.dvfs_config.verify_interval_s
        low = 0
        failures: list[str] = []
        drift: list[str] = []
        by_id = {p.policy_id: p for p in policies}
        for pid, khz in plan.items():
            p = by_id[pid]
            if p.cpuinfo_max_khz and khz < p.cpuinfo_max_khz:
                low += 1
            self.record.dvfs_policy(pid, khz, p.scaling_cur_khz)
            known = self.dvfs_known_khz.get(pid)
            if known == khz and not sweep:
                continue
            path = self.paths.cpufreq / pid / "scaling_max_freq"
            if known is None or known == khz:
                current = read_int(path)
                if current == khz:
                    self.dvfs_known_khz[pid] = khz
                    continue
                if known == khz:
                    drift.append(f"{pid} scaling_max_freq {current if current is not None else 'unreadable'} kHz, "
                                 f"expected {khz} kHz")
            err = self.write(path, str(khz))
            if err:
                failures.append(f"{pid}: {err}")
                self.dvfs_known_khz.pop(pid, None)
            else:
                self.dvfs_known_khz[pid] = khz
        if sweep:
            self.dvfs_checked_s = now
        return low, failures, drift if sweep else None

    def _restore_dvfs(self, policies: list[cpufreq.Policy]) -> None:
        if self.dvfs_active:
            self.apply_throttle(policies, 0)
            self.dvfs.reset()
            self.dvfs_active = False
            # Unmanaged from here: what the policies hold is read again when DVFS takes over again.
            self.dvfs_known_khz.clear()
            self.dvfs_checked_s = None

    def _reconcile_dvfs(self, cap: cpucontrol.CPUCap, observed: float | None, note: str, facts: HostFacts,
                        sockets: int) -> CPUOutcome:
        if not cpufreq.controllable(facts.policies):
            self.record.backend("none")
            return CPUOutcome("none", "blocked", note + MSG_NO_CPU_BACKEND)
        if cap.socket_w is None:
            assert cap.pct is not None
            pct = float(round(100 - cap.pct))
            self.dvfs.throttle_pct = pct
            action = "percent"
            band = f"cap {cap.pct:.0f}% of max (no RAPL cap range): throttle {pct:.0f}%"
        else:
            if observed is None and self.dvfs.ema_w is None and not powercap.energy_zones(facts.zones):
                self.record.backend("none")
                return CPUOutcome("none", "blocked", note + "DVFS fallback needs package power, and no package "
                                  "energy counter is readable")
            node_cap = cap.socket_w * sockets
            action = self.dvfs.step(self.clock.monotonic(), observed, node_cap)
            band = (f"holding package power under {node_cap:.1f}W ({sockets}x{cap.socket_w:.1f}W per "
                    f"socket): throttle {self.dvfs.throttle_pct:.0f}%")
            self.record.dvfs_step(observed, self.dvfs.ema_w, self.dvfs.above, self.dvfs.below, action)
        low, failures, drift = self.apply_throttle(facts.policies, self.dvfs.throttle_pct)
        drift_text = ""
        if drift:
            more = f" and {len(drift) - 3} more" if len(drift) > 3 else ""
            drift_text = f"{len(drift)} cpufreq policies drifted ({'; '.join(drift[:3])}{more}); re-applied"
        if drift is not None:  # drift is only looked for at a sweep: a drift that persists is logged once
            if drift_text and drift_text != self.dvfs_drift_logged:
                log.warning("node %s: DVFS cap drift: %s", self.record.node, drift_text)
            self.dvfs_drift_logged = drift_text
        self.dvfs_active = True
        self.record.backend("dvfs")
        self.record.throttle(self.dvfs.throttle_pct)
        n = len(cpufreq.controllable(facts.policies))
        if failures:
            return CPUOutcome("dvfs", "error", f"{note}DVFS fallback {band}; scaling_max_freq write failed on "
                              f"{len(failures)} of {n} policies: {'; '.join(failures[:3])}", drift_text)
        log.debug("node %s dvfs action %s", self.record.node, action)
        return CPUOutcome("dvfs", "applied", f"{note}DVFS fallback {band} on {low} of {n} cpufreq policies",
                          drift_text)


def _sockets(hardware: NodeHardwareStatus | None) -> int:
    return (hardware.cpu.sockets if hardware and hardware.cpu else None) or 1
