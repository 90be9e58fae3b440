"""The emulator: every emulated node, stepped on one tick, read and written by path.

No I/O here: ``views.files`` mirrors the nodes to disk, ``views.fuse`` serves them, ``serving.http_debug``,
``serving.grpc_api`` and ``serving.otlp`` publish the truth. Time comes from an injected clock (seconds, float);
while the clock is frozen, time moves only through :meth:`Emulator.step`.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from joulie_common.clock import SYSTEM_CLOCK
from joulie_hwprofiles.schema import Profile
from joulie_simulator.emulation.boardsignals import with_signals
from joulie_simulator.emulation.cputime import CpuTime
from joulie_simulator.emulation.emulatednode import (
    POWER_BOOTING,
    POWER_OFF,
    POWER_ON,
    POWER_SHUTTING_DOWN,
    PowerState,
)
from joulie_simulator.emulation.emulatednode import EmulatedNode as EmulatedNode  # the emulator's API: re-exported
from joulie_simulator.emulation.emulatednode import Fault as Fault
from joulie_simulator.emulation.render import Entry, content, layout
from joulie_simulator.emulation.writes import WriteOutcome, apply_write
from joulie_simulator.physics import node as node_physics
from joulie_simulator.physics.model import Load, NodeState, initial_state, moved

EVENT_WRITE_REJECTED = "joulie.sim.write.rejected"
EVENT_CPU_CAP = "joulie.sim.cpu.cap.written"
EVENT_GPU_CAP = "joulie.sim.gpu.cap.set"
EVENT_LOAD = "joulie.sim.load.changed"
EVENT_TICK = "joulie.sim.tick"
EVENT_VIEW_RESTARTED = "joulie.sim.view.restarted"
EVENT_FAULT_INJECTED = "joulie.sim.fault.injected"
EVENT_FAULT_CLEARED = "joulie.sim.fault.cleared"
EVENT_GPU_LIMIT_RESET = "joulie.sim.gpu.limit.reset"
# A GPU's SM clock lock was set or released (nvidia-smi -lgc/-rgc, the amdgpu OverDrive table).
EVENT_GPU_CLOCK_LOCK = "joulie.sim.gpu.clock.lock"
# Files mode: one of a node's files could not be written (immutable, read-only, gone) or is again.
EVENT_FILE_UNWRITABLE = "joulie.sim.file.unwritable"
EVENT_FILE_WRITABLE = "joulie.sim.file.writable"
# A node's power state changed (message: the new state and why); see Emulator.power_off/power_on.
EVENT_POWER = "joulie.sim.power.changed"

class PowerStateError(ValueError):
    """A power action the node's current state does not allow (what a BMC answers with 409)."""


@dataclass(frozen=True)
class Event:
    name: str
    node: str
    tick: int
    at_s: float
    file: str = ""
    message: str = ""
    error_type: str = ""
    value_w: float = 0.0


class NotEmulated(KeyError):
    def __str__(self) -> str:
        return f"node {self.args[0]!r} is not emulated"


class Emulator:
    def __init__(
        self,
        nodes: Iterable[tuple[str, Profile]],
        tick_s: float = 1.0,
        clock: Callable[[], float] = SYSTEM_CLOCK.monotonic,  # seconds: a joulie_common Clock's monotonic
        states: dict[str, NodeState] | None = None,
        power_time_scale: float = 1.0,
        telemetry_seed: int | None = None,
    ) -> None:
        self.tick_s = tick_s
        # Seeds the boards' activity noise (emulation.boardsignals) and each job's activity constants;
        # None: the boards report no activity (the benchmark draws its own telemetry, joulie_bench.gputelemetry).
        self.telemetry_seed = telemetry_seed
        # Boot and shutdown last the profile's boot_s/shutdown_s times this (a CI timing preset
        # shortens them; the physics and the standby power stay the profile's).
        self.power_time_scale = power_time_scale
        self.clock = clock
        self.frozen = False
        self.tick_count = 0
        self.steady_nodes = 0  # how many the last tick found steady (physics.node.steady)
        self.lock = threading.RLock()
        self.listeners: list[Callable[[Event], None]] = []
        self.events: list[Event] = []
        # Paths accepted since the shells last persisted them (node -> paths).
        self.dirty: dict[str, set[str]] = {}
        # Nodes whose view was re-rendered (RestartNodeView): the shells rewrite their writable files.
        self.restarted: set[str] = set()
        # The emulated kubelet's cAdvisor: each container's CPU time, on the ticks the energy counters use.
        self.cpu_time = CpuTime()
        now = clock()
        self.nodes: dict[str, EmulatedNode] = {}
        # A tree's layout depends on the profile only (node names appear in contents, not paths):
        # nodes of one profile share their entries (immutable) and the index by path.
        shared: dict[int, tuple[Profile, tuple[Entry, ...], dict[str, Entry]]] = {}
        for name, profile in nodes:
            st = (states or {}).get(name) or initial_state(profile, name)
            hit = shared.get(id(profile))
            if hit is None or hit[0] is not profile:
                entries = layout(profile, name)
                hit = shared[id(profile)] = (profile, entries, {e.path: e for e in entries})
            self.nodes[name] = EmulatedNode(name, profile, st, hit[1], hit[2], now)

    # -- time -----------------------------------------------------------------------------------

    def tick(self, dt_s: float | None = None) -> None:
        """Step every node by one tick (``dt_s`` defaults to the tick length).

        The lock is taken per node, not for the whole tick: a write or a power action waits for one
        node's step (tens of µs), not for all of them (tens of ms at 1000 nodes), and the FUSE
        thread, which answers every agent's reads and writes one at a time, is never held up behind
        a whole tick. Readers take no lock at all (:meth:`read`, :meth:`truth`): ``tick_gen``
        tells them when a node's state and its tick time are being replaced together."""
        dt = self.tick_s if dt_s is None else dt_s
        with self.lock:
            now = self.clock()
            self.tick_count += 1
            tick_count = self.tick_count
        step, steady, advance = node_physics.step_node, node_physics.steady, node_physics.advance_ledgers
        self.steady_nodes = 0
        for n in list(self.nodes.values()):
            with self.lock:
                old = n.state
                if n.power != POWER_ON:
                    self._step_power(n, dt, now)
                    self.cpu_time.forget(n.name)
                    continue
                # A steady node (most of a large cluster between changes) skips the physics: same result.
                fast = old is n.steady_state and not n.faults
                new = advance(n.profile, old, dt) if fast else step(n.profile, old, dt)
                is_steady = not n.faults and (fast or steady(old, new, dt))
                self.steady_nodes += is_steady
                self.cpu_time.advance(n.name, new.load.cpu_jobs, dt)
                if n.faults and any(f.kind == "stale_counters" for f in n.faults):
                    new = replace(new, sockets=old.sockets, gpus=old.gpus)
                n.tick_gen += 1
                n.state = new
                n.last_tick_s = now
                n.tick_gen += 1
                n.steady_state = new if is_steady else None
                if new.gpus:
                    for g, o in zip(new.gpus, old.gpus, strict=True):
                        if g.limit_w != o.limit_w:
                            msg = f"gpu {g.index} limit back to its default: persistence mode off and no client"
                            self._emit(Event(EVENT_GPU_LIMIT_RESET, n.name, tick_count, now, message=msg, value_w=g.limit_w))
                if n.faults:
                    n.faults = [replace(f, ticks_left=f.ticks_left - 1) if f.ticks_left else f for f in n.faults if f.ticks_left != 1]
                    _sync_faults(n)
                elif new.faults:
                    _sync_faults(n)
        self._emit(Event(EVENT_TICK, "", tick_count, now))

    def step(self, ticks: int) -> None:
        if not self.frozen:
            raise RuntimeError("the clock runs free; freeze it before stepping")
        for _ in range(ticks):
            self.tick()

    # -- files ----------------------------------------------------------------------------------

    def node(self, name: str) -> EmulatedNode:
        try:
            return self.nodes[name]
        except KeyError:
            raise NotEmulated(name) from None

    def read(self, node: str, path: str, at_read_time: bool = True) -> bytes:
        """A file's bytes; with ``at_read_time`` counters include the time since the last tick."""
        n = self.node(node)
        e = n.by_path.get(path)
        if e is None or e.kind == "dir":
            raise OSError(errno.ENOENT if e is None else errno.EISDIR, path)
        if any(f.kind == "view_unavailable" for f in n.faults):
            raise OSError(errno.EIO, path)
        if e.bind is None:
            return e.content.encode()
        # Only gpus.json carries the boards' activity: other reads do not draw it.
        st, last_tick_s = self.shown(n) if e.bind[0] == "gpus_json" else n.ticked()
        extra = 0.0
        if at_read_time and not self.frozen and not any(f.kind == "stale_counters" for f in n.faults):
            # All the time since the tick, however late the next one is: the live loop's next tick
            # covers that time (commands.emulate.TickClock).
            extra = max(0.0, self.clock() - last_tick_s)
        return content(n.profile, st, e.bind, extra).encode()

    def shown(self, n: EmulatedNode) -> tuple[NodeState, float]:
        """``n.ticked()`` with each NVIDIA board's activity as its tools read it for that tick
        (``boardsignals``), drawn at the first read after a tick: the tools read a node every few
        seconds, a tick came every second for every busy board. Under ``stale_counters`` the last
        drawn activity stays (the tick keeps the boards' old state). None before the first tick."""
        st, last_tick_s = n.ticked()
        seed, drawn = self.telemetry_seed, n.drawn
        if seed is None or not st.gpus or n.tick_gen == 0 or n.power != POWER_ON:
            return st, last_tick_s
        if drawn is not None and drawn[0] is st:
            return drawn[1], last_tick_s
        shown = moved(st, {"gpus": drawn[1].gpus}) if drawn is not None and drawn[0].gpus is st.gpus else with_signals(n.profile, st, seed)
        n.drawn = (st, shown)
        return shown, last_tick_s

    def write(self, node: str, path: str, data: bytes) -> WriteOutcome:
        """Apply a write as the kernel would; a refusal leaves the state alone and emits an event."""
        n = self.node(node)
        e = n.by_path.get(path)
        if e is None:
            return WriteOutcome(errno.ENOENT, "rejected", f"{path} does not exist")
        with self.lock:
            if e.owner != "A" or e.bind is None:
                out = WriteOutcome(errno.EACCES, "rejected", f"{path} is read-only")
            elif any(f.kind == "write_denied" for f in n.faults):
                out = WriteOutcome(errno.EACCES, "rejected", f"{path}: writes denied (fault)")
            else:
                new, out = apply_write(n.profile, n.state, e.bind, data)
                n.state = new
                if out.ok:
                    self.dirty.setdefault(node, set()).add(path)
        now = self.clock()
        if not out.ok:
            self._emit(Event(EVENT_WRITE_REJECTED, node, self.tick_count, now, path, out.detail, out.error_type))
        elif e.bind is not None and e.bind[0] in ("zone_limit", "hsmp_cap"):
            self._emit(Event(EVENT_CPU_CAP, node, self.tick_count, now, path, data.decode(errors="replace").strip()))
        elif e.bind is not None and e.bind[0] in ("nvml_limit", "amdgpu_cap"):
            w = n.state.gpus[e.bind[1]].limit_w
            self._emit(Event(EVENT_GPU_CAP, node, self.tick_count, now, path, f"gpu {e.bind[1]} limit {w:g} W", value_w=w))
        elif e.bind is not None and e.bind[0] in ("nvml_lock", "amdgpu_od"):
            mhz = n.state.gpus[e.bind[1]].lock_max_mhz
            what = f"SM clock locked at or below {mhz:g} MHz" if mhz is not None else "SM clock lock released"
            self._emit(Event(EVENT_GPU_CLOCK_LOCK, node, self.tick_count, now, path, f"gpu {e.bind[1]} {what}"))
        return out

    def set_load(self, node: str, load: Load) -> None:
        """A node's load; while it is not on (off, booting, shutting down) the load is ignored: nothing runs."""
        with self.lock:
            n = self.node(node)
            if n.power != POWER_ON:
                return
            if load != n.state.load:  # the same load again keeps a steady node steady
                n.state = replace(n.state, load=load)
        self._emit(Event(EVENT_LOAD, node, self.tick_count, self.clock(), message=f"cpu {load.cpu_util:g}"))

    def restart_view(self, node: str) -> None:
        """As after a reboot: limits back to their defaults; energy ledgers keep counting upward."""
        with self.lock:
            self._reset_limits(self.node(node))
        self._emit(Event(EVENT_VIEW_RESTARTED, node, self.tick_count, self.clock()))

    def _reset_limits(self, n: EmulatedNode) -> None:
        """Limits back to their defaults, ledgers and load kept (the lock is held)."""
        node = n.name
        fresh = initial_state(n.profile, node)
        socks = tuple(
            replace(f, energy_j=o.energy_j, dram_energy_j=o.dram_energy_j) for f, o in zip(fresh.sockets, n.state.sockets, strict=True)
        )
        gpus = tuple(replace(f, energy_j=o.energy_j) for f, o in zip(fresh.gpus, n.state.gpus, strict=True))
        n.state = replace(
            fresh,
            sockets=socks,
            gpus=gpus,
            zones=tuple(replace(z, start_uj=o.start_uj) for z, o in zip(fresh.zones, n.state.zones, strict=True)),
            tick=n.state.tick,
            time_s=n.state.time_s,
            load=n.state.load,
            host_energy_j=n.state.host_energy_j,
            platform_energy_j=n.state.platform_energy_j,
            faults=n.state.faults,
        )
        self.restarted.add(node)

    def inject_fault(self, node: str, fault: Fault) -> list[Fault]:
        with self.lock:
            n = self.node(node)
            n.faults.append(fault)
            _sync_faults(n)
            out = list(n.faults)
        self._emit(Event(EVENT_FAULT_INJECTED, node, self.tick_count, self.clock(), fault.target, fault.kind))
        return out

    def clear_faults(self, node: str) -> None:
        with self.lock:
            n = self.node(node)
            n.faults.clear()
            _sync_faults(n)
        self._emit(Event(EVENT_FAULT_CLEARED, node, self.tick_count, self.clock()))

    def file_fault(self, node: str, path: str, message: str) -> None:
        """Files mode: ``node``'s ``path`` cannot be written (``message``), or can again (``message`` empty)."""
        name = EVENT_FILE_UNWRITABLE if message else EVENT_FILE_WRITABLE
        self._emit(Event(name, node, self.tick_count, self.clock(), path, message))

    def _emit(self, ev: Event) -> None:
        if ev.name != EVENT_TICK:
            self.events.append(ev)
            del self.events[:-1000]
        for listener in list(self.listeners):
            listener(ev)

    # -- truth ----------------------------------------------------------------------------------

    def truth(self, node: str) -> dict[str, Any]:
        """What the emulator computed for a node (``/debug/emulate``'s ``nodes[]`` entry)."""
        return self.truth_and_tick(node)[0]

    def truth_and_tick(self, node: str) -> tuple[dict[str, Any], float]:
        """The truth, and the time (emulator clock) of the tick its counters hold: what a push stamps
        them with (OTLP: the push's own time read late ticks as power moving, up to 20 % at 1000 Nodes).
        No lock (the state is one immutable value): holding it node after node kept FUSE reads waiting."""
        n = self.node(node)
        st, last_tick_s = n.ticked()
        faults = list(n.faults)
        t = node_truth(n.profile, st, [f.kind for f in faults])
        t["power"] = {
            "state": n.power,
            "sinceS": n.power_since_s,
            "transitionLeftS": n.power_left_s,
            "boots": n.boots,
            "standbyW": n.profile.physics.standby_w,
        }
        return t, last_tick_s

    # -- power states ---------------------------------------------------------------------------
    # What a node's BMC switches. On the ticked time (dt of each tick), so a frozen clock stepped by
    # the harness or the benchmark sees a boot last exactly boot_s. Off, a node draws its profile's
    # standby power (host ledger), its RAPL/GPU counters stand still and no load runs; booting and
    # shutting down it draws its idle power (fans, POST, no workload). A boot ends "on" with zero
    # load and every limit back at its default, as a power cycle leaves real hardware.

    def power_state(self, node: str) -> PowerState:
        with self.lock:
            return self.node(node).power

    def power_off(self, node: str, graceful: bool = True) -> None:
        """Graceful (the OS shuts down, ``shutdown_s``) from "on"; forced (at once) from any state but "off"."""
        with self.lock:
            n = self.node(node)
            if n.power == POWER_OFF:
                raise PowerStateError(f"node {node!r}: cannot power off: it is already off")
            if graceful and n.power != POWER_ON:
                raise PowerStateError(f"node {node!r}: cannot shut down gracefully: it is {n.power}, not on (a forced power-off is allowed)")
            n.state = replace(n.state, load=Load())
            shutdown_s = n.profile.physics.shutdown_s * self.power_time_scale
            if graceful and shutdown_s > 0:
                self._enter(n, POWER_SHUTTING_DOWN, shutdown_s, "graceful shutdown")
            else:
                self._enter(n, POWER_OFF, 0.0, "graceful shutdown" if graceful else "forced power-off")

    def power_on(self, node: str) -> None:
        """From "off": booting for the profile's ``boot_s`` (times ``power_time_scale``), then "on" (a boot counted)."""
        with self.lock:
            n = self.node(node)
            if n.power != POWER_OFF:
                raise PowerStateError(f"node {node!r}: cannot power on: it is {n.power}, not off")
            n.boots += 1
            boot_s = n.profile.physics.boot_s * self.power_time_scale
            if boot_s > 0:
                self._enter(n, POWER_BOOTING, boot_s, "power on")
            else:
                self._booted(n)

    def _enter(self, n: EmulatedNode, state: PowerState, left_s: float, why: str) -> None:
        n.power, n.power_left_s, n.power_since_s = state, left_s, n.state.time_s
        if state == POWER_OFF:
            socks = tuple(replace(s, power_w=0.0) for s in n.state.sockets)
            gpus = tuple(replace(g, power_w=0.0, util=0.0) for g in n.state.gpus)
            n.state = replace(n.state, sockets=socks, gpus=gpus, host_power_w=n.profile.physics.standby_w)
        self._emit(Event(EVENT_POWER, n.name, self.tick_count, self.clock(), message=f"{state}: {why}", value_w=n.state.host_power_w))

    def _booted(self, n: EmulatedNode) -> None:
        host_w = n.state.host_power_w
        self._reset_limits(n)
        n.state = replace(n.state, load=Load(), host_power_w=host_w)
        self._enter(n, POWER_ON, 0.0, f"booted (boot {n.boots})")

    def _step_power(self, n: EmulatedNode, dt_s: float, now: float) -> None:
        """One tick of a node that is not on (the lock is held)."""
        st = n.state
        n.tick_gen += 1
        if n.power == POWER_OFF:
            w = n.profile.physics.standby_w
            n.state = replace(
                st,
                tick=st.tick + 1,
                time_s=st.time_s + dt_s,
                host_power_w=w,
                host_energy_j=st.host_energy_j + w * dt_s,
                platform_energy_j=st.platform_energy_j + w * dt_s,
            )
        else:
            n.state = node_physics.step_node(n.profile, replace(st, load=Load()), dt_s)
        n.last_tick_s = now
        n.tick_gen += 1
        if n.power == POWER_OFF:
            return
        n.power_left_s = max(0.0, n.power_left_s - dt_s)
        if n.power_left_s <= 1e-9:
            if n.power == POWER_BOOTING:
                self._booted(n)
            else:
                self._enter(n, POWER_OFF, 0.0, "shut down")


def _sync_faults(n: EmulatedNode) -> None:
    kinds = tuple(sorted({f.kind for f in n.faults}))
    if kinds != n.state.faults:
        n.state = replace(n.state, faults=kinds)


def node_truth(profile: Profile, st: NodeState, faults: list[str] | None = None) -> dict[str, Any]:
    zones = []
    pc = profile.powercap
    for z in st.zones:
        assert pc is not None
        spec = pc.package if z.kind == "package" else pc.dram
        assert spec is not None
        sock = st.sockets[z.socket]
        power = sock.power_w if z.kind == "package" else profile.physics.dram_w_per_socket
        joules = sock.energy_j if z.kind == "package" else sock.dram_energy_j
        rng = node_physics.max_energy_range_uj(spec.energy_unit_nj)
        cap = sock.rapl_settled_w if z.kind == "package" and sock.rapl_requested_w is not None else 0.0
        zones.append(
            {
                "path": f"class/powercap/{z.rel}",
                "name": z.name,
                "powerW": round(power, 6),
                "energyJ": joules,
                "energyUJ": node_physics.energy_counter_uj(z.start_uj, joules, rng),
                "maxEnergyRangeUJ": rng,
                "capW": round(cap, 6),
                "capLocked": any(c.reject_writes for c in spec.constraints),
            }
        )
    gpus = []
    g = profile.gpus
    for t in st.gpus:
        assert g is not None
        gpus.append(
            {
                "index": t.index,
                "uuid": t.uuid,
                "model": g.product,
                "powerW": round(t.power_w, 6),
                "capW": round(t.enforced_w, 6),
                "requestedCapW": t.limit_w,
                "minCapW": g.min_w,
                "maxCapW": g.max_w,
                "defaultCapW": g.default_w,
                "util": t.util,
                "energyMJ": int(t.energy_j * 1000),
                "energyJ": t.energy_j,
                "persistenceMode": g.persistence_mode,
                # The SM clock lock (None: not locked) and the supported range it lies in.
                "lockMaxMhz": t.lock_max_mhz,
                "smClockMinMhz": g.sm_clock_min_mhz,
                "smClockMaxMhz": g.sm_clock_max_mhz,
            }
        )
    return {
        "name": st.name,
        "profile": st.profile,
        "tick": st.tick,
        "timeS": st.time_s,
        "host": {"powerW": round(st.host_power_w, 6), "energyJ": st.host_energy_j},
        "load": {"cpuUtil": st.load.cpu_util, "gpuUtil": list(st.load.gpu_util)},
        "packages": [
            {"socket": s.socket, "powerW": round(s.power_w, 6), "energyJ": s.energy_j, "freqMHz": round(s.eff_khz / 1000, 3)}
            for s in st.sockets
        ],
        "zones": zones,
        "gpus": gpus,
        "caps": {
            "cpuPackageW": [s.rapl_settled_w if s.rapl_requested_w is not None else None for s in st.sockets],
            "hsmpW": [s.hsmp_settled_w for s in st.sockets] if st.hsmp_cap_uw else [],
            "gpuW": [t.enforced_w for t in st.gpus],
        },
        "faults": faults or [],
    }
