"""Racks and cooling zones from node labels (``joulie.io/rack``, ``joulie.io/cooling-zone``).

The same labels the controller reads on Nodes (joulie_api.names), so a cluster spec that puts
them on its pools places the emulated nodes and the real Nodes alike. A node without a rack label
is in no rack (its power still counts as IT); a rack's zone is the zone its nodes carry, and a rack
whose nodes name different zones is refused (a rack sits in one cooling zone).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from joulie_api.names import LABEL_COOLING_ZONE, LABEL_RACK


@dataclass(frozen=True)
class Topology:
    rack_of: Mapping[str, str]
    """Node -> rack, racked nodes only."""
    zone_of_rack: Mapping[str, str]
    """Rack -> cooling zone ("" when none is labelled)."""
    zone_of_node: Mapping[str, str]
    """Node -> cooling zone, every node with a zone (its own label or its rack's)."""

    @property
    def racks(self) -> list[str]:
        return sorted(self.zone_of_rack)

    @property
    def zones(self) -> list[str]:
        return sorted({z for z in self.zone_of_node.values() if z} | {z for z in self.zone_of_rack.values() if z})


def topology(labels_by_node: Mapping[str, Mapping[str, str]]) -> Topology:
    rack_of: dict[str, str] = {}
    zone_of_rack: dict[str, str] = {}
    zone_of_node: dict[str, str] = {}
    for node in sorted(labels_by_node):
        labels = labels_by_node[node]
        rack, zone = labels.get(LABEL_RACK, ""), labels.get(LABEL_COOLING_ZONE, "")
        if zone:
            zone_of_node[node] = zone
        if not rack:
            continue
        rack_of[node] = rack
        seen = zone_of_rack.get(rack)
        if seen and zone and seen != zone:
            raise ValueError(f"node {node}: label {LABEL_COOLING_ZONE}={zone!r} but rack {rack!r} is in zone {seen!r}")
        if zone or seen is None:
            zone_of_rack[rack] = zone or (seen or "")
    for node, rack in rack_of.items():
        if zone_of_rack[rack]:
            zone_of_node.setdefault(node, zone_of_rack[rack])
    return Topology(rack_of, zone_of_rack, zone_of_node)
