"""A scenario's conditions on one look at the cluster, and the timeline row of the same look."""

from __future__ import annotations

from typing import Any

from joulie_simcluster.scenario.conditions import TIMELINE_FIELDS, Observation, evaluate, timeline_row
from joulie_simcluster.scenario.schema import Condition


def cond(raw: dict[str, Any]) -> Condition:
    return Condition.model_validate(raw)


def twin(profile: str, cpu_pct: float | None, power_w: float, stress: float) -> dict[str, Any]:
    spec: dict[str, Any] = {"profile": profile, "policy": {"name": "work-aware-v1"}}
    if cpu_pct is not None:
        spec["cpu"] = {"packagePowerCapPctOfMax": cpu_pct}
    return {"spec": spec, "status": {"predictedCoolingStressScore": stress,
                                     "powerMeasurement": {"measuredNodePowerW": power_w}}}


TWINS = {"a": twin("performance", 100, 500.0, 0.4), "b": twin("eco", 60, 300.0, 0.7), "c": twin("eco", None, 0.0, 0.2)}
TRUTH = {
    "a": {"host": {"powerW": 510.0}, "caps": {"cpuPackageW": [175.0, 175.0]}, "gpus": []},
    "b": {"host": {"powerW": 290.0}, "caps": {"cpuPackageW": [None, None], "hsmpW": [120.0, 120.0]},
          "gpus": [{"index": 0, "capW": 400.0}, {"index": 1, "capW": 400.0}]},
}
OBS = Observation(agents=["a", "b"], managed=["a", "b", "c"], twins=TWINS, truth=TRUTH,
                facility={"ambientC": 32.0, "pue": 1.31}, prometheus_power_w=805.0,
                jobs={"running": 2.0, "completed": 5.0}, health=(False, "not running: agent-b"))


def test_a_twin_field_must_hold_on_every_chosen_node_or_on_one_with_match_any() -> None:
    out = evaluate(cond({"twin": {"field": "spec.cpu.packagePowerCapPctOfMax", "min": 90}}), OBS)
    assert not out.ok and "a 100, b 60" in out.observed and "not met on b" in out.observed
    assert evaluate(cond({"twin": {"field": "spec.cpu.packagePowerCapPctOfMax", "min": 90, "match": "any"}}), OBS).ok
    assert evaluate(cond({"twin": {"field": "spec.policy.name", "equals": "work-aware-v1", "nodes": "managed"}}), OBS).ok


def test_a_missing_field_or_node_never_holds() -> None:
    out = evaluate(cond({"twin": {"field": "spec.cpu.packagePowerCapPctOfMax", "max": 100, "nodes": "managed"}}), OBS)
    assert not out.ok and "c missing" in out.observed
    out = evaluate(cond({"twin": {"field": "status.predictedCoolingStressScore", "min": 0, "nodes": ["a", "zz"]}}), OBS)
    assert not out.ok and "zz missing" in out.observed
    assert not evaluate(cond({"twin": {"field": "spec.profile", "equals": "eco", "nodes": []}}), OBS).ok


def test_cluster_power_from_each_source() -> None:
    assert evaluate(cond({"clusterPower": {"source": "prometheus", "minW": 800, "maxW": 810}}), OBS).ok
    truth = evaluate(cond({"clusterPower": {"source": "truth", "minW": 900}}), OBS)
    assert not truth.ok and truth.value == 800.0 and "cluster power (truth) 800 W" in truth.observed
    assert evaluate(cond({"clusterPower": {"source": "twins", "maxW": 800}}), OBS).ok
    assert not evaluate(cond({"clusterPower": {"minW": 1}}), Observation()).ok  # Prometheus had no answer


def test_jobs_facility_and_health() -> None:
    assert evaluate(cond({"jobs": {"state": "completed", "min": 5}}), OBS).ok
    assert not evaluate(cond({"jobs": {"state": "pending", "max": 0}}), OBS).ok  # no count is no pass
    assert evaluate(cond({"facility": {"field": "ambientC", "min": 31.9, "max": 32.1}}), OBS).ok
    nofac = evaluate(cond({"facility": {"field": "pue", "min": 1}}), Observation())
    assert not nofac.ok and "no facility" in nofac.observed
    h = evaluate(cond({"healthy": True}), OBS)
    assert not h.ok and h.observed == "not running: agent-b"


def test_caps_applied_compares_the_files_with_the_decisions() -> None:
    twins = {"a": {"spec": {"cpu": {"packagePowerCapWatts": 175.0, "packagePowerCapPctOfMax": 50}}}}
    hardware = {"a": {"status": {"cpu": {"controlAvailable": True, "sockets": 2,
                                         "capRange": {"minWattsPerSocket": 100, "maxWattsPerSocket": 350}}}}}
    ok = Observation(agents=["a"], twins=twins, hardware=hardware, truth={"a": TRUTH["a"]})
    assert evaluate(cond({"capsApplied": {}}), ok).ok
    off = Observation(agents=["a"], twins=twins, hardware=hardware,
                      truth={"a": {**TRUTH["a"], "caps": {"cpuPackageW": [350.0, 350.0]}}})
    out = evaluate(cond({"capsApplied": {}}), off)
    assert not out.ok and "cap 350.0 W ≠ 175.0 W" in out.observed


def test_the_timeline_row_sums_power_and_caps_and_averages_the_spec() -> None:
    row = timeline_row(12.34, "switch", OBS)
    assert list(row) == list(TIMELINE_FIELDS)
    assert row["t_s"] == 12.3 and row["step"] == "switch"
    assert (row["truth_power_w"], row["prometheus_power_w"], row["twins_power_w"]) == (800.0, 805.0, 800.0)
    assert (row["cpu_cap_w"], row["gpu_cap_w"]) == (590.0, 800.0)  # HSMP limits where RAPL has none
    assert row["cpu_cap_pct_mean"] == 80.0 and row["gpu_cap_pct_mean"] is None and row["eco_nodes"] == 2.0
    assert (row["jobs_running"], row["jobs_completed"], row["jobs_pending"]) == (2.0, 5.0, None)
    assert (row["ambient_c"], row["pue"]) == (32.0, 1.31)
    empty = timeline_row(0, "deploy", Observation())
    assert empty["truth_power_w"] is None and empty["cpu_cap_w"] is None and empty["eco_nodes"] is None


def test_twin_error_is_per_managed_node_with_median_and_worst() -> None:
    # a: 500 vs 510 W (1.96 %), b: 300 vs 290 W (3.45 %: off), c: no NodeHardware -> skipped as unmeasurable.
    hw: dict[str, dict[str, Any]] = {"a": {"status": {}}, "b": {"status": {}}}
    o = Observation(managed=["a", "b", "c"], twins=TWINS, truth=TRUTH, hardware=hw)
    out = evaluate(cond({"twinError": {"maxPct": 3}}), o)
    assert not out.ok and out.value is not None and abs(out.value - 3.448) < 0.01
    assert "2 Nodes measured" in out.observed and "1 unmeasurable skipped" in out.observed and "b: measured 300.0 W" in out.observed
    assert "signed median 3.448 % (measured - truth)" in out.observed  # the upper of two: b reads high
    assert evaluate(cond({"twinError": {"maxPct": 3.5}}), o).ok
    assert not evaluate(cond({"twinError": {}}), OBS).ok  # nothing measurable: nothing checked, no pass
    missing = Observation(managed=["a", "c"], twins=TWINS, truth=TRUTH, hardware={"a": {}, "c": {}})
    assert not evaluate(cond({"twinError": {}}), missing).ok  # c has an agent and no truth: not skipped


def test_tick_cost_bounds_the_median_and_the_worst_tick() -> None:
    tc = {"window": 600, "wallMs": {"median": 80.0, "p99": 300.0, "max": 1450.0}, "cpuMs": {"median": 70.0, "max": 400.0}}
    o = Observation(tick_cost=tc)
    assert evaluate(cond({"tickCost": {"medianMs": 100, "maxMs": 1000}}), o).ok  # CPU: the simulator's own work
    assert not evaluate(cond({"tickCost": {"medianMs": 100, "maxMs": 1000, "clock": "wall"}}), o).ok
    assert not evaluate(cond({"tickCost": {"medianMs": 100, "maxMs": 300}}), o).ok
    slow = evaluate(cond({"tickCost": {"medianMs": 50}}), o)
    assert not slow.ok and slow.value == 70.0 and "wall median 80 ms" in slow.observed and "cpu median 70.0" in slow.observed
    assert "no tickCost" in evaluate(cond({"tickCost": {"medianMs": 100}}), Observation()).observed
    parts = Observation(tick_cost={**tc, "cpuMsByPart": {"physics": 9.5, "files": 55.0}})
    assert evaluate(cond({"tickCost": {"medianMs": 50}}), parts).observed.endswith(
        "cpu median by part: physics 9.5 ms, files 55.0 ms")  # where a slow tick went, in the run's summary
    worst = Observation(tick_cost={**tc, "worstCpuTick": {"tick": 42, "cpuMs": 1206.0, "cpuMsByPart": {"physics": 1150.0},
                                                          "gcMs": 1100.0}})
    assert evaluate(cond({"tickCost": {"medianMs": 50}}), worst).observed.endswith(
        "; worst cpu tick #42: 1206.0 ms (physics 1150.0 ms, gc 1100.0 ms)")
