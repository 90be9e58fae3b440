"""S13: after an ambient step, the facility's truth, Prometheus and the NodeTwins' cooling stress moved
as the controller's ambient multiplier says. Pure; ``run.py`` steps the ambient and reads the cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joulie_controller.api import NEUTRAL_COOLING_STRESS, ambient_multiplier
from joulie_simcluster.smoke.checks import CHECKS, Assertion, _result


def _stress(twin: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """(cooling stress, measured W), None when either is missing or the power is not positive."""
    status = (twin or {}).get("status") or {}
    stress = status.get("predictedCoolingStressScore")
    measured = (status.get("powerMeasurement") or {}).get("measuredNodePowerW")
    if not isinstance(stress, (int, float)) or not isinstance(measured, (int, float)) or measured <= 0:
        return None
    return float(stress), float(measured)


def facility_ambient_step(step_c: float, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                          prometheus: Mapping[str, float | None], twins_before: Mapping[str, Mapping[str, Any]],
                          twins_after: Mapping[str, Mapping[str, Any]]) -> Assertion:
    """S13. ``before``/``after``: /debug/emulate's ``facility`` around the step; ``prometheus``: the
    controller's reading now (``ambient``, ``itPower``, ``coolingPower``)."""
    expected = CHECKS["S13"][1]
    if before is None or after is None:
        return _result("S13", ["/debug/emulate has no facility (simulator started with --no-facility?)"], "", expected)
    failures: list[str] = []
    moved = float(after["ambientC"]) - float(before["ambientC"])
    if abs(moved - step_c) > 0.5:
        failures.append(f"true ambient moved {moved:+.2f} °C, not {step_c:+g} °C")
    pue0, pue1 = before.get("pue"), after.get("pue")
    if not (isinstance(pue0, (int, float)) and isinstance(pue1, (int, float)) and pue1 > pue0):
        failures.append(f"facility PUE did not rise: {pue0} -> {pue1}")
    for key, truth_key, rel, abs_tol in (("ambient", "ambientC", 0.0, 0.5), ("itPower", "itW", 0.05, 1.0),
                                         ("coolingPower", "coolingW", 0.05, 1.0)):
        got, want = prometheus.get(key), float(after[truth_key])
        if got is None:
            failures.append(f"Prometheus has no facility {key}")
        elif abs(got - want) > max(abs_tol, rel * abs(want)):
            failures.append(f"Prometheus facility {key} {got:.2f} vs truth {want:.2f}")
    inlet0, inlet1 = before.get("nodeInletC") or {}, after.get("nodeInletC") or {}
    worst, ratios, neutral = 0.0, [], 0
    for node in sorted(twins_after):
        s0, s1 = _stress(twins_before.get(node)), _stress(twins_after[node])
        if s0 is None or s1 is None or node not in inlet0 or node not in inlet1:
            continue
        if s0[0] == s1[0] == NEUTRAL_COOLING_STRESS:
            neutral += 1  # no TDP known for the node (no cap range): the controller reports the neutral score
            continue
        if max(s0[0], s1[0]) >= 100:
            continue  # clamped: the ratio says nothing about the ambient
        want = ambient_multiplier(float(inlet1[node])) / ambient_multiplier(float(inlet0[node]))
        got = (s1[0] / s1[1]) / (s0[0] / s0[1])
        ratios.append(got)
        err = abs(got / want - 1)
        worst = max(worst, err)
        if err > 0.03:
            failures.append(f"{node}: cooling stress per W x{got:.3f}; its true inlet {float(inlet0[node]):.1f} -> "
                            f"{float(inlet1[node]):.1f} °C says x{want:.3f}")
    if not ratios:
        failures.append("no managed NodeTwin with measured power and cooling stress below 100 to compare")
    observed = (f"ambient {float(before['ambientC']):.1f} -> {float(after['ambientC']):.1f} °C, PUE {pue0:.3f} -> {pue1:.3f}; "
                f"{len(ratios)} NodeTwins' cooling stress per W x{min(ratios, default=0):.3f}-x{max(ratios, default=0):.3f}, "
                f"worst error against truth {worst * 100:.2f} %; {neutral} at the neutral score (no TDP)") if not failures else ""
    return _result("S13", failures, observed, expected, worst)
