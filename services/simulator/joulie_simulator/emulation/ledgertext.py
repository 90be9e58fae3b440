"""A node's ledger as text: the energy ledgers and the tick, enough to resume counters without going back.

Formatted for every node on every tick (the root's combined ledger), so by a template per node:
what does not move between ticks (the node's and profile's names, the zones' start values, how many
sockets and boards) is formatted once, the numbers each tick. Byte for byte ``json.dumps(body,
sort_keys=True)`` (:func:`ledger_json_reference`; tests compare the two).
"""

from __future__ import annotations

import json
import math

from joulie_simulator.physics.model import NodeState, ZoneState

# node name -> (its zones, profile name, sockets, boards) the template was made for, and the template.
_TEMPLATES: dict[str, tuple[tuple[ZoneState, ...], str, int, int, str]] = {}


def ledger_json(state: NodeState) -> str:
    """The ledger of ``state`` as JSON, a newline after it."""
    values: list[float | int] = [g.energy_j for g in state.gpus]
    values += (state.host_energy_j, state.platform_energy_j)
    for s in state.sockets:
        values += (s.dram_energy_j, s.energy_j)
    # repr writes a finite float or an int as json.dumps does; anything else takes the slow way.
    if not math.isfinite(sum(values)):
        return ledger_json_reference(state)
    values += (state.tick, round(state.time_s, 6))
    return _template(state) % tuple(values)


def _template(state: NodeState) -> str:
    t = _TEMPLATES.get(state.name)
    if t is not None and t[0] is state.zones and t[1] == state.profile and t[2] == len(state.sockets) and t[3] == len(state.gpus):
        return t[4]

    def lit(v: object) -> str:
        return json.dumps(v).replace("%", "%%")

    zones = ", ".join(f"{lit(rel)}: {lit(start)}" for rel, start in sorted({z.rel: z.start_uj for z in state.zones}.items()))
    gpus = ", ".join('{"energyJ": %r}' for _ in state.gpus)
    socks = ", ".join('{"dramEnergyJ": %r, "energyJ": %r}' for _ in state.sockets)
    fmt = (
        f'{{"gpus": [{gpus}], "hostEnergyJ": %r, "node": {lit(state.name)}, "platformEnergyJ": %r, '
        f'"profile": {lit(state.profile)}, "schemaVersion": 1, "sockets": [{socks}], "tick": %r, "timeS": %r, '
        f'"zoneStartUJ": {{{zones}}}}}\n'
    )
    _TEMPLATES[state.name] = (state.zones, state.profile, len(state.sockets), len(state.gpus), fmt)
    return fmt


def ledger_json_reference(state: NodeState) -> str:
    """What :func:`ledger_json` writes, the slow obvious way."""
    body = {
        "schemaVersion": 1,
        "node": state.name,
        "profile": state.profile,
        "tick": state.tick,
        "timeS": round(state.time_s, 6),
        "hostEnergyJ": state.host_energy_j,
        "platformEnergyJ": state.platform_energy_j,
        "sockets": [{"energyJ": s.energy_j, "dramEnergyJ": s.dram_energy_j} for s in state.sockets],
        "gpus": [{"energyJ": g.energy_j} for g in state.gpus],
        "zoneStartUJ": {z.rel: z.start_uj for z in state.zones},
    }
    return json.dumps(body, sort_keys=True) + "\n"
