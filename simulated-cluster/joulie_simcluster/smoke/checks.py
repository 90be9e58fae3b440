"""The smoke run's checks as pure evaluations: cluster objects and the emulator's truth in, one
:class:`Assertion` (id, status, observed, expected) out. ``smoke.py`` gathers the data.

Every check and what it asserts is listed in ``simulated-cluster/README.md``; the ids are stable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from joulie_agent.api import NO_COUNTERS_REASON
from joulie_api import names
from joulie_hwprofiles.schema import Profile
from joulie_simulator.api import components

Status = Literal["pass", "fail", "skipped"]

# id → (name, what it asserts). The README table is generated from this (a test keeps them equal).
CHECKS: dict[str, tuple[str, str]] = {
    "S01": ("components-report", "every component reports: simulator serves every Node on /debug/emulate, extender /healthz, "
            "controller manager /metrics and a NodeTwin with status per managed Node, each agent /metrics and its NodeHardware, "
            "the workload runner /metrics; in the Collector telemetry modes the Collector's health check"),
    "S02": ("agent-placement", "agents run on exactly the Nodes the chart's agent DaemonSet reaches; every other Node has a "
            "reason (the arm64 Node: its architecture)"),
    "S03": ("nodehardware-matches-profile", "NodeHardware.status of every agent Node matches its hardware profile: sockets, "
            "cores, GPU vendor/count/cap range, CPU control available exactly when the profile has a writable cap"),
    "S04": ("caps-in-files-match-spec", "the CPU package and GPU caps in the emulated files equal NodeTwin.spec "
            "(pct of max from NodeHardware) on every Node whose hardware can be capped, within 1 W or 1 %"),
    "S05": ("power-honours-caps", "under the workload's load, every package and GPU draws at most its cap (+2 %, +1 W)"),
    "S06": ("measured-power-matches-truth", "NodeTwin.status.powerMeasurement.measuredNodePowerW is within 3 % of the "
            "emulator's host power (the components' sum where the telemetry mode carries no host power; never closer than "
            "1 W needed) on every managed Node; in the agent telemetry mode on every managed Node that can be measured, the "
            "others (no agent, or NodeHardware saying the node has no counter) listed as skipped with that reason, and a "
            "skipped Node that has a measurement fails"),
    "S07": ("power-profile-labels", "every managed Node carries joulie.io/power-profile equal to NodeTwin.spec.profile"),
    "S08": ("simulator-restart-survived", "after the simulator is killed and restarted (FUSE views gone, then back), "
            "every agent runs on with the same PID and applies the next caps"),
    "S09": ("lowered-caps-take-effect", "after the caps are lowered to 50 % halfway, the files carry the new caps and "
            "power honours them"),
    "S10": ("extender-scores-pods", "kube-scheduler called the extender for the test's pods (filter and prioritize "
            "counters grew) and every pod was bound"),
    "S11": ("performance-not-on-eco", "no pod annotated joulie.io/workload-class=performance is bound to a Node whose "
            "NodeTwin is eco or draining"),
    "S12": ("only-classified-pods-on-fake-nodes", "nothing without joulie.io/workload-class is bound to a fake Node"),
    "S13": ("facility-ambient-step", "after a +10 °C ambient step through the simulator's control, Prometheus shows the "
            "facility's ambient (±0.5 °C), IT and cooling power (±5 %) of /debug/emulate, the facility's PUE rises, and "
            "every managed NodeTwin's cooling stress per measured watt rises as the controller's ambient multiplier of "
            "the node's true inlet says (±3 %; Nodes without a TDP keep the neutral score)"),
    "S14": ("gpu-clock-lock", "an SM clock lock at 70 % of max on one NVIDIA Node's NodeTwin is reported applied at the "
            "ceiling every board of the emulator holds; after a device reset the agent reports the lost lock as drift and "
            "the boards hold it again; dropped from the spec, no board is locked"),
    "S15": ("gpu-pod-signals", "with the load's GPU Pods running, Prometheus holds hw.gpu.allocation naming each such Pod "
            "(namespace, name) on its NVIDIA Node (the agent's reading of the emulated kubelet's pod-resources API), "
            "exactly on the boards the Pod holds, and hw.gpu.dram.active within [0, 1] for each of those boards"),
    "S16": ("energy-receipts", "every load Pod running two receipt windows on a metered Node carries its "
            "joulie.io/energy-receipt (running, its Node, energy > 0; its boards billed where hw.gpu.allocation says "
            "who holds them, none on a Node where nothing says who holds them)"),
    "S17": ("telemetry-authenticated", "with SIMCLUSTER_TELEMETRY_TLS (the default) an OTLP push without a client "
            "certificate, over TLS or plain HTTP, is refused and stores nothing, while the same push with a certificate "
            "of the cluster's telemetry CA is stored (skipped with SIMCLUSTER_TELEMETRY_TLS=0)"),
    "S18": ("energy-receipts-accuracy", "over the controller's receipt windows, every Node's Pod receipts plus its "
            "unallocated energy within 1 % of its true meter, and each workload Pod's receipt within 3 % of the "
            "emulator's per-Pod truth (two shared Nodes of two Pods each included; Pods on Nodes without "
            "hw.gpu.allocation, and on Nodes whose CPU idle draw the controller reports unknown, shown apart)"),
}


@dataclass(frozen=True)
class Assertion:
    id: str
    status: Status
    observed: str
    expected: str
    value: float | None = None
    """A number for the harness metrics (e.g. the worst error); None when the check has none."""

    @property
    def name(self) -> str:
        return CHECKS[self.id][0]

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["test.case.name"] = f"{self.id} {self.name}"
        d["test.case.result.status"] = self.status
        return d


def _result(check_id: str, failures: list[str], ok_observed: str, expected: str, value: float | None = None) -> Assertion:
    if failures:
        shown = "; ".join(failures[:6]) + (f"; … {len(failures) - 6} more" if len(failures) > 6 else "")
        return Assertion(check_id, "fail", shown, expected, value)
    return Assertion(check_id, "pass", ok_observed, expected, value)


# --- S01 / S02 --------------------------------------------------------------------------------


def components_report(reports: Iterable[tuple[str, bool, str]]) -> Assertion:
    reports = list(reports)
    bad = [f"{name}: {detail}" for name, ok, detail in reports if not ok]
    return _result("S01", bad, f"{len(reports)} of {len(reports)} components report", "every component reports",
                   float(len(reports) - len(bad)))


def agent_placement(
    running: Iterable[str], eligible: Iterable[str], excluded: Iterable[tuple[str, str]], arch: Mapping[str, str]
) -> Assertion:
    running_s, eligible_s = set(running), set(eligible)
    failures = []
    if running_s != eligible_s:
        failures.append(f"agents on {sorted(running_s)}, DaemonSet reaches {sorted(eligible_s)}")
    reasons = dict(excluded)
    for node, why in reasons.items():
        if not why:
            failures.append(f"{node}: excluded without a reason")
    for node, a in arch.items():
        if a not in ("amd64",) and node in running_s:
            failures.append(f"{node} ({a}) has an agent")
        if a not in ("amd64",) and "arch" not in reasons.get(node, ""):
            failures.append(f"{node} ({a}): reason {reasons.get(node)!r} does not name its architecture")
    summary = f"{len(running_s)} agents; excluded: " + ", ".join(f"{n} ({w})" for n, w in sorted(reasons.items()))
    return _result("S02", failures, summary, "agents exactly on the DaemonSet's Nodes; others with their reason")


# --- S03 --------------------------------------------------------------------------------------


def profile_can_cap_cpu(profile: Profile) -> bool:
    pc = profile.powercap
    if profile.hsmp is not None:
        return True
    if pc is None or not pc.package.enabled:
        return False
    return any(c.name == "long_term" and not c.reject_writes for c in pc.package.constraints)


def nodehardware_matches(profiles: Mapping[str, Profile], hardware: Mapping[str, Mapping[str, Any]]) -> Assertion:
    failures = []
    for node, profile in sorted(profiles.items()):
        status = (hardware.get(node) or {}).get("status")
        if not status:
            failures.append(f"{node}: no NodeHardware.status")
            continue
        cpu, gpu = status.get("cpu") or {}, status.get("gpu") or {}
        want_sockets = profile.cpu.sockets
        if cpu.get("sockets") != want_sockets:
            failures.append(f"{node}: cpu.sockets {cpu.get('sockets')} ≠ {want_sockets}")
        want_cores = profile.cpu.sockets * profile.cpu.cores_per_socket
        if cpu.get("totalCores") not in (want_cores, want_cores * profile.cpu.threads_per_core):
            failures.append(f"{node}: cpu.totalCores {cpu.get('totalCores')} ≠ {want_cores}")
        can_cap = profile_can_cap_cpu(profile)
        if bool(cpu.get("controlAvailable")) != can_cap and not (not can_cap and profile.cpufreq is not None):
            failures.append(f"{node}: cpu.controlAvailable {cpu.get('controlAvailable')} but profile cap writable={can_cap}")
        g = profile.gpus
        if g is None:
            if gpu.get("present"):
                failures.append(f"{node}: gpu.present but the profile has no GPU")
            continue
        if gpu.get("count") != g.count:
            failures.append(f"{node}: gpu.count {gpu.get('count')} ≠ {g.count}")
        if (gpu.get("vendor") or "").lower() != g.vendor:
            failures.append(f"{node}: gpu.vendor {gpu.get('vendor')!r} ≠ {g.vendor!r}")
        rng = gpu.get("capRangePerGpu") or {}
        if rng and (abs(float(rng.get("minWatts", -1)) - g.min_w) > 1 or abs(float(rng.get("maxWatts", -1)) - g.max_w) > 1):
            failures.append(f"{node}: gpu.capRangePerGpu {rng.get('minWatts')}-{rng.get('maxWatts')} W ≠ {g.min_w}-{g.max_w} W")
    return _result("S03", failures, f"{len(profiles)} NodeHardware objects match their profiles",
                   "sockets, cores, GPU vendor/count/cap range, CPU control as the profile")


# --- S04 / S05 / S09 --------------------------------------------------------------------------


def expected_caps(twin: Mapping[str, Any], hardware: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(CPU W per package, GPU W per board) that NodeTwin.spec asks for, from NodeHardware's ranges."""
    spec = twin.get("spec") or {}
    status = hardware.get("status") or {}
    cpu_w = gpu_w = None
    cpu_spec = spec.get("cpu") or {}
    cpu_range = (status.get("cpu") or {}).get("capRange") or {}
    if "cpu.capRange" in ((status.get("inventoryResolution") or {}).get("catalogFacts") or []):
        # A datasheet range (issue 21): the controller budgets with it, the agent enforces no watts from
        # it (joulie_agent.api.published_cap_range_w), so a percent stays a percent for DVFS.
        cpu_range = {}
    if cpu_spec.get("packagePowerCapWatts") is not None:
        cpu_w = float(cpu_spec["packagePowerCapWatts"])
    elif cpu_spec.get("packagePowerCapPctOfMax") is not None and cpu_range.get("maxWattsPerSocket"):
        lo = float(cpu_range.get("minWattsPerSocket") or 0)
        cpu_w = max(lo, float(cpu_spec["packagePowerCapPctOfMax"]) / 100 * float(cpu_range["maxWattsPerSocket"]))
    gcap = ((spec.get("gpu") or {}).get("powerCap")) or {}
    grange = (status.get("gpu") or {}).get("capRangePerGpu") or {}
    if gcap.get("capWattsPerGpu") is not None:
        gpu_w = float(gcap["capWattsPerGpu"])
    elif gcap.get("capPctOfMax") is not None and grange.get("maxWatts"):
        gpu_w = max(float(grange.get("minWatts") or 0), float(gcap["capPctOfMax"]) / 100 * float(grange["maxWatts"]))
    return cpu_w, gpu_w


def _close(a: float, b: float, rel: float = 0.01, abs_w: float = 1.0) -> bool:
    return abs(a - b) <= max(abs_w, rel * abs(b))


def caps_match(
    check_id: str, twins: Mapping[str, Mapping[str, Any]], hardware: Mapping[str, Mapping[str, Any]],
    truth: Mapping[str, Mapping[str, Any]], want_pct: float | None = None,
) -> Assertion:
    """The caps the emulated files hold vs what NodeTwin.spec asks for (and, given, `want_pct`)."""
    failures, checked = [], 0
    for node in sorted(twins):
        twin, hw, t = twins[node], hardware.get(node) or {}, truth.get(node)
        if t is None:
            failures.append(f"{node}: not in the emulator's truth")
            continue
        spec_cpu = (twin.get("spec") or {}).get("cpu") or {}
        spec_gpu = ((twin.get("spec") or {}).get("gpu") or {}).get("powerCap") or {}
        if want_pct is not None:
            # GPU nodes keep the CPU uncapped (controller-manager README: capping it starves the GPU feed).
            cpu_want = 100.0 if spec_gpu else want_pct
            if spec_cpu.get("packagePowerCapPctOfMax") not in (None, cpu_want):
                failures.append(f"{node}: spec cpu {spec_cpu.get('packagePowerCapPctOfMax')} % ≠ {cpu_want:g} %")
            if spec_gpu and spec_gpu.get("capPctOfMax") not in (None, want_pct):
                failures.append(f"{node}: spec gpu {spec_gpu.get('capPctOfMax')} % ≠ {want_pct:g} %")
        cpu_w, gpu_w = expected_caps(twin, hw)
        cpu_ctl = bool(((hw.get("status") or {}).get("cpu") or {}).get("controlAvailable"))
        caps = t.get("caps") or {}
        if cpu_w is not None and cpu_ctl:
            files = [c for c in (caps.get("cpuPackageW") or []) if c is not None] or list(caps.get("hsmpW") or [])
            if not files:
                failures.append(f"{node}: spec asks {cpu_w:.1f} W per package, no cap in the files")
            for i, c in enumerate(files):
                checked += 1
                if not _close(float(c), cpu_w):
                    failures.append(f"{node}: package {i} cap {float(c):.1f} W ≠ {cpu_w:.1f} W")
        gpu_ctl = bool(((hw.get("status") or {}).get("gpu") or {}).get("controlAvailable"))
        if gpu_w is not None and gpu_ctl:
            for g in t.get("gpus") or []:
                checked += 1
                if not _close(float(g["capW"]), gpu_w):
                    failures.append(f"{node}: gpu{g['index']} cap {float(g['capW']):.1f} W ≠ {gpu_w:.1f} W")
    if not checked and not failures:
        failures.append("no cap was checked: no Node reports control available")
    expected = "caps in the files = NodeTwin.spec (±1 W or 1 %)" + (
        f", spec at {want_pct:g} % (GPU nodes: GPU {want_pct:g} %, CPU 100 %)" if want_pct is not None else "")
    return _result(check_id, failures, f"{checked} caps match NodeTwin.spec", expected, float(checked))


def power_honours_caps(check_id: str, truth: Mapping[str, Mapping[str, Any]]) -> Assertion:
    failures, worst, checked = [], 0.0, 0
    for node, t in sorted(truth.items()):
        caps = t.get("caps") or {}
        pkg_caps = caps.get("cpuPackageW") or []
        for pkg, cap in zip(t.get("packages") or [], pkg_caps, strict=False):
            if cap is None:
                continue
            checked += 1
            over = float(pkg["powerW"]) - float(cap)
            worst = max(worst, over)
            if over > max(1.0, 0.02 * float(cap)):
                failures.append(f"{node}: package {pkg['socket']} draws {float(pkg['powerW']):.1f} W over its {float(cap):.1f} W cap")
        for g in t.get("gpus") or []:
            checked += 1
            over = float(g["powerW"]) - float(g["capW"])
            worst = max(worst, over)
            if over > max(1.0, 0.02 * float(g["capW"])):
                failures.append(f"{node}: gpu{g['index']} draws {float(g['powerW']):.1f} W over its {float(g['capW']):.1f} W cap")
    return _result(check_id, failures, f"{checked} packages/GPUs at or under their caps (worst {worst:+.2f} W)",
                   "power ≤ cap + max(1 W, 2 %)", worst)


# --- S06 / S07 --------------------------------------------------------------------------------


def measurement_error(measured: float, truth: float) -> tuple[float, bool]:
    """(relative error, within tolerance): within 3 %, and never needs to be closer than 1 W."""
    err = abs(measured - truth)
    return (err / truth if truth else float("inf")), err <= max(1.0, 0.03 * truth)


def true_power(node_truth: Mapping[str, Any], scope: str = "host") -> float:
    """The emulator's power of a node as the telemetry mode can see it: ``host`` the whole host,
    ``components`` the sum of its CPU packages, DRAM zones and GPUs (what Joulie sums when no host
    meter is exported)."""
    if scope == "components":
        return sum(c.power_w for c in components(node_truth))
    return float(node_truth["host"]["powerW"])


NO_NODEHARDWARE = "no NodeHardware: no agent on this Node measures it"


def unmeasurable_nodes(nodes: Iterable[str], hardware: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Where the power comes from the agents: the Nodes no agent can measure, each with the reason.

    The agent's own word decides: a Node without NodeHardware has no agent, and an agent that finds
    no counter says so in `status.quality.warnings` (joulie_agent.api.NO_COUNTERS_REASON)
    and exports nothing. Every other Node is measurable, and S06 then fails if it has no data.
    """
    out: dict[str, str] = {}
    for node in nodes:
        nhw = hardware.get(node)
        if nhw is None:
            out[node] = NO_NODEHARDWARE
            continue
        warnings = (((nhw.get("status") or {}).get("quality")) or {}).get("warnings") or []
        said = next((w for w in warnings if isinstance(w, str) and w.startswith(NO_COUNTERS_REASON)), None)
        if said is not None:
            out[node] = said
    return out


def measured_power(
    twins: Mapping[str, Mapping[str, Any]], truth: Mapping[str, Mapping[str, Any]], scope: str = "host",
    unmeasurable: Mapping[str, str] | None = None,
) -> Assertion:
    """S06 over ``twins``; Nodes in ``unmeasurable`` (node -> why, `unmeasurable_nodes`) are skipped and
    listed, and fail only if they have a measurement after all (a source nobody accounted for)."""
    failures, worst = [], 0.0
    skipped = dict(unmeasurable or {})
    checked = 0
    for node in sorted(twins):
        pm = ((twins[node].get("status") or {}).get("powerMeasurement")) or {}
        measured = pm.get("measuredNodePowerW")
        if node in skipped:
            if measured is not None:
                failures.append(f"{node}: said unmeasurable ({skipped[node]}) but measured {float(measured):.1f} W "
                                f"(source {pm.get('source')!r})")
            continue
        checked += 1
        t = truth.get(node)
        if t is None:
            failures.append(f"{node}: not in the emulator's truth")
            continue
        true_w = true_power(t, scope)
        if measured is None:
            failures.append(f"{node}: no measuredNodePowerW (source {pm.get('source')!r}); truth {true_w:.1f} W")
            continue
        rel, ok = measurement_error(float(measured), true_w)
        worst = max(worst, rel)
        if not ok:
            failures.append(f"{node}: measured {float(measured):.1f} W, truth {true_w:.1f} W ({rel * 100:.1f} %)")
    skipped_here = sorted(n for n in skipped if n in twins)
    observed = f"{checked} Nodes, worst error {worst * 100:.2f} % (truth: {scope} power)"
    if skipped_here:
        observed += f"; skipped {len(skipped_here)} unmeasurable: " + "; ".join(f"{n} ({skipped[n]})" for n in skipped_here)
    if not checked and not failures:
        failures.append("no Node could be measured: nothing was checked")
    return _result("S06", failures, observed, "|measured - truth| ≤ max(3 %, 1 W)", worst * 100)


def profile_labels(nodes: Iterable[Mapping[str, Any]], twins: Mapping[str, Mapping[str, Any]]) -> Assertion:
    failures, counts = [], {"performance": 0, "eco": 0}
    for node in nodes:
        meta = node["metadata"]
        if (meta.get("labels") or {}).get(names.LABEL_MANAGED) != "true":
            continue
        name = meta["name"]
        label = (meta.get("labels") or {}).get(names.LABEL_POWER_PROFILE)
        want = ((twins.get(name) or {}).get("spec") or {}).get("profile")
        if label is None or label != want:
            failures.append(f"{name}: label {label!r}, NodeTwin.spec.profile {want!r}")
        elif label in counts:
            counts[label] += 1
    return _result("S07", failures, f"{counts['performance']} performance, {counts['eco']} eco",
                   "joulie.io/power-profile = NodeTwin.spec.profile on every managed Node")


# --- S10 / S11 / S12 --------------------------------------------------------------------------


def extender_scored(before: Mapping[str, float], after: Mapping[str, float], pods: Iterable[Mapping[str, Any]]) -> Assertion:
    pods = list(pods)
    unbound = [p["metadata"]["name"] for p in pods if not (p.get("spec") or {}).get("nodeName")]
    failures = [f"pods not bound: {unbound}"] if unbound else []
    grew = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in ("filter", "prioritize")}
    if grew["prioritize"] < len(pods) and len(pods) > 0:
        failures.append(f"prioritize requests grew by {grew['prioritize']:g} for {len(pods)} pods")
    if grew["filter"] < len(pods) and len(pods) > 0:
        failures.append(f"filter requests grew by {grew['filter']:g} for {len(pods)} pods")
    return _result("S10", failures, f"{len(pods)} pods bound; filter +{grew['filter']:g}, prioritize +{grew['prioritize']:g}",
                   "every pod bound, one filter and one prioritize call per pod at least", grew["prioritize"])


def _node_class(twin: Mapping[str, Any] | None) -> str:
    if not twin:
        return "unknown"
    status, spec = twin.get("status") or {}, twin.get("spec") or {}
    if (spec.get("scheduling") or {}).get("draining") or status.get("schedulableClass") == "draining":
        return "draining"
    return str(spec.get("profile") or "unknown")


def performance_not_on_eco(pods: Iterable[Mapping[str, Any]], twins: Mapping[str, Mapping[str, Any]]) -> Assertion:
    failures, perf, eco_nodes = [], 0, sorted(n for n, t in twins.items() if _node_class(t) in ("eco", "draining"))
    for p in pods:
        meta = p["metadata"]
        if (meta.get("annotations") or {}).get(names.ANNOTATION_WORKLOAD_CLASS) != "performance":
            continue
        node = (p.get("spec") or {}).get("nodeName")
        if not node:
            continue
        perf += 1
        cls = _node_class(twins.get(node))
        if cls in ("eco", "draining"):
            failures.append(f"{meta['name']} on {node} ({cls})")
    if not eco_nodes and not failures:
        failures.append("no eco or draining Node existed, so the check could not fail")
    return _result("S11", failures, f"{perf} performance pods bound, none on the {len(eco_nodes)} eco/draining Nodes "
                   f"({', '.join(eco_nodes)})", "no performance pod on an eco or draining Node")


def only_classified_on_fake(pods: Iterable[Mapping[str, Any]], fake_nodes: Iterable[str]) -> Assertion:
    fake = set(fake_nodes)
    failures, seen = [], 0
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node not in fake:
            continue
        seen += 1
        meta = p["metadata"]
        if not (meta.get("annotations") or {}).get(names.ANNOTATION_WORKLOAD_CLASS) and \
                not (meta.get("labels") or {}).get(names.ANNOTATION_WORKLOAD_CLASS):
            failures.append(f"{meta.get('namespace')}/{meta['name']} on {node}")
    return _result("S12", failures, f"{seen} pods on fake Nodes, all with joulie.io/workload-class",
                   "no pod without joulie.io/workload-class on a fake Node")


def restart_survived(
    before: Mapping[str, int], after: Mapping[str, int], alive: Mapping[str, bool], caps_after: Assertion, outage_s: float,
) -> Assertion:
    failures = []
    for name, pid in sorted(before.items()):
        if after.get(name) != pid:
            failures.append(f"{name}: pid {pid} → {after.get(name)}")
        elif not alive.get(name):
            failures.append(f"{name}: pid {pid} no longer running")
    if caps_after.status != "pass":
        failures.append(f"caps after the restart: {caps_after.observed}")
    return _result("S08", failures,
                   f"{len(before)} agents kept their PIDs through a {outage_s:.1f}s simulator outage and applied the next caps",
                   "same agent PIDs; new caps applied after the restart")
