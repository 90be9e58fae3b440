"""A compiled counter shows what ``content`` renders, for every counter of every builtin profile."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from joulie_hwprofiles.schema import builtin_profile, builtin_profile_names
from joulie_simulator.emulation.counters import compile_counter
from joulie_simulator.emulation.render import content, layout
from joulie_simulator.physics import node as node_physics
from joulie_simulator.physics.model import Load, initial_state

# Every kind of file a files-mode tick rewrites each tick, compiled or not.
_COUNTERS = {"zone_energy", "amd_energy", "hsmp_input", "amdgpu_input"}


@pytest.mark.parametrize("name", builtin_profile_names())
def test_compiled_counters_show_what_content_renders_as_the_physics_moves(name: str) -> None:
    rnd = random.Random(name)
    p = builtin_profile(name)
    # Counters started near a wrap, as a resumed tree's may be: the modulo is exercised.
    starts = {"intel-rapl:0": 262_143_000_000, "intel-rapl:0:0": 65_532_000_000, "intel-rapl:1": 5}
    st = initial_state(p, "node-3", energy_start_uj=starts)
    binds = [e.bind for e in layout(p, "node-3") if e.bind is not None and e.bind[0] in _COUNTERS]
    compiled = [(b, compile_counter(p, st, b)) for b in binds]
    assert all(c is not None for _, c in compiled), "a per-tick counter left uncompiled"
    for _ in range(40):
        for b, c in compiled:
            assert c is not None
            assert c(st) == content(p, st, b), b
        gpu_util = tuple(rnd.random() for _ in range(8))
        load = Load(cpu_util=rnd.random(), gpu_util=gpu_util)
        st = node_physics.step_node(p, replace(st, load=load), rnd.choice([0.5, 1.0, 30.0]))


def test_files_that_move_only_with_a_write_are_not_compiled() -> None:
    p = builtin_profile("intel-xeon-2s-rapl")
    st = initial_state(p, "n")
    others = [e.bind for e in layout(p, "n") if e.bind is not None and e.bind[0] not in _COUNTERS]
    assert others
    assert all(compile_counter(p, st, b) is None for b in others)
