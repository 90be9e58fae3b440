"""The status compared as plain data is the status written: ``status_body`` makes the JSON that
``status_content``'s model dumps to, and ``status_changed`` answers as the dead band's copies
(``measured_within``, ``decision_within``) compared whole did, for values moving within and beyond
each band, a choice changed, a key gone or added."""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime
from typing import Any

import pytest

from joulie_api.generated.nodetwin import CapDecision
from joulie_controller.model import twin
from joulie_controller.power.powertypes import PowerStatus
from joulie_controller.reconcile.nodetwin import dump, measured_row, power_status, status_body, status_content
from joulie_controller.reconcile.statusband import (
    decision_within,
    fixed_changed,
    measured_changed,
    measured_values,
    measured_within,
    status_changed,
)

DECISION = CapDecision.model_validate(
    {
        "reason": "budget",
        "slowdownBudgetPct": 5.0,
        "gpu": {
            "capPctOfMax": 70.0,
            "drivenBy": "ns/job",
            "predictedSlowdownPct": 2.5,
            "predictedEnergySavingPct": 11.0,
        },
        "pods": [
            {
                "pod": "ns/job",
                "lever": "cap",
                "estimatedComputeShare": 0.4,
                "estimatedDraw": 0.7,
                "observations": 12,
                "predictedSlowdownPct": 2.5,
                "budgetPct": 5.0,
                "budgetSource": "default",
            }
        ],
    }
)


def output(rnd: random.Random) -> twin.TwinOutput:
    """A twin model's output within the status schema's ranges (``twin.compute`` clamps to them)."""

    def w() -> float:
        return rnd.choice((0.0, -0.0, 0.04, 350, rnd.uniform(0, 5000)))

    def pct() -> float:
        return rnd.choice((0.0, 100, 33.333, rnd.uniform(0, 100)))

    return twin.TwinOutput(
        rnd.choice(("eco", "performance", "draining", "unknown")),
        pct(),
        pct(),
        w(),
        w(),
        w(),
        w(),
        w(),
        w(),
        rnd.uniform(-100, 100),
        pct(),
        pct(),
        rnd.uniform(1.05, 1.4),
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_status_body_is_the_json_of_the_status_model(seed: int) -> None:
    rnd = random.Random(seed)
    out = output(rnd)
    measured = rnd.choice((None, 0.0, 412.345, rnd.uniform(0, 3000)))
    source = rnd.choice(("prometheus", "prometheus-no-data", "static"))
    trend = rnd.choice((0.0, -0.04, rnd.uniform(-100, 100)))
    decision = rnd.choice((None, DECISION))
    power = rnd.choice(
        (
            None,
            power_status(PowerStatus()),
            power_status(PowerStatus("off", datetime(2026, 3, 1, 12, tzinfo=UTC), "idle", 3, None)),
        )
    )
    body = status_body(
        out,
        measured,
        source,
        trend,
        dump(decision) if decision is not None else None,
        dump(power) if power is not None else None,
    )
    assert body == dump(status_content(out, measured, source, trend, decision, power))


def reference(desired: dict[str, Any], held: dict[str, Any], deadband_pct: float) -> bool:
    """``status_changed`` as it was: the banded values put back in copies, then compared whole."""
    return decision_within(measured_within(desired, held, deadband_pct), held) != held


def moved(rnd: random.Random, held: dict[str, Any]) -> dict[str, Any]:
    """``held`` with a few of its values moved a little, a lot, or changed in kind."""
    out = copy.deepcopy(held)
    for _ in range(rnd.randrange(0, 4)):
        where = rnd.choice(("powerMeasurement", "top", "capDecision", "pods", "keys"))
        if where == "powerMeasurement" and "powerMeasurement" in out:
            name = rnd.choice(sorted(out["powerMeasurement"]))
            value = out["powerMeasurement"][name]
            if isinstance(value, float):
                out["powerMeasurement"][name] = value * (1 + rnd.choice((0.001, -0.004, 0.02, -0.3))) + rnd.choice(
                    (0.0, 0.5, 2.0)
                )
            else:
                out["powerMeasurement"][name] = "static"
        elif where == "top":
            name = rnd.choice(
                (
                    "predictedPowerHeadroomScore",
                    "predictedCoolingStressScore",
                    "predictedPsuStressScore",
                    "estimatedPUE",
                    "schedulableClass",
                )
            )
            value = out.get(name, 0.0)
            out[name] = value + rnd.choice((0.3, -0.9, 1.5, 20.0)) if isinstance(value, float) else "draining"
        elif where == "capDecision" and "capDecision" in out:
            gpu = out["capDecision"]["gpu"]
            name = rnd.choice(("capPctOfMax", "predictedSlowdownPct", "predictedEnergySavingPct"))
            gpu[name] = gpu[name] + rnd.choice((0.1, 0.6, 2.0))
        elif where == "pods" and "capDecision" in out:
            pod = out["capDecision"]["pods"][0]
            name = rnd.choice(("estimatedComputeShare", "estimatedDraw", "observations", "lever"))
            pod[name] = "lock" if name == "lever" else pod[name] + rnd.choice((1, 0.01, 0.2))
        elif where == "keys":
            if rnd.random() < 0.5:
                out.pop(rnd.choice(sorted(out)))
            else:
                out["power"] = {"state": "on"}
    return out


@pytest.mark.parametrize("seed", range(300))
def test_the_status_is_changed_exactly_when_the_copies_compared_whole_said_so(seed: int) -> None:
    rnd = random.Random(seed)
    held = status_body(
        output(rnd),
        rnd.choice((None, rnd.uniform(0, 3000))),
        "prometheus",
        rnd.uniform(-50, 50),
        dump(DECISION) if rnd.random() < 0.5 else None,
    )
    desired = moved(rnd, held)
    for deadband_pct in (0.0, 1.0, 5.0):
        before = copy.deepcopy((desired, held))
        assert status_changed(desired, held, deadband_pct) == reference(desired, held, deadband_pct)
        # What ``Reuse.status`` answers from a verdict kept on the fixed part and the rows of numbers.
        assert status_changed(desired, held, deadband_pct) == (
            fixed_changed(desired, held)
            or measured_changed(measured_values(desired), measured_values(held), deadband_pct))
        assert (desired, held) == before


@pytest.mark.parametrize("seed", range(100))
def test_the_measured_row_is_what_the_status_body_holds(seed: int) -> None:
    rnd = random.Random(seed)
    out = output(rnd)
    measured = rnd.choice((None, 0.0, 412.345, rnd.uniform(0, 3000)))
    trend = rnd.choice((0.0, -0.04, rnd.uniform(-100, 100)))
    row = measured_row(
        measured, trend, (out.headroom_score, out.cooling_stress_score, out.psu_stress_score, out.estimated_pue))
    body = status_body(out, measured, "prometheus", trend)
    assert row == measured_values(body)
    assert [type(v) for v in row] == [type(v) for v in measured_values(body)]
    # A held status whose measured value is not a number (or missing) leaves it to the fixed part.
    odd = copy.deepcopy(body)
    odd["predictedPsuStressScore"] = "high"
    odd["powerMeasurement"].pop("measuredNodePowerW", None)
    assert measured_values(odd)[0] is None and measured_values(odd)[4] is None
    assert fixed_changed(body, odd)


def test_a_value_the_controller_chose_is_a_change_whatever_the_band() -> None:
    rnd = random.Random(1)
    held = status_body(output(rnd), 400.0, "prometheus", 0.0, dump(DECISION))
    assert not status_changed(copy.deepcopy(held), held, 5.0)
    for path, value in (
        (("schedulableClass",), "draining"),
        (("powerMeasurement", "source"), "static"),
        (("effectiveCapState", "cpuPct"), 61.0),
        (("capDecision", "slowdownBudgetPct"), 6.0),
    ):
        desired = copy.deepcopy(held)
        parent = desired
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = value
        assert status_changed(desired, held, 5.0), path
    within = copy.deepcopy(held)
    within["powerMeasurement"]["measuredNodePowerW"] = 401.0
    assert not status_changed(within, held, 1.0)
    assert status_changed(within, held, 0.0)
