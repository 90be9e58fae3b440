"""Cooling power from IT load and outdoor ambient: pluggable models behind one protocol.

- ``reference`` (default): the original simulator's and the benchmark's empirical PUE curve
  (reference joulie-node-sim.md §3.1.4), ``PUE_c = clamp(1.08 + 0.006 (T - 15) + 0.04 L +
  0.015 L (T - 15) / 15, 1, 3)`` with ``L = IT / nameplate``; cooling = IT (PUE_c - 1). Its
  overhead grows with the outdoor temperature (less free cooling, harder heat rejection) and with
  load (fans and pumps ramp). All of the facility's overhead is in this curve: pair it with
  ``other_w = 0`` to keep the benchmark's PUE.
- ``chiller``: a chiller plant whose coefficient of performance falls as the outdoor air warms,
  ``cooling = IT / COP(T) + fan_frac IT`` with ``COP(T) = max(cop_min, cop_ref - cop_slope (T - T_ref))``.
  Figures and sources in docs/facility-model.md.

A model gives the cooling overhead, W of cooling per W of IT (>= 0), for IT power, nameplate and
ambient; cooling power is IT times that. The overhead is defined at zero IT too (its limit), so the
PUE at no load is defined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

PUE_CLAMP = (1.0, 3.0)


class CoolingModel(Protocol):
    @property
    def name(self) -> str:
        """The model's name (``--cooling-model``, ``/debug/emulate``'s ``coolingModel``)."""
        ...

    def overhead(self, it_w: float, nameplate_w: float, ambient_c: float) -> float:
        """Cooling W per IT W for ``it_w`` of IT load on ``nameplate_w`` of installed IT at ``ambient_c``."""
        ...


def cooling_w(model: CoolingModel, it_w: float, nameplate_w: float, ambient_c: float) -> float:
    return max(0.0, it_w) * model.overhead(it_w, nameplate_w, ambient_c)


def load_fraction(it_w: float, nameplate_w: float) -> float:
    return it_w / nameplate_w if nameplate_w > 0 else 0.0


@dataclass(frozen=True)
class ReferencePueCooling:
    """The reference's PUE curve, taken as the cooling overhead (see the module docstring)."""

    name: str = "reference"
    base: float = 1.08
    per_c: float = 0.006
    per_load: float = 0.04
    per_load_c: float = 0.015
    ref_c: float = 15.0

    def pue(self, it_w: float, nameplate_w: float, ambient_c: float) -> float:
        load = load_fraction(it_w, nameplate_w)
        d = ambient_c - self.ref_c
        raw = self.base + self.per_c * d + self.per_load * load + self.per_load_c * load * d / 15
        return min(PUE_CLAMP[1], max(PUE_CLAMP[0], raw))

    def overhead(self, it_w: float, nameplate_w: float, ambient_c: float) -> float:
        return self.pue(it_w, nameplate_w, ambient_c) - 1.0


@dataclass(frozen=True)
class ChillerCopCooling:
    """A chiller plant: compressor power IT / COP(T) plus air-handler fans (``fan_frac`` of IT)."""

    name: str = "chiller"
    cop_ref: float = 2.8
    """COP at ``ref_c`` (ASHRAE 90.1 minimum full-load efficiency of an air-cooled chiller, 9.562 EER)."""
    ref_c: float = 35.0
    """Outdoor temperature of that rating (AHRI 550/590: 95 degF entering condenser air)."""
    cop_slope: float = 0.1
    """COP gained per degC cooler outdoor air (assumed, about 3.5 % per degC)."""
    cop_min: float = 1.5
    cop_max: float = 8.0
    fan_frac: float = 0.05
    """Air-handler and pump power as a share of IT (assumed)."""

    def cop(self, ambient_c: float) -> float:
        return min(self.cop_max, max(self.cop_min, self.cop_ref - self.cop_slope * (ambient_c - self.ref_c)))

    def overhead(self, it_w: float, nameplate_w: float, ambient_c: float) -> float:
        return 1.0 / self.cop(ambient_c) + self.fan_frac


MODELS: dict[str, CoolingModel] = {"reference": ReferencePueCooling(), "chiller": ChillerCopCooling()}


def cooling_model(name: str) -> CoolingModel:
    """The model called ``name``; ValueError names the known ones."""
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"cooling model {name!r}: expected one of {', '.join(sorted(MODELS))}") from None
