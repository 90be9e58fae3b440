"""The DVFS fallback controller and cap resolution, as tables."""

import pytest

from joulie_agent.control.cpucontrol import CPUCap, DvfsConfig, DvfsController, resolve_cpu_cap
from joulie_api.generated.nodetwin import CPUCapSpec


@pytest.mark.parametrize(("spec", "cap_range", "expected"), [
    (None, (0.0, 165.0), None),
    (CPUCapSpec(package_power_cap_watts=120), None, CPUCap(120.0, None)),
    (CPUCapSpec(package_power_cap_pct_of_max=50), (0.0, 165.0), CPUCap(82.5, 50.0)),
    (CPUCapSpec(package_power_cap_pct_of_max=10), (40.0, 165.0), CPUCap(40.0, 10.0)),  # clamped to min
    (CPUCapSpec(package_power_cap_pct_of_max=60), None, CPUCap(None, 60.0)),  # DVFS percent path
    (CPUCapSpec(), (0.0, 165.0), None),
])
def test_cap_resolution(spec: CPUCapSpec | None, cap_range: tuple[float, float] | None,
                        expected: CPUCap | None) -> None:
    assert resolve_cpu_cap(spec, cap_range) == expected


def run(ctl: DvfsController, samples: list[tuple[float, float]], cap: float) -> list[str]:
    return [ctl.step(t, p, cap) for t, p in samples]


def test_throttle_rises_after_trip_count_samples_above_the_band() -> None:
    ctl = DvfsController(DvfsConfig(ema_alpha=1.0, trip_count=2, cooldown_s=20))
    assert run(ctl, [(0, 300), (1, 300)], cap=250) == ["hold", "throttle_up"]
    assert ctl.throttle_pct == 10


def test_cooldown_holds_after_an_action() -> None:
    ctl = DvfsController(DvfsConfig(ema_alpha=1.0, trip_count=1, cooldown_s=20))
    assert run(ctl, [(0, 300), (5, 300), (19.9, 300), (20, 300)], cap=250) == [
        "throttle_up", "cooldown", "cooldown", "throttle_up"]
    assert ctl.throttle_pct == 20


def test_inside_the_band_resets_trip_counts() -> None:
    ctl = DvfsController(DvfsConfig(ema_alpha=1.0, trip_count=2))
    run(ctl, [(0, 300), (1, 250), (2, 300)], cap=250)  # above, in band, above
    assert ctl.throttle_pct == 0 and ctl.above == 1


def test_throttle_falls_when_below_and_never_leaves_0_100() -> None:
    ctl = DvfsController(DvfsConfig(ema_alpha=1.0, trip_count=1, cooldown_s=0, step_pct=60))
    run(ctl, [(0, 500), (1, 500), (2, 500)], cap=250)
    assert ctl.throttle_pct == 100
    run(ctl, [(3, 10), (4, 10), (5, 10)], cap=250)
    assert ctl.throttle_pct == 0


def test_ema_keeps_a_short_spike_inside_the_band() -> None:
    ctl = DvfsController(DvfsConfig(ema_alpha=0.3, trip_count=2))
    run(ctl, [(0, 250), (1, 280), (2, 250), (3, 250)], cap=250)  # EMA peaks at 259 W < 250 + 10
    assert ctl.throttle_pct == 0
    assert ctl.step(4, None, 250) == "no-reading"
