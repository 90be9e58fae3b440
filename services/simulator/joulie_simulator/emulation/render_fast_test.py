"""The per-tick serialisations written by hand are byte for byte the obvious ones."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from joulie_hwprofiles.schema import builtin_profile, builtin_profile_names
from joulie_simulator.emulation.ledgertext import ledger_json, ledger_json_reference
from joulie_simulator.emulation.render import gpu_state, gpus_json
from joulie_simulator.emulation.writes import apply_write
from joulie_simulator.physics import node as node_physics
from joulie_simulator.physics.model import Load, initial_state


@pytest.mark.parametrize("name", builtin_profile_names())
def test_ledger_and_gpu_state_match_json_dumps_as_the_physics_moves(name: str) -> None:
    rnd = random.Random(name)
    p = builtin_profile(name)
    st = initial_state(p, "node-7", energy_start_uj={"intel-rapl:0": 123456789, "intel-rapl:1:0": 5})
    for k in range(12):
        assert ledger_json(st) == ledger_json_reference(st)
        if p.gpus is not None:
            assert gpus_json(p, st) == gpu_state(p, st).to_json()
            if k == 5:
                st, _ = apply_write(p, st, ("nvml_limit" if p.gpus.vendor == "nvidia" else "amdgpu_cap", 0, 0), b"300000")
        gpu_util = tuple(rnd.choice([0.0, rnd.random(), 1.0]) for _ in range(8))
        st = node_physics.step_node(p, replace(st, load=Load(cpu_util=rnd.random(), gpu_util=gpu_util)), rnd.choice([0.1, 1.0, 2.5]))
