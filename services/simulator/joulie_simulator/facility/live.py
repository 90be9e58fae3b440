"""The facility over a running emulator: node power from its truth, racks and zones from the node
spec's labels, emulated time from its tick count, and the ambient control (shift or pin) that the
gRPC ``SetAmbient`` and ``POST /debug/facility/ambient`` change. The OTLP pusher, ``/metrics`` and
``/debug/emulate`` read :meth:`FacilityLive.reading`. The model itself is :mod:`joulie_simulator.facility`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.facility import (
    FacilityParams,
    FacilityReading,
    NodeFacilityInput,
    evaluate,
    node_nameplate_w,
    topology,
)

AMBIENT_RANGE_C = (-50.0, 70.0)


def check_c(field: str, value: float) -> float:
    """A control temperature (an offset or a pinned ambient): a finite degC within AMBIENT_RANGE_C."""
    lo, hi = AMBIENT_RANGE_C
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"{field}: {value!r} is not a temperature in {lo:g}..{hi:g} degC")
    return value


@dataclass(frozen=True)
class AmbientControl:
    offset_c: float = 0.0
    """Added to the daily profile, degC."""
    fixed_c: float | None = None
    """When set, the ambient is this, whatever the profile says, degC."""

    def as_json(self) -> dict[str, float | None]:
        return {"offsetC": self.offset_c, "fixedC": self.fixed_c}


class FacilityLive:
    def __init__(self, emu: Emulator, labels_by_node: Mapping[str, Mapping[str, str]] | None = None,
                 params: FacilityParams | None = None, time_s: Callable[[], float] | None = None) -> None:
        self.emu = emu
        self.params = params or FacilityParams()
        labels = labels_by_node or {}
        self.topology = topology({n: labels.get(n, {}) for n in emu.nodes})
        self.nameplate_w = {n: node_nameplate_w(emu.nodes[n].profile) for n in emu.nodes}
        # Emulated seconds since the start: ticks x tick length (a frozen, stepped clock moves it too).
        self._time_s = time_s or (lambda: emu.tick_count * emu.tick_s)
        self._lock = threading.Lock()
        self.control = AmbientControl()

    def set_ambient(self, offset_c: float | None = None, fixed_c: float | None = None, clear: bool = False) -> AmbientControl:
        """Shift the profile (``offset_c``), pin the ambient (``fixed_c``) or go back to the profile
        (``clear``). ValueError names the field when a value is not a finite number in -50..70 degC."""
        for name, v in (("offset_c", offset_c), ("fixed_c", fixed_c)):
            if v is not None:
                check_c(name, v)
        with self._lock:
            if clear:
                self.control = AmbientControl()
            elif fixed_c is not None:
                self.control = AmbientControl(self.control.offset_c, fixed_c)
            elif offset_c is not None:
                self.control = AmbientControl(offset_c, None)
            return self.control

    def reading(self) -> FacilityReading:
        nodes = [NodeFacilityInput(n, float(self.emu.truth(n)["host"]["powerW"]), self.nameplate_w[n]) for n in sorted(self.emu.nodes)]
        c = self.control
        return evaluate(self.params, self.topology, nodes, self._time_s(), c.offset_c, c.fixed_c)

    def document(self) -> dict[str, object]:
        """``/debug/emulate``'s ``facility``: the truth and the control in force."""
        return {**self.reading().as_json(), "control": self.control.as_json()}
