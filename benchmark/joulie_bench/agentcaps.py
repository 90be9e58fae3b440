"""The agent's cap writes, for the accelerated benchmark: planned by the agent's own pure
functions from the NodeTwin spec the controller wrote, then written into the emulator.

The planning is the agent's (``cpucontrol.resolve_cpu_cap`` → ``cpucontrol.plan_rapl`` for RAPL
package limits in µW, ``gpucontrol.plan_gpu_caps`` → ``gpucontrol.changed_targets`` →
``gpucontrol.nvml_limit_mw`` for NVIDIA limits in mW, ``gpulock.plan_clock_lock`` for the SM clock locks of
``spec.gpu.clockLock`` and of each ``spec.gpu.clockLocks`` entry, the lower clock where a board has two,
written as ``nvidia-smi -lgc MIN,MAX`` writes it), so the benchmark cannot drift from
what a real agent writes. What stays here is the I/O the agent's shell does on a real node: read the
powercap zones (parsed with the agent's ``powercap.parse_zone``), skip unchanged limits, write.
Discovery is not what the benchmark measures: GPU limits come from the profile, as NVML reports
them on an emulated node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from joulie_agent.api import (
    CONSTRAINT_FILE_RE,
    ZONE_DIR_RE,
    ZONE_FILES,
    ClockRange,
    GPUDevice,
    Zone,
    changed_targets,
    nvml_limit_mw,
    parse_zone,
    plan_clock_lock,
    plan_gpu_caps,
    plan_rapl,
    published_cap_range_w,
    resolve_cpu_cap,
)
from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import GPUClockLock, NodeTwinSpec
from joulie_hwprofiles.schema import Profile
from joulie_simhw.gpustate import format_locked_clocks, parse_locked_clocks
from joulie_simulator.api import Emulator

CLOCK_STEP_MHZ = 15
"""NVIDIA boards list their supported SM clocks about 15 MHz apart (nvidia-smi -q -d SUPPORTED_CLOCKS)."""


@dataclass(frozen=True)
class _NodeFiles:
    zone_files: dict[str, dict[str, str]]  # zone id -> file name -> emulator path
    nvml_limits: dict[int, str]  # GPU index -> emulator path of its NVML limit (mW)
    nvml_locks: dict[int, str] = field(default_factory=dict)  # GPU index -> emulator path of its locked clocks


def _files(emu: Emulator, node: str) -> _NodeFiles:
    zones: dict[str, dict[str, str]] = {}
    nvml: dict[int, str] = {}
    locks: dict[int, str] = {}
    for e in emu.node(node).entries:
        if e.kind != "file":
            continue
        if e.bind and e.bind[0] == "nvml_limit":
            nvml[e.bind[1]] = e.path
            continue
        if e.bind and e.bind[0] == "nvml_lock":
            locks[e.bind[1]] = e.path
            continue
        p = PurePosixPath(e.path)
        if "powercap" in p.parts and ZONE_DIR_RE.match(p.parent.name) and (
                p.name in ZONE_FILES or CONSTRAINT_FILE_RE.match(p.name)):
            zones.setdefault(p.parent.name, {})[p.name] = e.path
    return _NodeFiles(zones, nvml, locks)


@dataclass
class AgentCaps:
    """Each node's NodeTwin spec applied to the emulator the way the agent applies it."""

    emu: Emulator
    profiles: dict[str, Profile]
    hardware: dict[str, NodeHardware]
    writes: int = 0
    _files: dict[str, _NodeFiles] = field(default_factory=dict)
    # Parsed once, as the agent discovers them at start; limits are read again before each write.
    _zones: dict[str, list[Zone]] = field(default_factory=dict)

    @classmethod
    def for_nodes(cls, emu: Emulator, nodes: Sequence[tuple[str, Profile]], hardware: dict[str, NodeHardware]) -> AgentCaps:
        caps = cls(emu, dict(nodes), hardware)
        caps._files = {name: _files(emu, name) for name, _ in nodes}
        caps._zones = {name: caps.zones(name) for name, _ in nodes}
        return caps

    def zones(self, node: str) -> list[Zone]:
        """The node's powercap zones as the agent parses them from their files."""
        out = []
        for zone_id, files in sorted(self._files[node].zone_files.items()):
            text: dict[str, str | None] = {n: self.emu.read(node, p).decode() for n, p in files.items()}
            zone = parse_zone(zone_id, text).zone
            if zone is not None:
                out.append(zone)
        return out

    def gpu_devices(self, node: str) -> list[GPUDevice]:
        g = self.profiles[node].gpus
        if g is None:
            return []
        return [GPUDevice(index=t.index, min_w=g.min_w, max_w=g.max_w, current_cap_w=t.limit_w)
                for t in self.emu.node(node).state.gpus]

    def apply(self, node: str, spec: NodeTwinSpec | None) -> None:
        """Write what the agent would write for ``spec``: nothing where there is no intent."""
        if spec is None:
            return
        hw = self.hardware.get(node)
        cap = resolve_cpu_cap(spec.cpu, published_cap_range_w(hw.status if hw else None))
        if cap is not None and cap.socket_w is not None:
            zones = self._files[node].zone_files
            for w in plan_rapl(self._zones[node], cap.socket_w).writes:
                path = zones[w.zone_id][f"constraint_{w.constraint}_power_limit_uw"]
                if self.emu.read(node, path).decode().strip() != str(w.limit_uw):  # the agent skips unchanged limits
                    self._write(node, path, f"{w.limit_uw}\n")
        gpu_cap = spec.gpu.power_cap if spec.gpu else None
        nvml = self._files[node].nvml_limits
        if gpu_cap is not None and nvml:
            devices = self.gpu_devices(node)
            plan = plan_gpu_caps(gpu_cap, devices)
            if plan.blocked:
                raise RuntimeError(f"bench: {node}: GPU cap blocked: {plan.blocked}")
            for index, watts in sorted(changed_targets(plan, devices).items()):
                self._write(node, nvml[index], f"{nvml_limit_mw(watts)}\n")
        self.apply_lock(node, spec)

    def clock_ranges(self, node: str) -> dict[int, ClockRange]:
        """Each board's supported SM clocks as NVML lists them: the profile's range in CLOCK_STEP_MHZ steps."""
        g = self.profiles[node].gpus
        if g is None:
            return {}
        lo, hi = round(g.sm_clock_min_mhz), round(g.sm_clock_max_mhz)
        clocks = tuple(sorted({*range(lo, hi, CLOCK_STEP_MHZ), hi}))
        return {i: ClockRange(i, clocks) for i in self._files[node].nvml_locks}

    def apply_lock(self, node: str, spec: NodeTwinSpec) -> None:
        """``spec.gpu.clockLock`` (every board) and ``spec.gpu.clockLocks`` (the boards each entry names)
        as the agent applies them: each lock's ceilings from ``plan_clock_lock`` (rounded down to a
        supported clock), the lower one where a board has two, written ``MIN,MAX`` with the board's
        lowest clock as the floor; a board no lock names (or one at the top clock): released. A lock the
        agent refuses raises."""
        locks = self._files[node].nvml_locks
        if not locks:
            return
        gpu = spec.gpu
        asked: list[tuple[GPUClockLock, list[int]]] = []
        if gpu is not None and gpu.clock_lock is not None:
            asked.append((gpu.clock_lock, sorted(locks)))
        for entry in (gpu.clock_locks or []) if gpu is not None else []:
            missing = [i for i in entry.gpus if i not in locks]
            if missing:
                raise RuntimeError(f"bench: {node}: GPU clock lock names boards the node does not have: {missing}")
            asked.append((GPUClockLock(pct_of_max=entry.pct_of_max, max_mhz=entry.max_mhz), sorted(entry.gpus)))
        targets: dict[int, int | None] = dict.fromkeys(locks)
        floors: dict[int, int] = {}
        for lock, boards in asked:
            plan = plan_clock_lock(lock, boards, self.clock_ranges(node))
            if plan.blocked:
                raise RuntimeError(f"bench: {node}: GPU clock lock blocked: {plan.blocked}")
            for i, target in plan.targets.items():
                if target is not None and (targets[i] is None or target < (targets[i] or 0)):
                    targets[i], floors[i] = target, plan.floors[i]
        for index, target in sorted(targets.items()):
            want = (floors[index], target) if target is not None else None
            path = locks[index]
            if parse_locked_clocks(self.emu.read(node, path).decode()) != want:  # the agent skips a lock in force
                self._write(node, path, format_locked_clocks(want))

    def _write(self, node: str, path: str, data: str) -> None:
        out = self.emu.write(node, path, data.encode())
        if not out.ok:
            raise RuntimeError(f"bench: cap write {node}:{path}={data.strip()} refused: {out.detail}")
        self.writes += 1
