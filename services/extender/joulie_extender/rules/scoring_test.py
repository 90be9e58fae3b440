from datetime import UTC, datetime, timedelta

import pytest

from joulie_extender.rules.filtering import REASON_DRAINING, REASON_ECO, rejection_reason
from joulie_extender.rules.powerest import Coefficients, HardwareInfo, PodDemand
from joulie_extender.rules.scoring import (
    NEUTRAL_SCORE,
    ClusterContext,
    TwinView,
    cluster_context,
    marginal_watts,
    score_node,
    to_extender_score,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
FRESH = NOW - timedelta(seconds=30)
STALENESS = timedelta(minutes=5)
COEFFS = Coefficients()


def twin(**kw: object) -> TwinView:
    base: dict[str, object] = {"node_name": "n", "last_updated": FRESH}
    base.update(kw)
    return TwinView(**base)  # type: ignore[arg-type]


CALM = ClusterContext()


def score(t: TwinView | None, cls: str = "performance", ctx: ClusterContext = CALM,
          hw: HardwareInfo | None = None, demand: PodDemand | None = None) -> tuple[int, float]:
    b = score_node(t, marginal_watts(demand, hw, cls, COEFFS), cls, ctx, now=NOW, staleness=STALENESS)
    return b.score, b.score_100


# The Go original's scoreNode vectors (0..100), and the 0..10 score kube-scheduler gets from us.
@pytest.mark.parametrize(
    ("view", "s10", "s100"),
    [
        (None, 5, 50.0),
        (twin(last_updated=NOW - timedelta(minutes=6)), 5, 50.0),
        (twin(last_updated=None, headroom_score=100.0), 5, 50.0),
        (twin(headroom_score=100.0, cooling_stress_score=0.0), 9, 85.0),
        (twin(headroom_score=0.0, cooling_stress_score=100.0), 0, 0.0),
        (twin(has_power_measurement=True, measured_power_w=300, capped_power_w=1000, cooling_stress_score=20.0), 6, 61.0),
        (twin(headroom_score=80.0, cooling_stress_score=10.0), 7, 69.5),
        (twin(has_power_measurement=True, measured_power_w=330, capped_power_w=660, cooling_stress_score=0.0), 5, 50.0),
        # Over budget: the headroom is negative and the score clamps at 0.
        (twin(has_power_measurement=True, measured_power_w=2000, capped_power_w=1000, cooling_stress_score=50.0), 0, 0.0),
    ],
)
def test_score_vectors(view: TwinView | None, s10: int, s100: float) -> None:
    got10, got100 = score(view)
    assert got100 == pytest.approx(s100)
    assert got10 == s10
    assert 0 <= got10 <= 10


@pytest.mark.parametrize(("s100", "s10"), [(0, 0), (4.9, 0), (5, 1), (49.9, 5), (50, 5), (94.9, 9), (95, 10), (100, 10), (130, 10), (-5, 0)])
def test_extender_score_is_0_to_10_rounded_half_up(s100: float, s10: int) -> None:
    assert to_extender_score(s100) == s10


def test_perf_pressure_averages_fresh_performance_twins_only() -> None:
    ctx = cluster_context(
        [twin(schedulable_class="performance", headroom_score=40.0),
         twin(schedulable_class="performance", headroom_score=20.0),
         twin(schedulable_class="eco", headroom_score=0.0),
         twin(schedulable_class="performance", headroom_score=0.0, last_updated=NOW - timedelta(hours=1))],
        NOW, STALENESS,
    )
    assert ctx.perf_pressure == pytest.approx(70.0)


def test_falling_power_is_rewarded_and_rising_power_penalised() -> None:
    base = {"headroom_score": 50.0, "cooling_stress_score": 0.0, "has_power_measurement": True}
    rising = score_node(twin(power_trend_w_per_min=120.0, **base), 0.0, "performance", ClusterContext(),
                        now=NOW, staleness=STALENESS)
    falling = score_node(twin(power_trend_w_per_min=-120.0, **base), 0.0, "performance", ClusterContext(),
                         now=NOW, staleness=STALENESS)
    assert (rising.trend_bonus, falling.trend_bonus) == (-20.0, 20.0)
    assert falling.score > rising.score
    # In a busy cluster (|sum of trends| > 500 W/min) the same slope counts three times as much, capped at 25.
    busy = score_node(twin(power_trend_w_per_min=-40.0, **base), 0.0, "performance", ClusterContext(0, 600),
                      now=NOW, staleness=STALENESS)
    assert busy.trend_bonus == 20.0


def test_standard_pod_prefers_eco_without_pressure_and_relieves_performance_under_pressure() -> None:
    eco = twin(schedulable_class="eco", headroom_score=60.0, cooling_stress_score=20.0)
    perf = twin(schedulable_class="performance", headroom_score=60.0, cooling_stress_score=20.0)
    assert score(eco, "standard")[1] == pytest.approx(score(perf, "standard")[1] + 10)
    pressured = ClusterContext(perf_pressure=80.0)
    assert score(perf, "standard", pressured)[1] == pytest.approx(score(perf, "performance")[1] - 24)
    assert score(eco, "standard", pressured)[0] > score(perf, "standard", pressured)[0]
    # Performance pods get neither adjustment.
    assert score(eco, "performance")[1] == score(perf, "performance", pressured)[1]


def test_heavier_pod_lowers_the_score_of_a_measured_node_by_its_marginal_watts() -> None:
    hw = HardwareInfo(cpu_max_watts_total=700, cpu_total_cores=64, gpu_present=True, gpu_count=4, gpu_max_watts_per_gpu=400)
    t = twin(has_power_measurement=True, measured_power_w=600, capped_power_w=2000, cooling_stress_score=10.0)
    light = score_node(t, marginal_watts(PodDemand(1, 0, 0), hw, "performance", COEFFS), "performance", ClusterContext(),
                       now=NOW, staleness=STALENESS)
    heavy = score_node(t, marginal_watts(PodDemand(8, 0, 4, "nvidia"), hw, "performance", COEFFS), "performance",
                       ClusterContext(), now=NOW, staleness=STALENESS)
    assert heavy.marginal_w == pytest.approx(700 * 0.7 * 8 / 64 + 4 * 400 * 0.85)
    assert heavy.headroom == pytest.approx((2000 - 600 - heavy.marginal_w) / 2000 * 100)
    assert heavy.score < light.score


@pytest.mark.parametrize(
    ("cls", "view", "reason"),
    [
        ("performance", twin(schedulable_class="eco"), REASON_ECO),
        ("performance", twin(schedulable_class="draining"), REASON_DRAINING),
        ("performance", twin(schedulable_class="performance", draining=True), REASON_DRAINING),
        ("performance", twin(schedulable_class="performance"), None),
        ("performance", twin(schedulable_class="unknown"), None),
        ("performance", None, None),
        ("performance", twin(schedulable_class="eco", last_updated=NOW - timedelta(minutes=10)), None),
        ("standard", twin(schedulable_class="eco"), None),
        ("standard", twin(schedulable_class="draining"), None),
        ("eco", twin(schedulable_class="eco"), None),
    ],
)
def test_filter_rules(cls: str, view: TwinView | None, reason: str | None) -> None:
    assert rejection_reason(cls, view, now=NOW, staleness=STALENESS) == reason


def test_neutral_score_is_the_middle_of_the_range() -> None:
    assert NEUTRAL_SCORE == 5


def test_work_aware_placement_sends_memory_bound_work_to_eco_and_compute_bound_to_performance() -> None:
    eco = twin(schedulable_class="eco", headroom_score=50.0, policy_name="work-aware-v1")
    perf = twin(schedulable_class="performance", headroom_score=50.0, policy_name="work-aware-v1")

    def s100(t: TwinView, kind: str = "", eco_class: bool = False) -> float:
        return score_node(t, 0.0, "standard", CALM, now=NOW, staleness=STALENESS, workload_kind=kind,
                          eco_class=eco_class).score_100

    assert s100(eco, "gpu-inference") == s100(perf, "gpu-inference") + 10.0
    assert s100(eco, "cpu-memory") - s100(eco) == 10.0
    assert s100(perf, "cpu-compute") == s100(eco, "cpu-compute") + 10.0
    assert s100(eco, "gpu-training") == s100(perf, "gpu-training")  # neither class suits it better
    assert s100(eco, eco_class=True) == s100(perf, eco_class=True) + 10.0
    # Under other policies the original's +10 for any standard pod on an eco node still holds.
    legacy = twin(schedulable_class="eco", headroom_score=50.0)
    assert s100(legacy, "cpu-compute") == s100(twin(schedulable_class="performance", headroom_score=50.0)) + 10.0


# --- power states (issue 20) ------------------------------------------------------------------------------

@pytest.mark.parametrize("state", ["suspending", "off", "failed", "resuming"])
def test_a_node_not_powered_on_scores_lowest_and_leaves_the_aggregates(state: str) -> None:
    best = twin(headroom_score=100.0, cooling_stress_score=0.0, power_state=state, schedulable_class="performance")
    assert score(best) == (0, 0.0)
    assert score(best, cls="standard") == (0, 0.0)
    assert cluster_context([best], NOW, STALENESS) == ClusterContext()


def test_a_resuming_node_ranks_after_every_powered_one() -> None:
    powered = [twin(headroom_score=h, cooling_stress_score=c) for h in (0.0, 10.0, 50.0) for c in (0.0, 100.0)]
    resuming = twin(headroom_score=100.0, cooling_stress_score=0.0, power_state="resuming")
    assert all(score(resuming)[0] <= score(p)[0] for p in powered)


def test_a_stale_twin_stays_neutral_whatever_its_power_state_says() -> None:
    assert score(twin(power_state="off", last_updated=NOW - timedelta(minutes=6))) == (NEUTRAL_SCORE, 50.0)
