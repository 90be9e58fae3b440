"""The facility around the emulated nodes: outdoor ambient over the day, cooling zones and racks
(from node labels), rack inlet temperature, cooling power, rack PSU load and PUE. Pure: no I/O, no
clock; the shells (``joulie_simulator.facility.live``, the OTLP pusher, ``/debug/emulate``) feed it
node power and time. Formulas, parameters and sources: docs/facility-model.md.

:func:`pue` is the one PUE of the project: the offline benchmark uses it with the same inputs.
"""

from joulie_simulator.facility.ambient import AmbientProfile, ambient_c
from joulie_simulator.facility.cooling import (
    ChillerCopCooling,
    CoolingModel,
    ReferencePueCooling,
    cooling_model,
    cooling_w,
)
from joulie_simulator.facility.model import (
    FacilityParams,
    FacilityReading,
    NodeFacilityInput,
    RackReading,
    evaluate,
    node_nameplate_w,
    pue,
)
from joulie_simulator.facility.topology import Topology, topology

__all__ = [
    "AmbientProfile", "ChillerCopCooling", "CoolingModel", "FacilityParams", "FacilityReading", "NodeFacilityInput",
    "RackReading", "ReferencePueCooling", "Topology", "ambient_c", "cooling_model", "cooling_w", "evaluate", "node_nameplate_w",
    "pue", "topology",
]
