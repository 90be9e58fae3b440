import io
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from joulie_kubectl.model import node_rows, pod_rows, quantity, requests_by_node, summarize

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize(("value", "expected"), [("500m", 0.5), ("2", 2.0), ("1Gi", 2.0**30), ("1k", 1000.0), (3, 3.0),
                                                 ("junk", 0.0), (None, 0.0), (True, 0.0)])
def test_quantity(value: object, expected: float) -> None:
    assert quantity(value) == expected


def pod(name: str, node: str | None, cls: str | None = None, cpu: str = "1", phase: str = "Running") -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "namespace": "ns"}
    if cls:
        meta["annotations"] = {"joulie.io/workload-class": cls}
    return {"metadata": meta, "spec": {"nodeName": node, "containers": [{"resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase}}


def test_requests_count_only_bound_unfinished_pods() -> None:
    reqs = requests_by_node([pod("a", "n1", "performance", "2"), pod("b", "n1"), pod("c", None),
                             pod("d", "n1", phase="Succeeded")])
    assert (reqs["n1"].cpu_cores, reqs["n1"].pods, reqs["n1"].performance_pods) == (3.0, 2, 1)


def test_a_twin_without_status_is_an_unknown_stale_row() -> None:
    rows = node_rows([{"metadata": {"name": "n1"}, "spec": {"nodeName": "N1", "profile": "eco"}}], [], [], [], NOW)
    assert len(rows) == 1
    r = rows[0]
    assert (r.node, r.profile, r.schedulable_class, r.stale, r.measured_w, r.cpu_req_pct) == (
        "N1", "eco", "unknown", True, None, None)
    s = summarize(rows, [])
    assert s.by_class["unknown"] == 1 and s.avg_cooling_pct is None and s.peak_cooling is None


def test_draining_wins_over_the_profile_and_flags_performance_pods() -> None:
    twin = {"spec": {"nodeName": "n1", "profile": "performance", "scheduling": {"draining": True}},
            "status": {"schedulableClass": "performance", "lastUpdated": (NOW - timedelta(seconds=5)).isoformat()}}
    rows = node_rows([twin], [], [], [], NOW)
    assert rows[0].schedulable_class == "draining" and not rows[0].stale
    pods = pod_rows([pod("a", "n1", "performance"), pod("b", "elsewhere"), pod("c", None, "standard")], rows)
    assert [(p.name, p.misplaced) for p in pods] == [("a", True), ("c", False)]


def test_node_detail_explains_the_work_aware_decision() -> None:
    from rich.console import Console

    from joulie_kubectl.render import node_detail

    decision = {"reason": "gpu 62.5 % of max, bound by infer-1 (gpu-inference): predicted +2.7 % time, -4.5 % energy per work",
                "slowdownBudgetPct": 3.0,
                "gpu": {"capPctOfMax": 62.5, "drivenBy": "infer-1 (gpu-inference)", "predictedSlowdownPct": 2.66,
                        "predictedEnergySavingPct": 4.5},
                "cpu": {"capPctOfMax": 100.0, "drivenBy": "infer-1 (gpu-inference) is not capped"}}
    twin = {"spec": {"nodeName": "gpu-1", "profile": "eco"},
            "status": {"schedulableClass": "eco", "lastUpdated": NOW.isoformat(), "capDecision": decision}}
    row = node_rows([twin], [], [], [], NOW)[0]
    assert row.decision[1] == ("Slowdown budget", "3 %")
    assert row.decision[2] == ("GPU decision", "62.5 % of max, driven by infer-1 (gpu-inference): predicted +2.66 % "
                                               "time, -4.5 % energy per work")
    assert row.decision[3] == ("CPU decision", "100 % of max, uncapped: infer-1 (gpu-inference) is not capped")
    console = Console(width=200, record=True)
    console.print(node_detail(row, [], NOW))
    text = console.export_text()
    assert "Cap decision" in text and "bound by infer-1 (gpu-inference)" in text
    assert node_rows([{"spec": {"nodeName": "n"}, "status": {}}], [], [], [], NOW)[0].decision == []


def test_a_lost_agent_and_a_drift_show_in_the_agent_columns() -> None:
    def twin(name: str, status: dict[str, object]) -> dict[str, object]:
        return {"metadata": {"name": name}, "spec": {"nodeName": name, "profile": "eco"}, "status": status}

    control = {"cpu": {"backend": "rapl", "result": "applied", "drift": "intel-rapl:0 PL1 reads 165.0W, intent 120.0W"}}
    rows = node_rows([twin("a", {"controlStatus": control}),
                      twin("b", {"controlStatus": control, "agent": {"state": "agent-lost"}})], [], [], [], NOW)
    assert [r.cpu_control for r in rows] == ["applied (rapl) + drift", "agent-lost"]


def test_the_power_state_shows_with_since_reason_boots_and_bmc_error() -> None:
    from rich.console import Console

    from joulie_kubectl.render import node_detail, status_table

    power = {"state": "failed", "since": (NOW - timedelta(minutes=3)).isoformat(), "boots": 2,
             "reason": "not back within RESUME_TIMEOUT (15m): the BMC reads off, Node not Ready; left cordoned",
             "error": "power on failed: 401 Unauthorized"}
    twin = {"spec": {"nodeName": "n1", "profile": "eco", "power": {"state": "on"}},
            "status": {"schedulableClass": "eco", "lastUpdated": NOW.isoformat(), "power": power}}
    row = node_rows([twin], [], [], [], NOW)[0]
    assert row.power_state == "failed"
    assert row.power == [("Power state", f"failed since {(NOW - timedelta(minutes=3)).isoformat()}"),
                         ("Power reason", power["reason"]), ("Why", "BMC"), ("Boots (resumes)", "2"),
                         ("BMC error", "power on failed: 401 Unauthorized")]
    console = Console(width=400, record=True)
    console.print(status_table([row], NOW))
    console.print(node_detail(row, [], NOW))
    text = console.export_text()
    assert "failed 3m" in text and "RESUME_TIMEOUT" in text and "401 Unauthorized" in text
    plain = node_rows([{"spec": {"nodeName": "n2", "profile": "eco"}, "status": {}}], [], [], [], NOW)[0]
    assert (plain.power_state, plain.power) == ("-", [])


def test_the_gpu_clock_lock_shows_its_spec_and_what_the_boards_read_back() -> None:
    from rich.console import Console

    from joulie_kubectl.render import node_detail

    lock = {"result": "applied", "lockedMaxMhz": 1500, "message": "applied SM clock lock 1500 MHz (1500 MHz) on 8 devices",
            "drift": "gpu 5 SM clock lock 1500 MHz lost (no longer limited by a clock setting); re-applied"}
    twin = {"spec": {"nodeName": "gpu-1", "profile": "eco",
                     "gpu": {"powerCap": {"capWattsPerGpu": 400}, "clockLock": {"maxMhz": 1500}}},
            "status": {"lastUpdated": NOW.isoformat(),
                       "controlStatus": {"gpu": {"result": "applied", "backend": "host-nvidia", "clockLock": lock}}}}
    hw = {"spec": {"nodeName": "gpu-1"}, "status": {"gpu": {"count": 8, "model": "H100"}}}
    row = node_rows([twin], [hw], [], [], NOW)[0]
    assert row.gpu_cap == "400 W, lock 1500 MHz"
    assert row.gpu_lock_control.startswith("applied, held at 1500 MHz + drift (gpu 5 SM clock lock 1500 MHz lost")
    console = Console(width=250, record=True)
    console.print(node_detail(row, [], NOW))
    out = console.export_text()
    assert "GPU clock lock" in out and "1500 MHz" in out and "Agent GPU clock lock" in out
    pct = node_rows([{**twin, "spec": {"nodeName": "gpu-1", "gpu": {"clockLock": {"pctOfMax": 70}}}}], [hw], [], [], NOW)[0]
    assert pct.gpu_cap == "-, lock 70% of max"


def test_jobs_show_each_gpu_pods_lever_estimate_and_predicted_slowdown_against_its_budget() -> None:
    from rich.console import Console

    from joulie_kubectl.model import job_rows
    from joulie_kubectl.render import jobs_table

    decode = {"pod": "ml/decode", "lever": "lock", "estimatedComputeShare": 0.08, "estimatedDraw": 0.31,
              "observations": 12, "predictedSlowdownPct": 2.4, "budgetPct": 3, "budgetSource": "cluster",
              "realisedSlowdownPct": 1.9, "realisedSlowdownLowPct": 0.7, "realisedSlowdownHighPct": 3.6,
              "realisedSeconds": 84}
    fresh = {"pod": "ml/new", "lever": "lock", "estimatedComputeShare": 0.26, "estimatedDraw": 0.7,
             "observations": 0, "predictedSlowdownPct": 9.5, "budgetPct": 10, "budgetSource": "annotation"}
    twin = {"spec": {"nodeName": "gpu-1", "gpu": {"powerCap": {"capPctOfMax": 77.5}, "clockLock": {"pctOfMax": 77.5}}},
            "status": {"capDecision": {"gpuClockLockPctOfMax": 77.5, "pods": [fresh, decode]}}}
    rows = job_rows([twin, {"spec": {"nodeName": "cpu-1"}, "status": {"capDecision": {"reason": "cpu only"}}}])
    assert [r.pod for r in rows] == ["ml/decode", "ml/new"]
    assert rows[0].setting == "cap 77.5% of max, lock 77.5% of max" and rows[0].compute_share == 0.08
    console = Console(width=250, record=True)
    console.print(jobs_table(rows))
    out = console.export_text()
    line = next(x for x in out.splitlines() if "ml/decode" in x)
    assert "lock" in line and "0.08" in line and "0.31" in line and "+2.4%" in line and "3%" in line and "cluster" in line
    assert "0 (kind prior)" in next(x for x in out.splitlines() if "ml/new" in x)
    assert "+1.9% [+0.7, +3.6] over 84 s" in line
    assert "- (no clock yet)" in next(x for x in out.splitlines() if "ml/new" in x)
    # The controller's per-board locks (spec.gpu.clockLocks) name their boards.
    per_board = {**twin, "spec": {"nodeName": "gpu-1", "gpu": {"powerCap": {"capPctOfMax": 77.5},
                                                              "clockLocks": [{"gpus": [0, 1], "pctOfMax": 62.5}]}}}
    assert job_rows([per_board])[0].setting == "cap 77.5% of max, lock 62.5% of max on GPUs 0,1"


def power_twin(node: str, state: str, reason: str, **extra: object) -> dict[str, object]:
    power = {"state": state, "since": "2026-01-01T11:30:00Z", "reason": reason, **extra}
    return {"metadata": {"name": node}, "spec": {"nodeName": node}, "status": {"power": power}}


def test_power_rows_say_why_each_node_is_warm_or_asleep() -> None:
    from joulie_kubectl.powerview import power_rows
    from joulie_kubectl.render import power_table

    twins: list[dict[str, object]] = [
        power_twin("c1", "on", "kept warm (forecast): pool * keeps 24 cores / 0 GPUs free for 3 arrivals in 300 s "
                   "(recent, WARM_POOL_WAIT_TARGET)"),
        power_twin("c2", "on", "kept on: the floor of pool cpu, 1 powered (SUSPEND_MIN_POWERED=1)"),
        power_twin("g1", "off", "no workload Pods for 10m (SUSPEND_AFTER 10m); 3 power cycles left today", boots=2),
        power_twin("g2", "off", "resume for Pending Pods deferred at 2026-01-01T11:59:00Z until about "
                   "2026-01-01T12:00:40Z: POWER_RAMP_LIMIT_W_PER_S=10 (boot step 1000 W, ramp room 0 W)"),
        power_twin("g3", "on", "kept on: MAX_POWER_CYCLES_PER_DAY=4 power-offs today (0 cycles left)"),
        power_twin("g4", "failed", "the BMC refused power-on 4 times (RESUME_RETRIES=3): HTTP 500; left cordoned",
                   error="HTTP 500"),
        {"metadata": {"name": "x"}, "spec": {"nodeName": "x"}, "status": {}},  # no power policy: not listed
    ]
    rows = {r.node: r for r in power_rows(twins)}
    assert sorted(rows) == ["c1", "c2", "g1", "g2", "g3", "g4"]
    assert (rows["c1"].cause, rows["c1"].target) == ("forecast", "24 cores / 0 GPUs")
    assert rows["c2"].cause == "floor"
    assert (rows["g1"].cause, rows["g1"].cycles_left, rows["g1"].boots) == ("idle", 3, 2)
    assert rows["g2"].cause == "rate limit"
    assert (rows["g3"].cause, rows["g3"].cycles_left) == ("power cycles", 0)
    assert (rows["g4"].cause, rows["g4"].error) == ("BMC", "HTTP 500")
    buf = io.StringIO()
    Console(file=buf, width=400, color_system=None).print(power_table(list(rows.values()), NOW))
    text = buf.getvalue()
    assert "WHY" in text and "CYCLES LEFT" in text and "30m" in text and "[BMC: HTTP 500]" in text
