"""The values read for a tick: each node's measured power (``Measurement``, with where it came from)
and the facility's readings (``Facility``). Pure data: the Prometheus shell fills them, the
reconcile tick reads them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

SOURCE_PROMETHEUS = "prometheus"
SOURCE_NO_DATA = "prometheus-no-data"
SOURCE_STATIC = "static"
SOURCE_IMPLAUSIBLE = "prometheus-implausible"

PowerSource = Literal[
    "kepler", "utilization", "static", "http", "http-error", "http-no-endpoint", "prometheus", "prometheus-no-data",
    "prometheus-implausible",
]


@dataclass(frozen=True)
class Measurement:
    power_w: float | None
    """Measured node power, W; None when there is no valid sample."""
    source: str = SOURCE_PROMETHEUS
    components_w: float | None = None
    """The sum of the node's own component series (CPU packages, DRAM, GPU boards), W, when its host
    power came from the host series and the components were read too; the plausibility check's
    second opinion (``readings.plausibility``). None otherwise."""


@dataclass(frozen=True)
class Facility:
    """Facility readings (all optional): °C and W."""

    outdoor_ambient_c: float | None = None
    it_power_w: float = 0.0
    cooling_power_w: float | None = None
    zone_ambient_c: Mapping[str, float] = field(default_factory=dict)
    rack_power_w: Mapping[str, float] = field(default_factory=dict)
    node_inlet_c: Mapping[str, float] = field(default_factory=dict)
