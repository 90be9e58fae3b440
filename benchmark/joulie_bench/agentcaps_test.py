"""The benchmark writes what the agent's planners say, in the units the files take."""

from __future__ import annotations

import pytest

from joulie_api.generated.nodetwin import NodeTwinSpec
from joulie_bench.agentcaps import AgentCaps
from joulie_bench.cli import parse_nodes
from joulie_bench.nodes import node_hardware
from joulie_simulator.api import Emulator

PKG_LIMIT = "constraint_0_power_limit_uw"


def setup(spec: str = "nvidia-h100-nvl-8gpu*1") -> tuple[Emulator, AgentCaps, str]:
    nodes = parse_nodes(spec)
    emu = Emulator([(n.name, n.profile) for n in nodes], clock=lambda: 0.0)
    emu.frozen = True
    caps = AgentCaps.for_nodes(emu, [(n.name, n.profile) for n in nodes], {n.name: node_hardware(n) for n in nodes})
    return emu, caps, nodes[0].name


def twin_spec(caps: dict[str, object]) -> NodeTwinSpec:
    return NodeTwinSpec.model_validate({"nodeName": "n", "profile": "eco", **caps})


def package_limits_uw(emu: Emulator, caps: AgentCaps, node: str) -> list[int | None]:
    return [c.power_limit_uw for z in caps.zones(node) if z.is_package and (c := z.long_term()) is not None]


def gpu_limits_w(emu: Emulator, node: str) -> list[float]:
    return [g.limit_w for g in emu.node(node).state.gpus]


@pytest.mark.parametrize(("spec", "pkg_uw", "gpu_w", "writes"), [
    # 60 % of the 165 W socket maximum on each package; 60 % of the 400 W board maximum per GPU.
    ({"cpu": {"packagePowerCapPctOfMax": 60}, "gpu": {"powerCap": {"scope": "perGpu", "capPctOfMax": 60}}}, 99_000_000, 240.0, 2 + 8),
    # A GPU percentage below the board minimum is raised to it (200 W); absolute CPU watts as given.
    ({"cpu": {"packagePowerCapWatts": 120}, "gpu": {"powerCap": {"scope": "perGpu", "capPctOfMax": 10}}}, 120_000_000, 200.0, 2 + 8),
    # 100 % is the maximum, the power-on limit already: not written again; GPU watts as given.
    ({"cpu": {"packagePowerCapPctOfMax": 100}, "gpu": {"powerCap": {"scope": "perGpu", "capWattsPerGpu": 300}}}, 165_000_000, 300.0, 8),
])
def test_caps_are_the_agents_plan_written_in_file_units(spec: dict[str, object], pkg_uw: int, gpu_w: float,
                                                      writes: int) -> None:
    emu, caps, node = setup()
    caps.apply(node, twin_spec(spec))
    assert package_limits_uw(emu, caps, node) == [pkg_uw, pkg_uw]
    assert gpu_limits_w(emu, node) == [gpu_w] * 8
    assert caps.writes == writes


def test_unchanged_limits_are_not_written_again() -> None:
    emu, caps, node = setup()
    spec = twin_spec({"cpu": {"packagePowerCapPctOfMax": 60}, "gpu": {"powerCap": {"scope": "perGpu", "capPctOfMax": 60}}})
    caps.apply(node, spec)
    first = caps.writes
    caps.apply(node, spec)
    assert caps.writes == first


def test_no_intent_writes_nothing() -> None:
    emu, caps, node = setup()
    before = (package_limits_uw(emu, caps, node), gpu_limits_w(emu, node))
    caps.apply(node, None)
    caps.apply(node, twin_spec({}))
    assert caps.writes == 0
    assert (package_limits_uw(emu, caps, node), gpu_limits_w(emu, node)) == before


def gpu_locks_mhz(emu: Emulator, node: str) -> list[float | None]:
    return [g.lock_max_mhz for g in emu.node(node).state.gpus]


def test_a_clock_lock_reaches_every_board_rounded_down_to_a_supported_clock_and_is_released_when_dropped() -> None:
    emu, caps, node = setup()
    g = caps.profiles[node].gpus
    assert g is not None
    lock = twin_spec({"gpu": {"clockLock": {"pctOfMax": 60}}})
    caps.apply(node, lock)
    clocks = caps.clock_ranges(node)[0].clocks_mhz
    want = max(c for c in clocks if c <= 0.6 * g.sm_clock_max_mhz)
    assert gpu_locks_mhz(emu, node) == [want] * 8 and want <= 0.6 * g.sm_clock_max_mhz
    assert caps.writes == 8
    caps.apply(node, lock)  # in force already: the agent writes nothing
    assert caps.writes == 8
    caps.apply(node, twin_spec({}))  # the spec no longer asks for a lock: released
    assert gpu_locks_mhz(emu, node) == [None] * 8
    assert caps.writes == 16


def test_per_board_locks_reach_only_their_boards_the_lower_clock_wins_and_a_board_left_out_is_released() -> None:
    emu, caps, node = setup()
    g = caps.profiles[node].gpus
    assert g is not None
    clocks = caps.clock_ranges(node)[0].clocks_mhz

    def at(pct: float) -> int:
        return max(c for c in clocks if c <= pct / 100 * g.sm_clock_max_mhz)

    both = {"clockLock": {"pctOfMax": 70}, "clockLocks": [{"gpus": [0, 1], "pctOfMax": 60}, {"gpus": [2], "pctOfMax": 80}]}
    caps.apply(node, twin_spec({"gpu": both}))
    assert gpu_locks_mhz(emu, node) == [at(60), at(60), at(70)] + [at(70)] * 5
    caps.apply(node, twin_spec({"gpu": {"clockLocks": [{"gpus": [0, 1], "pctOfMax": 60}]}}))
    assert gpu_locks_mhz(emu, node) == [at(60), at(60)] + [None] * 6


def test_a_lock_at_the_top_clock_is_no_lock_and_one_below_the_lowest_clock_is_refused() -> None:
    emu, caps, node = setup()
    caps.apply(node, twin_spec({"gpu": {"clockLock": {"pctOfMax": 100}}}))
    assert gpu_locks_mhz(emu, node) == [None] * 8 and caps.writes == 0
    with pytest.raises(RuntimeError, match="below the lowest supported clock"):
        caps.apply(node, twin_spec({"gpu": {"clockLock": {"pctOfMax": 10}}}))
