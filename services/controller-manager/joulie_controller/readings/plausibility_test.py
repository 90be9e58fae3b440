"""A measured power reading the node's own hardware refutes is refuted, and an honest one never is."""

from __future__ import annotations

import pytest

from joulie_controller.readings.plausibility import (
    KIND_ABOVE_COMPONENTS,
    KIND_BELOW_COMPONENTS,
    KIND_CEILING,
    ceiling_w,
    check,
)

# 2 x 350 W packages + 8 x 700 W boards: the catalogue's heaviest node (nvidia-h100-sxm-8gpu).
H100_8_TDP_W = 2 * 350 + 8 * 700


def test_the_forged_50_kw_of_the_live_probe_is_refuted_on_any_node_of_the_catalogue() -> None:
    refuted = check(50_000.0, None, H100_8_TDP_W)
    assert refuted is not None and refuted.kind == KIND_CEILING
    assert "50000 W" in refuted.reason and "13600 W" in refuted.reason  # 2 x 6300 + 1000


def test_a_joules_counter_read_as_watts_is_refuted() -> None:
    refuted = check(6_540_020.0, None, 660.0)
    assert refuted is not None and "rate()" in refuted.reason


@pytest.mark.parametrize(
    ("host_w", "components_w", "tdp_w"),
    [
        (H100_8_TDP_W + 600 + 2 * 40, H100_8_TDP_W, H100_8_TDP_W),  # flat out: boards, packages, DRAM, 600 W platform
        (1460.0, 760.0, H100_8_TDP_W),  # idle 8-GPU node
        (1760.0, 560.0, H100_8_TDP_W),  # CPUs without RAPL: the components are the GPU boards only
        (700.0, 700.0, 600.0),  # the agent's sum-of-components host series
        (540.0, 700.0, 600.0),  # a BMC a few seconds behind a step up in load (within 25 %)
        (80.0, None, 0.0),  # nothing known: nothing to refute
        (30.0, 20.0, 0.0),  # a small VM
    ],
)
def test_honest_readings_are_never_refuted(host_w: float, components_w: float | None, tdp_w: float) -> None:
    assert check(host_w, components_w, tdp_w) is None


def test_a_host_reading_below_its_own_components_is_refuted() -> None:
    # A forged 0 W for a busy node would make room under the budget for others.
    refuted = check(0.0, 3000.0, H100_8_TDP_W)
    assert refuted is not None and refuted.kind == KIND_BELOW_COMPONENTS
    assert check(120.0, 200.0, 600.0) is None  # a shortfall under the 100 W floor is skew, not a lie


def test_a_host_reading_far_above_its_own_components_is_refuted_below_the_ceiling() -> None:
    # 9 kW is under the 8-GPU ceiling (13.6 kW) but 6 kW over what its components draw.
    refuted = check(9000.0, 3000.0, H100_8_TDP_W)
    assert refuted is not None and refuted.kind == KIND_ABOVE_COMPONENTS
    assert "3000 W" in refuted.reason and "3150 W of platform" in refuted.reason  # 0.5 x 6300 > 1000


def test_an_unknown_tdp_has_no_ceiling() -> None:
    assert ceiling_w(0.0) is None and ceiling_w(float("nan")) is None
    assert check(50_000.0, None, 0.0) is None  # said in docs/security.md: the authenticated path covers it
