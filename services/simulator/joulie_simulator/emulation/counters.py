"""The counters a files-mode tick rewrites on every node (RAPL and amd_energy energy, HSMP and
amdgpu power), each compiled once into a function of the node's state.

``render.content`` finds a bound file's text by its kind on every call, and looks up the zone's
spec and energy range; a tick at 1000 Nodes renders ~5000 counters, so the dispatch and look-ups
are done once per file here. Same text as ``content(profile, state, bind)`` at the tick's time
(``counters_test`` checks every counter of every builtin profile as the physics moves); files
that change only with a write or a fault still go through ``content``."""

from __future__ import annotations

import math
from collections.abc import Callable

from joulie_hwprofiles.schema import Profile
from joulie_simulator.emulation.render import Bind
from joulie_simulator.physics import node as node_physics
from joulie_simulator.physics.model import NodeState

Counter = Callable[[NodeState], str]


def compile_counter(profile: Profile, state: NodeState, bind: Bind) -> Counter | None:
    """The text of a per-tick counter as a function of the state, or None for any other file.

    ``state`` gives the layout only (which socket a zone measures, its kind); the values are read
    from the state passed each tick."""
    what, i, _ = bind
    floor = math.floor
    if what == "zone_energy":
        z = state.zones[i]
        assert profile.powercap is not None
        spec = profile.powercap.package if z.kind == "package" else profile.powercap.dram
        assert spec is not None
        wrap = node_physics.max_energy_range_uj(spec.energy_unit_nj) + 1
        sock = z.socket
        if z.kind == "package":
            return lambda st: f"{(st.zones[i].start_uj + floor(st.sockets[sock].energy_j * 1e6)) % wrap}\n"
        return lambda st: f"{(st.zones[i].start_uj + floor(st.sockets[sock].dram_energy_j * 1e6)) % wrap}\n"
    if what == "amd_energy":
        return lambda st: f"{floor(st.sockets[i].energy_j * 1e6)}\n"
    if what == "hsmp_input":
        return lambda st: f"{floor(st.sockets[i].power_w * 1000) * 1000}\n"
    if what == "amdgpu_input":
        return lambda st: f"{floor(st.gpus[i].power_w * 1000) * 1000}\n"
    return None
