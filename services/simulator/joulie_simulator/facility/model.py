"""One facility evaluation: from node power, labels and time to ambient, zone supply air, rack inlet,
rack PSU load, cooling power and PUE.

Chain (docs/facility-model.md):
- outdoor ambient ``T(t)`` (:mod:`.ambient`); each cooling zone's supply air is ``T + zone offset``
  (an air-side economised hall: supply air follows outdoor air);
- a rack's inlet is its zone's supply air plus hot-air recirculation that grows with the rack's
  heat: ``inlet = supply + inlet_rise_c_per_kw * rack IT kW``; a node's inlet is its rack's (an
  unracked node breathes its zone's supply air);
- rack PSU load = rack IT power / rack PSU capacity, the capacity being the rack's nodes'
  nameplate times ``psu_capacity_factor``;
- cooling from the pluggable model (:mod:`.cooling`) on the whole IT load at the outdoor ambient;
- ``PUE = (IT + cooling + other) / IT``.

:func:`pue` is that PUE with the default parameters, the signature the benchmark calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from joulie_hwprofiles.schema import Profile
from joulie_simulator.facility.ambient import AmbientProfile, ambient_c
from joulie_simulator.facility.cooling import CoolingModel, ReferencePueCooling, cooling_w
from joulie_simulator.facility.topology import Topology


def node_nameplate_w(profile: Profile) -> float:
    """A node's nameplate IT power, W: CPU packages at their RAPL PL1 maximum (else the physics
    maximum), DRAM, platform and every GPU at its maximum limit — the benchmark's node TDP."""
    pc = profile.powercap
    pkg_w = pc.package.constraints[0].max_power_uw / 1e6 if pc is not None and pc.package.constraints else profile.physics.cpu.max_pkg_w
    gpus_w = profile.gpus.max_w * profile.gpus.count if profile.gpus else 0.0
    sockets = profile.cpu.sockets
    return pkg_w * sockets + profile.physics.dram_w_per_socket * sockets + profile.physics.platform_other_w + gpus_w


@dataclass(frozen=True)
class FacilityParams:
    ambient: AmbientProfile = field(default_factory=AmbientProfile)
    cooling: CoolingModel = field(default_factory=ReferencePueCooling)
    other_w: float = 0.0
    """Facility power beside IT and cooling (lighting, UPS losses), W; 0 keeps the reference PUE."""
    inlet_rise_c_per_kw: float = 0.3
    """Recirculation: rack inlet above its zone's supply air per kW of rack IT power, degC/kW (assumed)."""
    psu_capacity_factor: float = 1.0
    """Rack PSU capacity over the rack's nameplate IT power (1: PSUs sized to the nameplate)."""
    zone_offset_c: Mapping[str, float] = field(default_factory=dict)
    """Per cooling zone: supply air above (below, if negative) the outdoor ambient, degC."""

    def __post_init__(self) -> None:
        if self.other_w < 0 or self.inlet_rise_c_per_kw < 0 or self.psu_capacity_factor <= 0:
            raise ValueError("facility: other_w and inlet_rise_c_per_kw must be >= 0, psu_capacity_factor > 0")


@dataclass(frozen=True)
class NodeFacilityInput:
    name: str
    it_w: float
    """The node's power now (the emulator's host power), W."""
    nameplate_w: float


@dataclass(frozen=True)
class RackReading:
    zone: str
    it_w: float
    psu_capacity_w: float
    psu_load: float
    """it_w / psu_capacity_w (0 when the capacity is 0)."""
    inlet_c: float


@dataclass(frozen=True)
class FacilityReading:
    t_s: float
    ambient_c: float
    it_w: float
    nameplate_w: float
    cooling_w: float
    other_w: float
    pue: float | None
    """None while no IT power flows (the ratio is undefined)."""
    cooling_model: str
    zone_supply_c: Mapping[str, float]
    racks: Mapping[str, RackReading]
    node_inlet_c: Mapping[str, float]

    @property
    def facility_w(self) -> float:
        return self.it_w + self.cooling_w + self.other_w

    def as_json(self) -> dict[str, object]:
        """The truth as ``/debug/emulate`` shows it (``facility``)."""
        return {
            "tS": self.t_s, "ambientC": self.ambient_c, "itW": self.it_w, "nameplateW": self.nameplate_w,
            "coolingW": self.cooling_w, "otherW": self.other_w, "facilityW": self.facility_w, "pue": self.pue,
            "coolingModel": self.cooling_model, "zones": {z: {"supplyC": c} for z, c in sorted(self.zone_supply_c.items())},
            "racks": {r: {"zone": x.zone, "itW": x.it_w, "psuCapacityW": x.psu_capacity_w, "psuLoad": x.psu_load,
                          "inletC": x.inlet_c} for r, x in sorted(self.racks.items())},
            "nodeInletC": dict(sorted(self.node_inlet_c.items())),
        }


def evaluate(params: FacilityParams, topo: Topology, nodes: Sequence[NodeFacilityInput], t_s: float,
             offset_c: float = 0.0, fixed_c: float | None = None) -> FacilityReading:
    amb = ambient_c(params.ambient, t_s, offset_c, fixed_c)
    supply = {z: amb + params.zone_offset_c.get(z, 0.0) for z in topo.zones}
    rack_it: dict[str, float] = {r: 0.0 for r in topo.racks}
    rack_np: dict[str, float] = {r: 0.0 for r in topo.racks}
    for n in nodes:
        rack = topo.rack_of.get(n.name)
        if rack is not None:
            rack_it[rack] += n.it_w
            rack_np[rack] += n.nameplate_w
    racks: dict[str, RackReading] = {}
    for r in topo.racks:
        zone = topo.zone_of_rack[r]
        cap_w = rack_np[r] * params.psu_capacity_factor
        inlet = supply.get(zone, amb) + params.inlet_rise_c_per_kw * rack_it[r] / 1000.0
        racks[r] = RackReading(zone, rack_it[r], cap_w, rack_it[r] / cap_w if cap_w > 0 else 0.0, inlet)
    inlets: dict[str, float] = {}
    for n in nodes:
        rack = topo.rack_of.get(n.name)
        inlets[n.name] = racks[rack].inlet_c if rack is not None else supply.get(topo.zone_of_node.get(n.name, ""), amb)
    it_w = sum(n.it_w for n in nodes)
    nameplate = sum(n.nameplate_w for n in nodes)
    cooling = cooling_w(params.cooling, it_w, nameplate, amb)
    ratio = (it_w + cooling + params.other_w) / it_w if it_w > 0 else None
    return FacilityReading(t_s, amb, it_w, nameplate, cooling, params.other_w, ratio, params.cooling.name,
                           supply, racks, inlets)


_DEFAULT = FacilityParams()


def pue(it_w: float, nameplate_w: float, t_s: float) -> float:
    """PUE at ``t_s`` emulated seconds for ``it_w`` of IT on ``nameplate_w`` installed, default parameters.

    The benchmark's signature and values: ``(IT + cooling + other) / IT = 1 + cooling overhead +
    other / IT``, with the reference cooling curve and no other load; at zero IT, the no-load limit.
    """
    amb = ambient_c(_DEFAULT.ambient, t_s)
    other = _DEFAULT.other_w / it_w if it_w > 0 else 0.0
    return 1.0 + _DEFAULT.cooling.overhead(it_w, nameplate_w, amb) + other
