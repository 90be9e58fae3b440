"""State of emulated nodes: what an agent can write, what the physics derives, the energy ledgers.

Pure data and pure functions. Units are in field names. A node's state is immutable; a tick or a
write returns a new one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, TypeVar

from joulie_hwprofiles.schema import Profile
from joulie_simulator.physics.gpu import Phase

_T = TypeVar("_T")


def moved(obj: _T, changes: dict[str, Any]) -> _T:
    """A copy of the frozen dataclass ``obj`` with ``changes``: its fields copied at once, not set one
    by one through ``object.__setattr__`` as a frozen dataclass's ``__init__`` (and so ``replace``)
    does (a steady node's step changes two to six numbers of objects of 9 to 18 fields: a third of
    the steady tick). No checks: for the per-tick copies only, with field names a test has seen."""
    new = object.__new__(obj.__class__)
    fields = new.__dict__
    fields.update(obj.__dict__)
    fields.update(changes)
    return new


@dataclass(frozen=True)
class GpuReading:
    """One board's activity as NVML and DCGM report it (ratios 0..1, clock in MHz)."""

    utilization: float
    sm_clock_mhz: float
    sm_active: float
    tensor_active: float
    dram_active: float


@dataclass(frozen=True)
class GpuJob:
    """The job (its Pod) holding board ``index``: who the emulated kubelet lists, what the board's
    activity signals follow (the job's compute share and its own activity constants, drawn from ``job_id``)."""

    index: int
    job_id: str
    compute_share: float
    namespace: str = ""
    pod: str = ""
    container: str = ""


@dataclass(frozen=True)
class CpuJob:
    """A container running on the node and the cores it keeps busy (its CPU time per second): what the
    emulated kubelet's cAdvisor counts (``emulation.cputime``). The physics reads ``Load.cpu_util`` only."""

    namespace: str
    pod: str
    container: str
    busy_cores: float = 0.0


@dataclass(frozen=True)
class Load:
    cpu_util: float = 0.0
    # Per GPU, indexed like the node's GPUs; a shorter tuple leaves the rest idle.
    gpu_util: tuple[float, ...] = ()
    # Per GPU, the serving phases its work runs as (physics.gpu.board_operating_point); a board
    # with none (an empty tuple, or past the end) runs one phase of natural draw gpu_util.
    gpu_phases: tuple[tuple[Phase, ...], ...] = ()
    # The boards' holders (a board no entry names is free).
    gpu_jobs: tuple[GpuJob, ...] = ()
    # The Pods running on the node (idle ones included, at 0 busy cores).
    cpu_jobs: tuple[CpuJob, ...] = ()


@dataclass(frozen=True)
class ZoneState:
    """A powercap zone: ``rel`` is its directory under devices/virtual/powercap/intel-rapl."""

    rel: str
    name: str
    kind: str  # "package" | "dram"
    socket: int
    enabled: bool
    limits_uw: tuple[int, ...]
    windows_us: tuple[int, ...]
    start_uj: int = 0


@dataclass(frozen=True)
class SocketState:
    socket: int
    # Governor target frequency = freq_base_khz + freq_per_util_khz * util (mean over the socket's policies).
    freq_base_khz: float = 0.0
    freq_per_util_khz: float = 0.0
    cur_khz: float = 0.0
    # Frequency after caps (what scaling_cur_freq shows).
    eff_khz: float = 0.0
    rapl_requested_w: float | None = None
    rapl_tau_s: float = 1.0
    rapl_short_w: float | None = None
    rapl_settled_w: float = 0.0
    hsmp_requested_w: float | None = None
    hsmp_settled_w: float = 0.0
    power_w: float = 0.0
    energy_j: float = 0.0
    dram_energy_j: float = 0.0


@dataclass(frozen=True)
class GpuTruth:
    index: int
    uuid: str
    limit_w: float
    enforced_w: float
    power_w: float = 0.0
    util: float = 0.0
    energy_j: float = 0.0
    # The SM clock the board is locked at or below (nvidia-smi -lgc, NVML locked clocks); None: not
    # locked. The board runs at min(the clock its power limit leaves, this).
    lock_max_mhz: float | None = None
    # What the board's tools report of its activity this tick (emulation.boardsignals; None before the
    # emulator's first tick): NVML utilisation and SM clock, DCGM SM / tensor / DRAM active.
    signals: GpuReading | None = None


@dataclass(frozen=True)
class NodeState:
    # physics.node.step_node builds this positionally (once per node per tick): keep the field order.
    name: str
    profile: str
    tick: int = 0
    time_s: float = 0.0
    load: Load = field(default_factory=Load)
    zones: tuple[ZoneState, ...] = ()
    sockets: tuple[SocketState, ...] = ()
    pol_min_khz: tuple[int, ...] = ()
    pol_max_khz: tuple[int, ...] = ()
    pol_governor: tuple[str, ...] = ()
    pol_epp: tuple[str, ...] = ()
    boost: bool | None = None
    hsmp_cap_uw: tuple[int, ...] = ()
    gpus: tuple[GpuTruth, ...] = ()
    host_power_w: float = 0.0
    host_energy_j: float = 0.0
    platform_energy_j: float = 0.0
    # Kinds of the faults injected into this node's view (what fakesmi and the views honour).
    faults: tuple[str, ...] = ()


@dataclass(frozen=True)
class Policy:
    id: int
    cpus: tuple[int, ...]
    socket: int


@cache
def _policies(sockets: int, cores: int, threads: int, per_core: bool) -> tuple[Policy, ...]:
    # socket-major, SMT siblings last: CPU k is core k mod (S*C); its sibling is S*C further on.
    n_cores = sockets * cores
    if per_core:
        return tuple(Policy(c, tuple(c + t * n_cores for t in range(threads)), c // cores) for c in range(n_cores))
    return tuple(Policy(k, (k,), (k % n_cores) // cores) for k in range(n_cores * threads))


def policies(profile: Profile) -> tuple[Policy, ...]:
    if profile.cpufreq is None:
        return ()
    c = profile.cpu
    return _policies(c.sockets, c.cores_per_socket, c.threads_per_core, profile.cpufreq.grouping == "per-core")


@cache
def _policy_sockets(sockets: int, cores: int, threads: int, per_core: bool) -> tuple[int, ...]:
    return tuple(p.socket for p in _policies(sockets, cores, threads, per_core))


def policy_sockets(profile: Profile) -> tuple[int, ...]:
    """The socket of each cpufreq policy, indexed like :func:`policies`."""
    if profile.cpufreq is None:
        return ()
    c = profile.cpu
    return _policy_sockets(c.sockets, c.cores_per_socket, c.threads_per_core, profile.cpufreq.grouping == "per-core")


def _socket_runs(profile: Profile) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Per socket, the [start, stop) runs of policy indices it holds."""
    socks = policy_sockets(profile)
    return _runs(socks, profile.cpu.sockets)


@cache
def _runs(socks: tuple[int, ...], n: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    out: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    start = 0
    for i in range(1, len(socks) + 1):
        if i == len(socks) or socks[i] != socks[start]:
            out[socks[start]].append((start, i))
            start = i
    return tuple(tuple(r) for r in out)


def cpu_socket(profile: Profile, cpu: int) -> int:
    c = profile.cpu
    return (cpu % (c.sockets * c.cores_per_socket)) // c.cores_per_socket


def gpu_uuid(node: str, index: int) -> str:
    h = hashlib.sha256(f"{node}/{index}".encode()).hexdigest()
    return f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def default_epp(profile: Profile) -> str:
    return "performance" if profile.cpufreq and profile.cpufreq.governor == "performance" else "balance_performance"


def initial_state(profile: Profile, node: str, energy_start_uj: dict[str, int] | None = None) -> NodeState:
    """A freshly powered node: limits at their defaults, counters at ``energy_start_uj`` (zone rel -> µJ) or 0."""
    starts = energy_start_uj or {}
    zones: list[ZoneState] = []
    pc = profile.powercap
    if pc is not None:
        for s in range(profile.cpu.sockets):
            rel = f"intel-rapl:{s:x}"
            zones.append(_zone(rel, f"package-{s}", "package", s, pc.package, starts.get(rel, 0)))
            if pc.dram is not None:
                sub = f"{rel}:0"
                zones.append(_zone(sub, "dram", "dram", s, pc.dram, starts.get(sub, 0)))
    pols = policies(profile)
    cf = profile.cpufreq
    gpus: tuple[GpuTruth, ...] = ()
    if profile.gpus is not None:
        g = profile.gpus
        # A board boots with its default limit, whatever its vendor and persistence mode (NVML:
        # "Default power management limit is a power management limit that the device boots with";
        # the H100 NVL capture reads Current = Default = 310 W of a 400 W maximum).
        gpus = tuple(GpuTruth(i, gpu_uuid(node, i), g.default_w, g.default_w) for i in range(g.count))
    hsmp = tuple(profile.hsmp.cap_default_uw for _ in range(profile.cpu.sockets)) if profile.hsmp else ()
    state = NodeState(
        name=node,
        profile=profile.name,
        zones=tuple(zones),
        sockets=tuple(SocketState(socket=s) for s in range(profile.cpu.sockets)),
        pol_min_khz=tuple(cf.min_khz for _ in pols) if cf else (),
        pol_max_khz=tuple(cf.max_khz for _ in pols) if cf else (),
        pol_governor=tuple(cf.governor for _ in pols) if cf else (),
        pol_epp=tuple(default_epp(profile) for _ in pols) if cf and cf.driver == "amd-pstate-epp" else (),
        boost=cf.boost if cf else None,
        hsmp_cap_uw=hsmp,
        gpus=gpus,
    )
    state = derive(profile, state)
    # Start settled: the first tick does not see a cap moving from 0.
    socks = tuple(
        replace(
            s,
            cur_khz=s.freq_base_khz,
            eff_khz=s.freq_base_khz,
            rapl_settled_w=s.rapl_requested_w or 0.0,
            hsmp_settled_w=s.hsmp_requested_w or 0.0,
        )
        for s in state.sockets
    )
    return replace(state, sockets=socks)


def _zone(rel: str, name: str, kind: str, socket: int, spec: object, start_uj: int) -> ZoneState:
    from joulie_hwprofiles.schema import ZoneSpec

    assert isinstance(spec, ZoneSpec)
    return ZoneState(
        rel=rel,
        name=name,
        kind=kind,
        socket=socket,
        enabled=spec.enabled,
        limits_uw=tuple(c.power_limit_uw for c in spec.constraints),
        windows_us=tuple(c.time_window_us for c in spec.constraints),
        start_uj=start_uj,
    )


def derive(profile: Profile, state: NodeState) -> NodeState:
    """Recompute what the physics needs from what was written (limits, governors, frequencies)."""
    n = profile.cpu.sockets
    base = [0.0] * n
    per_util = [0.0] * n
    count = [0] * n
    cf = profile.cpufreq
    if cf is not None:
        # Runs after every accepted write: one pass over the policies, constants hoisted.
        setpolicy = cf.setpolicy
        govs = state.pol_governor
        if govs and govs.count(govs[0]) == len(govs):
            # One governor on every policy (the usual case): sums over each socket's runs of
            # policies. Integer sums, so the same values as the loop below.
            gov = govs[0]
            lows, highs = state.pol_min_khz, state.pol_max_khz
            for sock, runs in enumerate(_socket_runs(profile)):
                lo_sum = sum(sum(lows[a:b]) for a, b in runs)
                hi_sum = sum(sum(highs[a:b]) for a, b in runs)
                if gov == "performance" or gov == "userspace":
                    base[sock], per_util[sock] = hi_sum, 0
                elif gov == "powersave" and not setpolicy:
                    base[sock], per_util[sock] = lo_sum, 0
                else:
                    base[sock], per_util[sock] = lo_sum, hi_sum - lo_sum
                count[sock] = sum(b - a for a, b in runs)
            govs = ()
        pol_socks = policy_sockets(profile) if govs else ()
        for sock, lo, hi, gov in zip(pol_socks, state.pol_min_khz, state.pol_max_khz, govs, strict=False):
            if gov == "performance" or gov == "userspace":
                b, k = hi, 0
            elif gov == "powersave" and not setpolicy:
                b, k = lo, 0
            else:
                b, k = lo, hi - lo
            base[sock] += b
            per_util[sock] += k
            count[sock] += 1
    rapl: dict[int, tuple[float | None, float, float | None]] = {}
    pc = profile.powercap
    if pc is not None:
        for z in state.zones:
            if z.kind != "package" or not z.enabled or not pc.package.constraints:
                continue
            cons = pc.package.constraints
            pl1 = min(z.limits_uw[0], cons[0].max_power_uw) / 1e6
            pl2 = min(z.limits_uw[1], cons[1].max_power_uw) / 1e6 if len(cons) > 1 else None
            rapl[z.socket] = (pl1, max(z.windows_us[0], 1) / 1e6, pl2)
    socks = []
    for s in state.sockets:
        c = max(count[s.socket], 1)
        r = rapl.get(s.socket, (None, 1.0, None))
        socks.append(
            replace(
                s,
                freq_base_khz=base[s.socket] / c,
                freq_per_util_khz=per_util[s.socket] / c,
                rapl_requested_w=r[0],
                rapl_tau_s=r[1],
                rapl_short_w=r[2],
                hsmp_requested_w=state.hsmp_cap_uw[s.socket] / 1e6 if state.hsmp_cap_uw else None,
            )
        )
    return replace(state, sockets=tuple(socks))
