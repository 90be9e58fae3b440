"""GPU cap enforcement on one node: through NVML where it is loaded, else the vendor's tool
(``nvidia-smi``, ``amd-smi``, ``rocm-smi``), re-reading the GPU inventory when the intent changes
or the last reading is older than the verify interval, and checking each reading the power export
took of the node in between (``host.gpureadings``: one tool call for both). Each reading also holds
the limit each board *enforces*; a cap a board lost is re-applied (drift, see ``gpuverify``). A shell: it runs
the tools; the plan (which cap on which device) comes from the pure ``gpucontrol``, the tool
arguments and parsers from ``gputools``. The SM clock lock beside the cap is ``gpulock``'s."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from joulie_agent.control import gpucontrol, gpuverify
from joulie_agent.control.outcomes import GPUBackend, GPUOutcome
from joulie_agent.discovery import gputools
from joulie_agent.discovery.status import HostFacts, expected_gpu_vendor
from joulie_agent.enforce.gpulock import LockEnforcer
from joulie_agent.host.gpureadings import GpuReadings
from joulie_agent.host.nvml import NVML
from joulie_agent.host.toolrun import Runner
from joulie_api.generated.nodetwin import NodeTwinSpec
from joulie_common.clock import Clock

log = logging.getLogger(__name__)


class GPUEnforcer:
    def __init__(self, run: Runner, nvml: NVML | None, clock: Clock, verify_interval_s: float, simulate_only: bool,
                 sys_root: Path | None = None, readings: GpuReadings | None = None):
        self.run = run
        # The node's GPU readings, shared with the power export (one tool call for both).
        self.readings = readings if readings is not None else GpuReadings(run, nvml, clock.monotonic)
        self.nvml = nvml
        self.clock = clock
        # GPU limits are read from the tools by the verification itself at most this often when the
        # intent is unchanged (a reading the power export takes meanwhile is checked without a call).
        self.verify_interval_s = verify_interval_s
        self.simulate_only = simulate_only
        self.checked_s: float | None = None
        self.intent: tuple[float | None, float | None] | None = None
        # Watts each GPU was set to (or found at) for the current intent: a later reading that
        # differs is drift, not a first application.
        self.applied: dict[int, float] = {}
        # Why the last enforced-limit read-back failed ("" when it answered): the cap is then
        # unverified, not "applied" (issue 23: a failed query used to pass silently).
        self.unverified = ""
        # Why the last GPU inventory failed ("" when it answered): logged once per change (issue 23,
        # tool-timeout: a hung tool showed in controlStatus only, with no log line).
        self.inventory_failed = ""
        # The SM clock lock (spec.gpu.clockLock), beside the cap: its own reads, plan and drift.
        self.lock = LockEnforcer(run, nvml, clock, verify_interval_s, simulate_only, sys_root)

    def _inventory(self, facts: HostFacts,
                   intent: tuple[float | None, float | None]) -> tuple[gputools.Inventory | None, bool]:
        """(the node's GPUs, whether just read): into ``facts.gpu`` when the intent changed or the last
        reading is older than the verify interval (a new one), or when the power export took a reading
        since the last one checked (no tool call: drift is then noticed at the reconcile after the
        export's next GPU read, TOOL_READ_MIN_S + RECONCILE_INTERVAL, instead of the verify interval)."""
        now = self.clock.monotonic()
        stale = self.checked_s is None or now - self.checked_s >= self.verify_interval_s
        reading = None if stale or intent != self.intent else self.readings.newer_than(self.checked_s)
        if reading is None:
            if not stale and intent == self.intent:
                return facts.gpu, False
            vendor = facts.gpu.vendor if facts.gpu and facts.gpu.devices else expected_gpu_vendor(
                facts.labels, facts.nvidiactl)
            reading = self.readings.read(vendor)
        facts.gpu = reading.inventory
        self.checked_s = reading.t_s
        if facts.gpu is not None and facts.gpu.vendor == "nvidia" and facts.gpu.devices:
            self._note_read_back(reading.readback_failed)
        return facts.gpu, True

    def _note_inventory(self, failure: str) -> None:
        """Keep why the GPU inventory failed; one log line when that starts and one when it ends."""
        if failure and not self.inventory_failed:
            log.warning("gpu inventory failed, GPU caps neither set nor verified until it answers: %s", failure)
        elif not failure and self.inventory_failed:
            log.warning("gpu inventory answers again")
        self.inventory_failed = failure

    def _note_read_back(self, failure: str) -> None:
        """Keep why the read-back failed; one log line when that changes, not one per check."""
        if failure and failure != self.unverified:
            log.warning("gpu enforced-limit read-back failed, caps unverified until it answers: %s", failure)
        elif not failure and self.unverified:
            log.warning("gpu enforced-limit read-back answers again")
        self.unverified = failure

    def reconcile(self, spec: NodeTwinSpec | None, facts: HostFacts) -> GPUOutcome:
        """Enforce the spec's GPU cap and SM clock locks on every device (only those that differ are set)."""
        out = self._reconcile_cap(spec, facts)
        gpu = spec.gpu if spec else None
        lock = self.lock.reconcile(gpu.clock_lock if gpu else None, facts.gpu, (gpu.clock_locks or []) if gpu else [])
        return replace(out, lock=lock) if lock is not None else out

    def _reconcile_cap(self, spec: NodeTwinSpec | None, facts: HostFacts) -> GPUOutcome:
        cap = spec.gpu.power_cap if spec and spec.gpu else None
        if cap is None or (cap.cap_watts_per_gpu is None and cap.cap_pct_of_max is None):
            self.intent = None
            self.applied = {}
            return GPUOutcome("none", "none", "no GPU cap intent")
        intent = (cap.cap_watts_per_gpu, cap.cap_pct_of_max)
        inv, fresh = self._inventory(facts, intent)
        self.intent = intent
        self._note_inventory('; '.join(inv.warnings)[:300] if inv is not None and not inv.devices else "")
        if inv is None or not inv.devices:
            if inv is not None and inv.warnings:
                return GPUOutcome("none", "error", f"gpu inventory failed: {'; '.join(inv.warnings)[:300]}")
            return GPUOutcome("none", "blocked", "node has no GPUs: no allocatable GPU resources and no device "
                              "answered NVML or the GPU tools")
        backend: GPUBackend = "host-nvidia" if inv.vendor == "nvidia" else "host-amd"
        plan = gpucontrol.plan_gpu_caps(cap, inv.devices)
        if plan.blocked:
            return GPUOutcome("none", "blocked", plan.blocked)
        drift = gpuverify.drifted(plan.targets, self.applied, inv.devices) if fresh else {}
        todo = {**gpucontrol.changed_targets(plan, inv.devices), **{i: plan.targets[i] for i in drift}}
        watts = sorted(set(plan.targets.values()))
        label = f"{watts[0]:.1f}W" if len(watts) == 1 else f"{watts[0]:.1f}-{watts[-1]:.1f}W"
        if self.simulate_only:
            return GPUOutcome("none", "none", f"simulate-only mode: gpu cap {label} on {len(plan.targets)} devices "
                              "not enforced")
        drift_text = gpuverify.describe(drift)
        if drift:
            log.warning("gpu cap drift: %s", drift_text)
        failures = self._set_caps(inv, todo)
        if todo:
            self.readings.wrote()
        self.applied = {i: w for i, w in plan.targets.items() if i not in failures}
        if failures:
            ok = len(plan.targets) - len(failures)
            return GPUOutcome(backend, "error", f"gpu cap {label} applied on {ok} of {len(plan.targets)} devices; "
                              f"failed: {'; '.join(failures.values())[:400]}", drift_text)
        if self.unverified:
            # Set, but the device did not say what it enforces: "applied" only for what it reads back.
            return GPUOutcome(backend, "error", f"gpu cap {label} set on {len(plan.targets)} devices, enforced limit "
                              f"unknown (unverified): read-back failed: {self.unverified}", drift_text)
        return GPUOutcome(backend, "applied", f"applied gpu cap {label} on {len(plan.targets)} devices", drift_text)

    def _set_one(self, inv: gputools.Inventory, idx: int, w: float) -> str | None:
        """Set one device's cap; None, or why not."""
        if inv.source == "nvml" and self.nvml is not None:
            return self.nvml.set_power_limit(idx, w)
        if inv.vendor == "nvidia":
            res = self.run(gputools.nvidia_set_argv([idx], w))
            return None if res.ok else res.describe()
        if inv.source == "amd-smi":
            res = self.run(gputools.amdsmi_set_argv([idx], w, inv.amdsmi_ppt))
            return None if res.ok and not gputools.amdsmi_set_failed(res.output) else res.describe()
        res = self.run(gputools.rocmsmi_set_argv(idx, w))
        if res.ok and gputools.rocmsmi_set_succeeded(res.output):
            return None
        if not res.ok:
            return f"{res.describe()}"
        return f"{' '.join(res.argv)}: cap not set: {gputools.rocmsmi_failure_reason(res.output)[:160]}"

    def _set_group(self, inv: gputools.Inventory, idxs: list[int], w: float) -> dict[int, str | None] | None:
        """Set the same cap on several boards in one tool call: {index: None or why not}, or None
        when the caller should set them one by one to learn which board refused.

        A tool call is a process start (on the emulated nodes a Python program), and a cap change on
        an 8-GPU node used to be eight of them. nvidia-smi checks every selected board before it
        writes any, so a refusal sets none: then each board is set on its own, which sets the good
        ones and names the bad one, as one call per board always did. amd-smi exits 0 whatever
        happened: ``_set_caps`` reads every board back, which names the ones it did not take.
        rocm-smi reports per board in prose and stays one call per board."""
        if len(idxs) < 2 or inv.source == "nvml" or inv.source == "rocm-smi":
            return None
        if inv.vendor == "nvidia":
            res = self.run(gputools.nvidia_set_argv(idxs, w))
        elif inv.source == "amd-smi":
            res = self.run(gputools.amdsmi_set_argv(idxs, w, inv.amdsmi_ppt))
        else:
            return None
        if res.ok:
            return dict.fromkeys(idxs)
        if res.returncode == 124:
            # A hung tool would hang once per board too: every board failed, one timeout spent.
            return dict.fromkeys(idxs, res.describe())
        return None

    def _set_caps(self, inv: gputools.Inventory, todo: dict[int, float]) -> dict[int, str]:
        """Set each GPU's cap, one tool call per distinct wattage where the tool allows;
        {index: why not} for those that failed."""
        failures: dict[int, str] = {}
        done: dict[int, float] = {}
        groups: dict[int, list[int]] = {}
        for idx, w in sorted(todo.items()):
            groups.setdefault(round(w), []).append(idx)  # the tools take whole watts
        for idxs in groups.values():
            errs = self._set_group(inv, idxs, todo[idxs[0]])
            if errs is None:
                errs = {idx: self._set_one(inv, idx, todo[idx]) for idx in idxs}
            for idx, err in errs.items():
                if err:
                    failures[idx] = f"gpu {idx}: {err}"
                else:
                    done[idx] = todo[idx]
        if done and inv.source == "amd-smi":
            # amd-smi exits 0 whatever happened: trust only what it reads back.
            again = gputools.parse_amdsmi_limits(self.run(gputools.AMDSMI_LIMITS).output)
            now = {d.index: d.current_cap_w for d in again.devices}
            for idx, w in list(done.items()):
                got = now.get(idx)
                if got is None or abs(got - w) > 1.0:
                    failures[idx] = f"gpu {idx}: amd-smi reports cap {got} W after setting {w:.0f} W"
                    del done[idx]
        inv.devices = [replace(d, current_cap_w=done.get(d.index, d.current_cap_w)) for d in inv.devices]
        return failures
