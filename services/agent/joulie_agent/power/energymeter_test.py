"""Issue 23, defect 5: power from a counter that steps once a tick, read at any moment."""


import pytest

from joulie_agent.power.energymeter import WindowedPowerMeter

TICK_S, TRUE_W = 1.0, 290.0


def counter_uj(t: float) -> int:
    """An emulated energy_uj in files mode: updated once per 1 s tick with that tick's energy."""
    return int(int(t / TICK_S) * TICK_S * TRUE_W * 1e6)


# Reconcile moments as a NodeTwin watch brings them: sub-second bursts and 20 s pauses.
READS = [0.0, 0.3, 0.4, 1.05, 1.2, 20.0, 20.11, 20.3, 40.0, 40.17, 41.01, 60.0, 60.9, 61.02]


def test_estimates_from_a_stepping_counter_stay_near_the_truth() -> None:
    meter = WindowedPowerMeter()
    seen = []
    for t in READS:
        w = meter.update(t, {"package-0": counter_uj(t)}, {"package-0": None})
        if w:
            seen.append(w["package-0"])
    assert seen and all(abs(w - TRUE_W) / TRUE_W < 0.06 for w in seen), seen


def test_a_counter_that_wraps_is_corrected_and_one_that_resets_gives_no_estimate() -> None:
    meter = WindowedPowerMeter()
    meter.update(0, {"a": 99_000_000, "b": 900}, {"a": 100_000_000, "b": None})
    got = meter.update(10, {"a": 1_000_000, "b": 100}, {"a": 100_000_000, "b": None})
    assert got == {"a": pytest.approx(0.2)}  # 2 J across the wrap in 10 s; b went back: a reset
