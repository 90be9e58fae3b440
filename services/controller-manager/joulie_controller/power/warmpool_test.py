"""The warm pool and wear levelling as an operator sees them: nodes resumed ahead of the demand, idle
nodes kept on for it, a floor of 0 for a pool with no demand, power cycles capped per day."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import pytest

from joulie_controller.model.fsm import PodInfo
from joulie_controller.power.forecast import PoolForecast
from joulie_controller.power.history import PowerHistory
from joulie_controller.power.powerstate import BmcReading, PowerAction, PowerDecision, PowerInput, PowerNode, decide
from joulie_controller.power.powerstate_test import T0, actions, node, pn, pod
from joulie_controller.power.warmpool import ANY_POOL, WarmNeed, warm_need
from joulie_controller.settings import ReconcileSettings, Settings, SuspendSettings

FORECAST = Settings(
    reconcile=ReconcileSettings(interval_s=60.0),
    suspend=SuspendSettings(
        power_policy="forecast_suspend_v1",
        min_powered=0,
        max_concurrent=4,
        warm_wait_target_s=60.0,
        warm_quantile_pct=95.0,
    ),
)
CPU = {"joulie.io/pool": "cpu"}
GPU = {"joulie.io/pool": "gpu"}
IDLE = T0 - timedelta(minutes=11)


def fc(per_min: float, cores: float = 8.0, gpus: float = 0.0, pool: str = "cpu") -> PoolForecast:
    return PoolForecast(pool, per_min / 60.0, cores, gpus, "recent", per_min / 60.0)


def run(
    nodes: Sequence[PowerNode],
    pods: Sequence[PodInfo] = (),
    *,
    warm: Mapping[str, WarmNeed] | None = None,
    idle: Mapping[str, datetime] | None = None,
    cycles: Mapping[str, int] | None = None,
    recent: Mapping[str, int] | None = None,
    s: Settings = FORECAST,
) -> PowerDecision:
    readings = {n.info.name: BmcReading("on" if n.status.state in ("on", "suspending") else "off") for n in nodes}
    inp = PowerInput(
        T0,
        nodes,
        pods,
        readings,
        dict(idle or {}),
        warm=dict(warm or {}),
        recent=dict(recent or {}),
        cycles=dict(cycles or {}),
    )
    return decide(inp, s)


def test_the_need_covers_the_forecast_over_a_boot_less_the_target_at_the_quantile() -> None:
    # 1 Pod a minute, boot 300 s, reconcile 60 s, target 60 s: a 300 s window, mean 5 arrivals, p95 = 9.
    cores = warm_need(ANY_POOL, fc(1.0, cores=8.0), 300.0, FORECAST)
    assert (cores.arrivals, cores.cores, cores.gpus, cores.window_s) == (9, 72.0, 0, 300.0)
    assert "9 arrivals in 300 s" in cores.text()
    # GPU Pods: the GPUs of their pool (their cores are the GPU server's, not a CPU server's).
    gpus = warm_need("gpu", fc(1.0, cores=8.0, gpus=0.5, pool="gpu"), 300.0, FORECAST)
    assert (gpus.arrivals, gpus.cores, gpus.gpus) == (9, 0.0, 5)
    # A boot that fits in the target needs no warm capacity, whatever the demand.
    assert warm_need("cpu", fc(10.0), 0.0, FORECAST).empty
    # No arrivals seen: nothing to keep warm (the floor alone holds).
    assert warm_need("gpu", None, 300.0, FORECAST).empty


def test_a_pool_short_of_its_need_has_an_off_node_resumed_with_no_pod_waiting() -> None:
    nodes = [pn(node("a", labels=CPU)), pn(node("b", labels=CPU), "off", desired="off")]
    busy = [pod("j1", "a", cpu=30.0)]
    need = warm_need(ANY_POOL, fc(1.0, cores=4.0), 300.0, FORECAST)  # 36 cores; a has 2 free
    d = run(nodes, busy, warm={ANY_POOL: need})
    assert actions(d) == {("b", "on")}
    assert d.status["b"].state == "resuming" and "resumed ahead of demand (forecast)" in d.status["b"].reason
    # The reactive policy (no warm need) leaves b off until a Pod waits.
    assert (
        run(nodes, busy, s=Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=0))).actions
        == []
    )


def test_the_longest_off_node_is_woken_first() -> None:
    long_off = pn(node("z", labels=CPU), "off", since=T0 - timedelta(hours=5), desired="off")
    short_off = pn(node("a", labels=CPU), "off", since=T0 - timedelta(minutes=20), desired="off")
    need = warm_need(ANY_POOL, fc(0.2, cores=4.0), 300.0, FORECAST)
    assert actions(run([short_off, long_off], warm={ANY_POOL: need})) == {("z", "on")}
    # Reactive wake for a Pending Pod too: same hardware, the longest off goes first.
    reactive = Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=0))
    assert actions(run([short_off, long_off], [pod("p", cpu=4.0)], s=reactive)) == {("z", "on")}


def test_an_idle_node_the_warm_pool_needs_stays_on_and_says_why() -> None:
    nodes = [pn(node("a", labels=CPU)), pn(node("b", labels=CPU))]
    need = warm_need(ANY_POOL, fc(0.3, cores=8.0), 300.0, FORECAST)  # p95 of 1.5 arrivals: 4 x 8 = 32 cores
    d = run(nodes, warm={ANY_POOL: need}, idle={"a": IDLE, "b": IDLE})
    assert len(d.actions) == 1 and d.actions[0].action == "cordon"  # 64 free, one node of 32 may go
    kept = next(n for n in ("a", "b") if d.status[n].state == "on")
    assert d.status[kept].reason.startswith("kept warm (forecast): pool * keeps 32 cores")
    # Twice the demand: neither goes.
    more = warm_need(ANY_POOL, fc(0.6, cores=8.0), 300.0, FORECAST)
    assert run(nodes, warm={ANY_POOL: more}, idle={"a": IDLE, "b": IDLE}).actions == []


def test_a_gpu_pool_with_no_gpu_demand_sleeps_to_a_floor_of_zero_and_a_cpu_server_stays_warm() -> None:
    nodes = [pn(node("g", gpus=8, labels=GPU), rank_w=3000.0), pn(node("c", labels=CPU), rank_w=700.0)]
    # No GPU Pod seen; CPU Pods for 24 cores (p95 of 1 arrival in the window: 3 x 8): one server's worth.
    warm = {"gpu": warm_need("gpu", None, 300.0, FORECAST), ANY_POOL: warm_need(ANY_POOL, fc(0.2), 300.0, FORECAST)}
    d = run(nodes, warm=warm, idle={"g": IDLE, "c": IDLE})
    assert ("g", "cordon") in actions(d) and ("c", "cordon") not in actions(d)


def test_a_node_at_its_power_cycle_cap_is_not_suspended() -> None:
    capped = Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=0, max_cycles_per_day=3))
    nodes = [pn(node("a")), pn(node("b"))]
    d = run(nodes, idle={"a": IDLE, "b": IDLE}, cycles={"a": 3, "b": 1}, s=capped)
    assert actions(d) == {("b", "cordon")}
    assert "MAX_POWER_CYCLES_PER_DAY=3" in d.status["a"].reason and "0 cycles left" in d.status["a"].reason
    assert "1 power cycles left today" in d.status["b"].reason


def test_the_history_times_resumes_records_bound_arrivals_once_and_forgets_old_power_offs() -> None:
    s = SuspendSettings(forecast_day_s=3600.0)
    hist = PowerHistory()
    pools = {"a": "cpu", "g": "gpu"}
    hist.observe_pods(T0, [pod("p1"), pod("p2", "g", gpu=2)], pools, s)
    hist.observe_pods(T0 + timedelta(minutes=1), [pod("p1", "a", cpu=3.0), pod("p2", "g", gpu=2)], pools, s)
    assert [(a.pool, a.at - T0, a.gpus) for a in hist.arrivals] == [
        ("gpu", timedelta(0), 2),
        (ANY_POOL, timedelta(0), 0),
    ]  # p1 arrived when first seen, pending
    before = {"a": pn(node("a"), "resuming", since=T0).status}
    after = PowerDecision([], {"a": pn(node("a"), "on").status}, {}, {}, [])
    hist.observe_power(T0 + timedelta(seconds=240), before, after, pools, s)
    assert hist.boot_of("cpu", s) == pytest.approx(240.0) and hist.boot_of("gpu", s) == s.boot_estimate_s
    off = PowerDecision([PowerAction("a", "off", "idle")], {}, {}, {}, [])
    hist.observe_power(T0, {}, off, pools, s)
    assert hist.cycles() == {"a": 1}
    hist.observe_power(T0 + timedelta(hours=2), {}, PowerDecision([], {}, {}, {}, []), pools, s)
    assert hist.cycles() == {}


def test_suspend_and_resume_rates_bound_the_nodes_per_minute() -> None:
    rated = Settings(
        suspend=SuspendSettings(
            power_policy="idle_suspend_v1",
            min_powered=0,
            max_concurrent=10,
            suspend_rate_per_min=2,
            resume_rate_per_min=1,
        )
    )
    idle = [pn(node(n)) for n in "abcd"]
    d = run(idle, idle={n: IDLE for n in "abcd"}, s=rated)
    assert [a.action for a in d.actions] == ["cordon", "cordon"]
    deferred = [n for n in "abcd" if d.status[n].state == "on"]
    assert all("SUSPEND_RATE=2/min reached (rate limit)" in d.status[n].reason for n in deferred[:1])
    # Two cordons already this minute: none more.
    assert run(idle, idle={n: IDLE for n in "abcd"}, recent={"cordon": 2}, s=rated).actions == []
    off = [pn(node(n), "off", desired="off") for n in "abc"]
    waiting = [pod(f"p{i}", cpu=30.0) for i in range(3)]
    assert actions(run(off, waiting, s=rated)) == {("a", "on")}  # three Pods, one power-on a minute
    assert run(off, waiting, recent={"on": 1}, s=rated).actions == []


def test_rates_are_counted_over_the_last_minute() -> None:
    hist = PowerHistory()
    two = PowerDecision([PowerAction("a", "cordon", ""), PowerAction("b", "on", "")], {}, {}, {}, [])
    hist.observe_power(T0, {}, two, {}, SuspendSettings())
    assert hist.recent(T0 + timedelta(seconds=30)) == {"cordon": 1, "on": 1}
    assert hist.recent(T0 + timedelta(seconds=60)) == {}


def test_every_reason_the_policy_writes_names_a_cause_kubectl_joulie_shows() -> None:
    """kubectl joulie power sorts status.power.reason by joulie_api.powerreason: a reason reworded here
    that no longer names its cause would show as '-' there."""
    from joulie_api import powerreason

    cpu_nodes = [pn(node("a", labels=CPU)), pn(node("b", labels=CPU), "off", desired="off")]
    ahead = run(
        cpu_nodes, [pod("j1", "a", cpu=30.0)], warm={ANY_POOL: warm_need(ANY_POOL, fc(1.0, 4.0), 300.0, FORECAST)}
    )
    two = [pn(node("a", labels=CPU)), pn(node("b", labels=CPU))]
    kept = run(two, warm={ANY_POOL: warm_need(ANY_POOL, fc(0.3, 8.0), 300.0, FORECAST)}, idle={"a": IDLE, "b": IDLE})
    capped = run(
        two,
        idle={"a": IDLE, "b": IDLE},
        cycles={"a": 4, "b": 4},
        s=Settings(suspend=SuspendSettings(power_policy="forecast_suspend_v1", min_powered=0, max_cycles_per_day=4)),
    )
    idle = run(
        two,
        idle={"a": IDLE, "b": IDLE},
        s=Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=0, max_cycles_per_day=4)),
    )
    reactive = Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=0))
    woken = run([pn(node("z", labels=CPU), "off", desired="off")], [pod("p", cpu=4.0)], s=reactive)
    cases = [
        (ahead.status["b"].reason, "forecast"),
        (next(st.reason for st in kept.status.values() if st.state == "on"), "forecast"),
        (capped.status["a"].reason, "power cycles"),
        (idle.status["a"].reason, "idle"),
        (woken.status["z"].reason, "Pending Pods"),
    ]
    for reason, cause in cases:
        assert powerreason.cause(reason) == cause, reason
    assert powerreason.cycles_left(idle.status["a"].reason) == 3
    assert powerreason.cycles_left(capped.status["a"].reason) == 0
    assert powerreason.warm_target(ahead.status["b"].reason) is not None
