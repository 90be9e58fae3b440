"""A steady node skips the physics on a tick (physics.node.steady): the emulator's nodes end exactly
where stepping every node through the physics on every tick leaves them, writes and loads included."""

from dataclasses import replace

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.emulation.writes import apply_write
from joulie_simulator.physics import node as node_physics
from joulie_simulator.physics.model import Load, NodeState, initial_state

CAP = "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/constraint_0_power_limit_uw"
NODES = (("cpu", "intel-xeon-2s-rapl"), ("gpu", "nvidia-h100-nvl-8gpu"))


def _by_hand(ticks: list[float], profile_name: str, node: str, load: Load, cap_at: int, load_at: int, load2: Load) -> NodeState:
    p = builtin_profile(profile_name)
    s = replace(initial_state(p, node), load=load)
    for k, dt in enumerate(ticks):
        if k == cap_at:
            s, _ = apply_write(p, s, ("zone_limit", 0, 0), b"120000000")
        if k == load_at:
            s = replace(s, load=load2)
        s = node_physics.step_node(p, s, dt)
    return s


def test_the_emulators_nodes_match_the_physics_stepped_every_tick_through_writes_and_loads() -> None:
    now = [0.0]
    emu = Emulator([(n, builtin_profile(p)) for n, p in NODES], tick_s=1.0, clock=lambda: now[0])
    load, load2 = Load(cpu_util=0.8, gpu_util=(0.9,) * 8), Load(cpu_util=0.3, gpu_util=(0.5,) * 8)
    ticks = [1.0 + 0.013 * (k % 7) for k in range(120)]  # live ticks are never quite one second
    steady_seen = []
    for n, _ in NODES:
        emu.set_load(n, load)
    for k, dt in enumerate(ticks):
        if k == 40:
            emu.write("cpu", CAP, b"120000000")
        if k == 80:
            for n, _ in NODES:
                emu.set_load(n, load2)
        now[0] += dt
        emu.tick(dt)
        steady_seen.append(emu.steady_nodes)
    for n, p in NODES:
        assert emu.nodes[n].state == _by_hand(ticks, p, n, load, 40 if n == "cpu" else -1, 80, load2)
    # Both settle within seconds of each change and then skip the physics; a write or a load brings it back.
    assert steady_seen[30] == 2 and steady_seen[70] == 2 and steady_seen[119] == 2
    assert steady_seen[40] < 2 and steady_seen[80] == 0


def test_the_same_load_again_keeps_a_steady_node_steady() -> None:
    emu = Emulator([("cpu", builtin_profile("intel-xeon-2s-rapl"))], tick_s=1.0)
    emu.set_load("cpu", Load(cpu_util=0.5))
    for _ in range(10):
        emu.tick()
    assert emu.steady_nodes == 1
    st = emu.nodes["cpu"].state
    emu.set_load("cpu", Load(cpu_util=0.5))
    assert emu.nodes["cpu"].state is st
    emu.set_load("cpu", Load(cpu_util=0.6))
    emu.tick()
    assert emu.steady_nodes == 0
