import re
from pathlib import Path
from typing import Any

from joulie_agent.api import NO_COUNTERS_REASON
from joulie_hwprofiles.schema import builtin_profile
from joulie_simcluster.smoke import checks, facility, telemetryauth

README = Path("simulated-cluster/README.md")


def twin(profile: str = "performance", cpu_pct: float | None = 80, gpu_pct: float | None = 80,
         measured: float | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": "n", "profile": profile}
    if cpu_pct is not None:
        spec["cpu"] = {"packagePowerCapPctOfMax": cpu_pct}
    if gpu_pct is not None:
        spec["gpu"] = {"powerCap": {"scope": "perGpu", "capPctOfMax": gpu_pct}}
    status: dict[str, Any] = {}
    if measured is not None:
        status["powerMeasurement"] = {"source": "prometheus", "measuredNodePowerW": measured}
    return {"spec": spec, "status": status}


HW = {"status": {"cpu": {"controlAvailable": True, "capRange": {"minWattsPerSocket": 70, "maxWattsPerSocket": 250}},
                 "gpu": {"controlAvailable": True, "capRangePerGpu": {"minWatts": 200, "maxWatts": 400}}}}


def truth(pkg_caps: list[float | None], gpu_caps: list[float], pkg_w: float = 150, gpu_w: float = 300, host_w: float = 1000) -> dict[str, Any]:
    return {
        "host": {"powerW": host_w},
        "packages": [{"socket": i, "powerW": pkg_w} for i in range(len(pkg_caps))],
        "caps": {"cpuPackageW": pkg_caps, "hsmpW": [], "gpuW": gpu_caps},
        "gpus": [{"index": i, "capW": c, "powerW": min(gpu_w, c)} for i, c in enumerate(gpu_caps)],
    }


def test_caps_in_the_files_are_compared_with_the_spec_in_watts() -> None:
    ok = checks.caps_match("S04", {"n": twin(gpu_pct=None)}, {"n": HW}, {"n": truth([200.0, 200.0], [])}, want_pct=80)
    assert ok.status == "pass" and ok.observed == "2 caps match NodeTwin.spec"
    bad = checks.caps_match("S04", {"n": twin(gpu_pct=None)}, {"n": HW}, {"n": truth([200.0, 250.0], [])}, want_pct=80)
    assert bad.status == "fail" and bad.observed == "n: package 1 cap 250.0 W ≠ 200.0 W"
    # A GPU node keeps its CPU at 100 % (the controller's rule); its GPUs carry the asked pct.
    gpu = checks.caps_match("S04", {"n": twin(cpu_pct=100)}, {"n": HW}, {"n": truth([250.0, 250.0], [320.0])}, want_pct=80)
    assert gpu.status == "pass" and gpu.observed == "3 caps match NodeTwin.spec"
    gpu_cpu80 = checks.caps_match("S04", {"n": twin()}, {"n": HW}, {"n": truth([200.0, 200.0], [320.0])}, want_pct=80)
    assert gpu_cpu80.status == "fail" and "spec cpu 80 % ≠ 100 %" in gpu_cpu80.observed
    stale_spec = checks.caps_match("S09", {"n": twin(cpu_pct=80, gpu_pct=None)}, {"n": HW}, {"n": truth([125.0], [])}, want_pct=50)
    assert stale_spec.status == "fail" and "spec cpu 80 % ≠ 50 %" in stale_spec.observed


def test_a_cpu_range_from_the_catalog_asks_no_watts_in_the_files() -> None:
    hw = {"status": {"cpu": {"controlAvailable": True, "capRange": {"minWattsPerSocket": 320, "maxWattsPerSocket": 400}},
                     "inventoryResolution": {"catalogFacts": ["cpu.capRange"]}}}
    assert checks.expected_caps(twin(gpu_pct=None), hw) == (None, None)
    assert checks.expected_caps(twin(gpu_pct=None), {"status": {**hw["status"], "inventoryResolution": {}}})[0] == 320.0


def test_a_check_that_checked_nothing_fails() -> None:
    no_ctl = {"status": {"cpu": {"controlAvailable": False}}}
    r = checks.caps_match("S04", {"n": twin(gpu_pct=None)}, {"n": no_ctl}, {"n": truth([None], [])})
    assert r.status == "fail" and "no cap was checked" in r.observed


def test_power_over_a_cap_fails_with_the_numbers() -> None:
    assert checks.power_honours_caps("S05", {"n": truth([200.0], [320.0], pkg_w=201.5)}).status == "pass"
    r = checks.power_honours_caps("S05", {"n": truth([200.0], [], pkg_w=210.0)})
    assert r.status == "fail" and r.observed == "n: package 0 draws 210.0 W over its 200.0 W cap"


def test_measured_power_within_three_percent_never_closer_than_one_watt() -> None:
    assert checks.measurement_error(1029, 1000)[1] and not checks.measurement_error(1031, 1000)[1]
    assert checks.measurement_error(20.9, 20)[1], "0.9 W off a 20 W node is within the 1 W floor"
    r = checks.measured_power({"a": twin(measured=1020), "b": twin(measured=None)}, {"a": truth([], []), "b": truth([], [])})
    assert r.status == "fail" and "b: no measuredNodePowerW" in r.observed
    r = checks.measured_power({"a": twin(measured=1020)}, {"a": truth([], [])})
    assert r.status == "pass" and r.value is not None and abs(r.value - 2.0) < 1e-9


def test_without_host_power_the_truth_is_the_components_sum() -> None:
    t = {**truth([None, None], [700.0] * 2, pkg_w=150, gpu_w=300), "zones": [
        {"name": "dram", "path": "intel-rapl:0:0", "powerW": 20.0, "energyJ": 1.0},
        {"name": "package-0", "path": "intel-rapl:0", "powerW": 150.0, "energyJ": 1.0}]}
    for p in t["packages"] + t["gpus"]:
        p["energyJ"] = 1.0
    assert checks.true_power(t, "components") == 150 * 2 + 20 + 300 * 2
    assert checks.true_power(t, "host") == 1000
    r = checks.measured_power({"a": twin(measured=925)}, {"a": t}, "components")
    assert r.status == "pass" and "truth: components power" in r.observed
    assert checks.measured_power({"a": twin(measured=925)}, {"a": t}).status == "fail", "925 W is 7.5 % under the host's 1000 W"


def _nhw(*warnings: str) -> dict[str, Any]:
    return {"status": {"quality": {"overall": "exact", "warnings": list(warnings)}}}


NO_COUNTERS = NO_COUNTERS_REASON


def test_agent_mode_skips_the_nodes_no_agent_can_measure_and_names_why() -> None:
    hardware = {"xeon-0": _nhw(), "vm-0": _nhw("cpuinfo: odd", NO_COUNTERS)}
    skip = checks.unmeasurable_nodes(["xeon-0", "vm-0", "arm64-managed-0"], hardware)
    assert skip == {"vm-0": NO_COUNTERS, "arm64-managed-0": checks.NO_NODEHARDWARE}
    twins = {"xeon-0": twin(measured=1010), "vm-0": twin(), "arm64-managed-0": twin()}
    truths = {n: truth([], []) for n in twins}
    r = checks.measured_power(twins, truths, "host", skip)
    assert r.status == "pass" and r.value is not None and abs(r.value - 1.0) < 1e-9
    assert r.observed == ("1 Nodes, worst error 1.00 % (truth: host power); skipped 2 unmeasurable: "
                          f"arm64-managed-0 ({checks.NO_NODEHARDWARE}); vm-0 ({NO_COUNTERS})")


def test_agent_mode_fails_a_measurable_node_without_data_or_off_the_truth() -> None:
    skip = checks.unmeasurable_nodes(["xeon-0", "epyc-0"], {"xeon-0": _nhw(), "epyc-0": _nhw()})
    assert skip == {}
    r = checks.measured_power({"xeon-0": twin(measured=1010), "epyc-0": twin()}, {n: truth([], []) for n in ("xeon-0", "epyc-0")},
                              "host", skip)
    assert r.status == "fail" and r.observed.startswith("epyc-0: no measuredNodePowerW")
    r = checks.measured_power({"xeon-0": twin(measured=1100)}, {"xeon-0": truth([], [])}, "host", skip)
    assert r.status == "fail" and "xeon-0: measured 1100.0 W, truth 1000.0 W (10.0 %)" in r.observed


def test_agent_mode_fails_a_node_said_unmeasurable_that_has_a_measurement_and_a_run_that_measured_nothing() -> None:
    skip = {"vm-0": NO_COUNTERS}
    r = checks.measured_power({"vm-0": twin(measured=90)}, {"vm-0": truth([], [])}, "host", skip)
    assert r.status == "fail" and r.observed.startswith("vm-0: said unmeasurable (power export: no energy counter")
    r = checks.measured_power({"vm-0": twin()}, {"vm-0": truth([], [])}, "host", skip)
    assert r.status == "fail" and r.observed == "no Node could be measured: nothing was checked"


def test_the_no_counter_reason_is_the_agents_own_string() -> None:
    hardware = {"vm-0": _nhw(NO_COUNTERS_REASON)}
    assert checks.unmeasurable_nodes(["vm-0"], hardware) == {"vm-0": NO_COUNTERS_REASON}
    assert NO_COUNTERS_REASON.startswith("power export: no energy counter")


def test_performance_pods_on_eco_nodes_fail_and_a_check_without_eco_nodes_cannot_pass() -> None:
    pod = {"metadata": {"name": "p", "annotations": {"joulie.io/workload-class": "performance"}}, "spec": {"nodeName": "e"}}
    r = checks.performance_not_on_eco([pod], {"e": twin("eco")})
    assert r.status == "fail" and r.observed == "p on e (eco)"
    r = checks.performance_not_on_eco([pod], {"e": twin("performance")})
    assert r.status == "fail" and "could not fail" in r.observed
    r = checks.performance_not_on_eco([pod], {"e": twin("performance"), "x": twin("eco")})
    assert r.status == "pass"


def test_unclassified_pods_on_fake_nodes_are_named() -> None:
    pods: list[dict[str, Any]] = [{"metadata": {"name": "ok", "namespace": "d", "annotations": {"joulie.io/workload-class": "standard"}}, "spec": {"nodeName": "f"}},
            {"metadata": {"name": "stray", "namespace": "d"}, "spec": {"nodeName": "f"}},
            {"metadata": {"name": "infra", "namespace": "d"}, "spec": {"nodeName": "real"}}]
    r = checks.only_classified_on_fake(pods, ["f"])
    assert r.status == "fail" and r.observed == "d/stray on f"


def test_the_extender_must_have_been_called_for_every_pod() -> None:
    pods = [{"metadata": {"name": f"p{i}"}, "spec": {"nodeName": "n"}} for i in range(3)]
    assert checks.extender_scored({"filter": 1, "prioritize": 1}, {"filter": 4, "prioritize": 4}, pods).status == "pass"
    r = checks.extender_scored({"filter": 0, "prioritize": 0}, {"filter": 0, "prioritize": 0}, pods)
    assert r.status == "fail" and "prioritize requests grew by 0 for 3 pods" in r.observed


def test_a_restarted_agent_fails_the_restart_check() -> None:
    caps = checks.Assertion("S09", "pass", "", "")
    assert checks.restart_survived({"agent-a": 10}, {"agent-a": 10}, {"agent-a": True}, caps, 2.0).status == "pass"
    r = checks.restart_survived({"agent-a": 10}, {"agent-a": 11}, {"agent-a": True}, caps, 2.0)
    assert r.status == "fail" and r.observed == "agent-a: pid 10 → 11"


def test_nodehardware_is_compared_with_the_profile() -> None:
    p = builtin_profile("nvidia-h100-sxm-8gpu")
    good: dict[str, Any] = {"status": {"cpu": {"sockets": p.cpu.sockets, "totalCores": p.cpu.sockets * p.cpu.cores_per_socket,
                               "controlAvailable": checks.profile_can_cap_cpu(p)},
                       "gpu": {"present": True, "vendor": "nvidia", "count": 8,
                               "capRangePerGpu": {"minWatts": p.gpus.min_w if p.gpus else 0, "maxWatts": p.gpus.max_w if p.gpus else 0}}}}
    assert checks.nodehardware_matches({"h": p}, {"h": good}).status == "pass"
    good["status"]["gpu"]["count"] = 4
    r = checks.nodehardware_matches({"h": p}, {"h": good})
    assert r.status == "fail" and r.observed == "h: gpu.count 4 ≠ 8"


def test_the_readme_lists_every_check() -> None:
    text = README.read_text()
    rows = dict(re.findall(r"^\| (S\d\d) \| `[a-z-]+` \| (.+) \|$", text, re.M))
    assert rows == {k: v[1] for k, v in checks.CHECKS.items()}, "regenerate the table from joulie_simcluster.smoke.checks.CHECKS"


def _twin(stress: float, measured: float) -> dict[str, object]:
    return {"status": {"predictedCoolingStressScore": stress, "powerMeasurement": {"measuredNodePowerW": measured}}}


def test_s13_passes_when_cooling_stress_follows_the_true_inlet_and_fails_naming_what_did_not_move() -> None:
    from joulie_controller.api import ambient_multiplier

    before = {"ambientC": 22.0, "pue": 1.20, "itW": 5000.0, "coolingW": 1000.0, "nodeInletC": {"a": 22.0, "b": 23.0}}
    after = {"ambientC": 32.0, "pue": 1.30, "itW": 5000.0, "coolingW": 1500.0, "nodeInletC": {"a": 32.0, "b": 33.0}}
    prom = {"ambient": 32.0, "itPower": 5010.0, "coolingPower": 1490.0}
    k = {n: ambient_multiplier(after["nodeInletC"][n]) / ambient_multiplier(before["nodeInletC"][n]) for n in "ab"}  # type: ignore[index]
    before["nodeInletC"]["d"] = after["nodeInletC"]["d"] = 22.0  # type: ignore[index]
    # c: clamped at 100; d: no TDP known, the neutral score (both say nothing about the ambient).
    t0 = {"a": _twin(40.0, 400.0), "b": _twin(50.0, 1000.0), "c": _twin(100.0, 900.0), "d": _twin(50.0, 600.0)}
    # Power moved between the readings (b: 1000 -> 900 W): the stress per watt still follows the inlet.
    t1 = {"a": _twin(40.0 * k["a"], 400.0), "b": _twin(50.0 * k["b"] * 0.9, 900.0), "c": _twin(100.0, 900.0),
          "d": _twin(50.0, 590.0)}
    ok = facility.facility_ambient_step(10.0, before, after, prom, t0, t1)
    assert ok.status == "pass", ok.observed
    assert "2 NodeTwins' cooling stress per W" in ok.observed and "1 at the neutral score" in ok.observed
    assert ok.value is not None and ok.value < 1e-9

    stuck = facility.facility_ambient_step(10.0, before, after, prom, t0, t0)  # the controller never saw the step
    assert stuck.status == "fail" and "a: cooling stress per W x1.000; its true inlet 22.0 -> 32.0 °C says x" in stuck.observed
    stale = facility.facility_ambient_step(10.0, before, after, {**prom, "ambient": 22.0, "coolingPower": None}, t0, t1)
    assert stale.status == "fail"
    assert "Prometheus facility ambient 22.00 vs truth 32.00" in stale.observed and "Prometheus has no facility coolingPower" in stale.observed
    flat = facility.facility_ambient_step(10.0, before, {**after, "pue": 1.2}, prom, t0, t1)
    assert flat.status == "fail" and "facility PUE did not rise: 1.2 -> 1.2" in flat.observed
    off = facility.facility_ambient_step(10.0, None, None, prom, t0, t1)
    assert off.status == "fail" and "no facility" in off.observed



def test_s17_passes_only_when_every_uncertified_push_is_refused_and_the_control_is_stored() -> None:
    refused = {"tls": "SSLError", "http": "export failed (refused by the receiver)"}
    ok = telemetryauth.telemetry_authenticated(True, True, refused, [])
    assert ok.status == "pass" and "tls: SSLError" in ok.observed
    accepted = telemetryauth.telemetry_authenticated(True, True, {**refused, "http": ""}, ["http"])
    assert accepted.status == "fail"
    assert "over http was accepted" in accepted.observed and "over http was stored" in accepted.observed
    # Nothing stored at all, not even with a certificate: the probe could not have failed, so it fails.
    blind = telemetryauth.telemetry_authenticated(True, False, refused, [])
    assert blind.status == "fail" and "proves nothing" in blind.observed
    assert telemetryauth.telemetry_authenticated(False, False, {}, []).status == "skipped"
