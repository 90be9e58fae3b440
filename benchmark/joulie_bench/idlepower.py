"""Idle power as the benchmark measures it: the cluster's IT power split by device kind, and each node's
idle draw on an emulator of its own profile (A's baseline: no load, no cap, boards at their default
limit), cached per profile. Used by ``sim`` for the energy split and the idle baseline.
"""

from __future__ import annotations

from collections.abc import Sequence

from joulie_bench.nodes import BenchNode
from joulie_common.clock import FakeClock
from joulie_simulator.api import Emulator, Load


def power_w(emu: Emulator, nodes: Sequence[BenchNode]) -> tuple[float, dict[str, float]]:
    """The cluster's IT power now, and how it splits by device kind (``DEVICE_KINDS``)."""
    cpu = gpu = host = 0.0
    for n in nodes:
        st = emu.node(n.name).state
        cpu += sum(sk.power_w for sk in st.sockets)
        gpu += sum(g.power_w for g in st.gpus)
        host += st.host_power_w
    return host, {"cpu": cpu, "gpu": gpu, "other": host - cpu - gpu}


def settle_idle(emu: Emulator, clock: FakeClock, nodes: Sequence[BenchNode], dt_s: float) -> None:
    """No load on any node, then a few ticks for the power to settle."""
    for n in nodes:
        emu.set_load(n.name, Load(cpu_util=0.0, gpu_util=(0.0,) * n.gpus))
    for _ in range(3):
        clock.advance(dt_s)
        emu.tick(dt_s)


_NODE_IDLE_CACHE: dict[tuple[str, str, float], dict[str, float]] = {}


def idle_power_by_node_w(nodes: Sequence[BenchNode], dt_s: float) -> dict[str, dict[str, float]]:
    """Each node's idle power by device kind (unloaded, uncapped, boards at their default limit),
    measured on an emulator of its profile alone; cached per profile."""
    out = {}
    for n in nodes:
        key = (n.profile.name, n.profile.physics.model_dump_json(), dt_s)  # a physics variant is another profile
        if key not in _NODE_IDLE_CACHE:
            _NODE_IDLE_CACHE[key] = measure_idle_by_kind_w([BenchNode("idle", n.profile)], dt_s)
        out[n.name] = dict(_NODE_IDLE_CACHE[key])
    return out


def measure_idle_by_kind_w(nodes: Sequence[BenchNode], dt_s: float) -> dict[str, float]:
    """The nodes' idle power by device kind on an emulator of their own: no load, no cap, boards at
    their default limit (A's baseline), a few ticks to settle."""
    clock = FakeClock(t=0.0)
    emu = Emulator([(n.name, n.profile) for n in nodes], tick_s=dt_s, clock=clock.monotonic)
    emu.frozen = True
    settle_idle(emu, clock, nodes, dt_s)
    return power_w(emu, nodes)[1]
