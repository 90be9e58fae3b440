"""``simcluster suspend-live``: issue 37's power states on the live cluster, in two phases.

A cluster of four Xeon nodes in one pool (``specs/suspend-live.yaml``): ``svc-0`` labelled
``joulie.io/suspend-exclude=true`` (always on: it runs a steady half-node Pod, as a service node
would), ``xeon-0..2`` under ``forecast_suspend_v1`` with a floor of 0 (``values/suspend-live-values.yaml``;
every short setting is stated there and in the summary). No workload runner: the run makes its own Pods.

1. **A refused power-on, retried, then given up** (first, while the forecast has seen no demand, so no
   warm-pool resume interferes): once the three xeon nodes are off, the simulator's BMC of the one the
   controller will try first (the longest off) refuses every power-on (``POST /debug/bmc/faults`` with
   ``nodes``); a Pod that fits that node and one other off node (required node affinity on both names) is
   created. The controller retries the refused power-on after RESUME_RETRY_BACKOFF, doubling, fails the
   node past RESUME_RETRIES with the BMC's answer and wakes the other node on that tick; the Pod binds there.
2. **A node resumed ahead of a burst**: a burst of three half-node Pods every FORECAST_DAY (the day
   compressed to minutes by the forecast's own setting, so its daily profile is learnt in the run),
   each burst held 10 s, then deleted. The first two bursts find the nodes off and wait for a boot (the
   forecast has under FORECAST_MIN_DAYS=2 days); before the third, the daily profile sees the burst
   coming and the warm pool powers a node on: the check is that the resume started, and the node read
   on, before the burst's first Pod was created, and that the burst's Pods waited no boot.

Every transition (NodeTwin power state and reason, the emulator's power state, each Pod's creation
and binding) goes into ``runs/<UTC>-suspend-live/summary.json`` (``timeline``) with the checks
(``suspendlive.py``, pure).
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from joulie_api import names
from joulie_simcluster.chaos.bmcfaults import set_bmc_faults
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.deploy.start import DeployOptions, deploy
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.nodes import KWOK_TAINT_KEY
from joulie_simcluster.runtimes import kube, process
from joulie_simcluster.smoke import suspendlive as sl
from joulie_simcluster.smoke.results import open_run, tear_down

DEFAULT_SPEC = Path("simulated-cluster/specs/suspend-live.yaml")
DEFAULT_VALUES = Path("simulated-cluster/values/suspend-live-values.yaml")
NAMESPACE = "default"
LABEL = "joulie.io/check"
LABEL_VALUE = "suspend-live"
ALWAYS_ON = "svc-0"
BURSTS = 3
BURST_PODS = 3
HOLD_S = 10.0
FIRST_BURST_AFTER_S = 75.0
"""The first burst no earlier than this after the deploy: the controller's history then starts more
than the daily profile's 60 s horizon before it, so two whole days have passed when the third burst's
window opens."""


def pod(name: str, cpu_m: int, *, host: str | None = None, hosts: Sequence[str] = ()) -> dict[str, Any]:
    """A check Pod of ``cpu_m`` millicores, tolerating KWOK's taint (not the suspend taint); pinned to ``host``
    or required onto one of ``hosts``."""
    spec: dict[str, Any] = {
        "tolerations": [{"key": KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {"name": "work", "image": "busybox", "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": "256Mi"}}}
        ],
    }
    if host:
        spec["nodeSelector"] = {"kubernetes.io/hostname": host}
    if hosts:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/hostname", "operator": "In", "values": list(hosts)}
                            ]
                        }
                    ]
                }
            }
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {LABEL: LABEL_VALUE},
            "annotations": {names.ANNOTATION_WORKLOAD_CLASS: names.WORKLOAD_CLASS_STANDARD},
        },
        "spec": spec,
    }


class Watcher:
    """Reads the NodeTwins, the emulator's truth and the check Pods once a second; records each change."""

    def __init__(self, ctx: Context, o: sl.Observed, t0: float, progress: Callable[[str], None]):
        self.ctx, self.o, self.t0, self.progress = ctx, o, t0, progress
        self.api = kube.core_api(ctx.state.kubeconfig)
        self.twin: dict[str, tuple[str, str]] = {}
        self.since: dict[str, str] = {}
        self.emu: dict[str, str] = {}
        self.pods: dict[str, sl.PodSeen] = {}

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 1)

    def look(self) -> None:
        t = self.now()
        for tw in kube.kube_list(self.ctx.state.kubeconfig, kube.NODETWINS):
            node = tw["spec"]["nodeName"]
            power = (tw.get("status") or {}).get("power") or {}
            seen = (str(power.get("state", "")), str(power.get("reason", "")))
            self.since[node] = str(power.get("since", ""))
            if self.twin.get(node) != seen:
                self.twin[node] = seen
                self.o.twins.append(sl.TwinChange(t, node, *seen))
                self.progress(f"+{t:6.1f}s twin {node} {seen[0]}: {seen[1]}")
        env = self.ctx.state.read_deploy_env() or {}
        with urllib.request.urlopen(f"http://{env['SIMULATOR_HTTP']}/debug/emulate", timeout=10) as resp:
            for n in json.loads(resp.read())["nodes"]:
                state = str((n.get("power") or {}).get("state"))
                if self.emu.get(n["name"]) != state:
                    self.emu[n["name"]] = state
                    self.o.emulator.append(sl.EmuChange(t, n["name"], state))
                    self.progress(f"+{t:6.1f}s emulator {n['name']} {state}")
        for p in self.dicts(self.api.list_namespaced_pod(NAMESPACE, label_selector=f"{LABEL}={LABEL_VALUE}")):
            seen_pod = self.pods.get(p["metadata"]["name"])
            bound_on = str((p.get("spec") or {}).get("nodeName") or "")
            if seen_pod is not None and seen_pod.bound_s is None and bound_on:
                seen_pod.bound_s, seen_pod.node = t, bound_on
                self.progress(f"+{t:6.1f}s pod {seen_pod.name} bound on {seen_pod.node} (waited {seen_pod.wait_s}s)")

    def create(self, body: dict[str, Any]) -> sl.PodSeen:
        self.api.create_namespaced_pod(NAMESPACE, body)  # type: ignore[arg-type]
        p = sl.PodSeen(body["metadata"]["name"], self.now())
        self.pods[p.name] = p
        self.progress(f"+{p.created_s:6.1f}s pod {p.name} created")
        return p

    def delete(self, names_: Sequence[str]) -> None:
        for n in names_:
            self.api.delete_namespaced_pod(n, NAMESPACE, grace_period_seconds=0)

    def until(self, what: str, done: Callable[[], bool], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.look()
            except (OSError, k8s.ApiException, KeyError, ValueError) as e:
                self.progress(f"(reading the cluster: {e!r}; again)")
            if done():
                return
            if time.monotonic() > deadline:
                raise RuntimeFailure(f"no {what} within {timeout_s:.0f}s (NodeTwins: {self.twin})")
            time.sleep(1.0)

    def off(self, nodes: Sequence[str]) -> bool:
        return all(self.twin.get(n, ("", ""))[0] == "off" and self.emu.get(n) == "off" for n in nodes)

    def dicts(self, listed: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.api.api_client.sanitize_for_serialization(listed).get("items") or []
        return items

    def allocatable_m(self, node: str) -> int:
        doc = self.api.api_client.sanitize_for_serialization(self.api.read_node(node))
        return kube_cpu_m(str(doc["status"]["allocatable"]["cpu"]))

    def free_m(self, node: str) -> int:
        """The node's allocatable CPU less the requests of the Pods bound to it, in millicores."""
        used = 0
        for p in self.dicts(self.api.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}")):
            if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            for c in (p.get("spec") or {}).get("containers") or []:
                used += kube_cpu_m(str(((c.get("resources") or {}).get("requests") or {}).get("cpu", "0")))
        return self.allocatable_m(node) - used


def kube_cpu_m(q: str) -> int:
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


def _refused_phase(w: Watcher, o: sl.Observed, xeons: list[str], s: sl.LiveSettings, state: Any) -> None:
    w.until("three xeon nodes off", lambda: w.off(xeons), 240)
    o.refused_node, o.other_node = sl.first_refusal_target({n: w.since.get(n, "") for n in xeons}, xeons)
    before = set_bmc_faults(state, 1.0, nodes=[o.refused_node])["drawn"]["refused"]
    o.fault_set_s = w.now()
    w.progress(
        f"+{o.fault_set_s:6.1f}s the BMC of {o.refused_node} refuses every power-on; a Pod fits it and {o.other_node}"
    )
    o.refused_pod = w.create(pod("refused-wake", 1000, hosts=[o.refused_node, o.other_node]))
    limit = s.resume_timeout_s + s.reconcile_s + 30
    try:
        w.until("refused-wake bound", lambda: o.refused_pod is not None and o.refused_pod.bound_s is not None, limit)
    finally:
        o.refused_drawn = set_bmc_faults(state, 0.0)["drawn"]["refused"] - before
    w.delete([o.refused_pod.name])


def _ahead_phase(w: Watcher, o: sl.Observed, xeons: list[str], s: sl.LiveSettings) -> None:
    spare = [n for n in xeons if n != o.refused_node]
    half_m = w.allocatable_m(ALWAYS_ON) // 2
    steady_m = w.free_m(ALWAYS_ON) - half_m  # svc-0 keeps room for one burst Pod, no more
    w.create(pod("steady", steady_m, host=ALWAYS_ON))
    w.until(
        "the steady Pod bound and the spare nodes off",
        lambda: w.pods["steady"].bound_s is not None and w.off(spare),
        240,
    )
    start = max(w.now(), FIRST_BURST_AFTER_S)
    for i in range(BURSTS):
        at = start + i * s.forecast_day_s
        w.until(f"burst {i + 1}'s time", lambda at=at: w.now() >= at, at - w.now() + 30)  # type: ignore[misc]
        burst = sl.Burst(i + 1, w.now())
        burst.pods = [w.create(pod(f"burst{i + 1}-{j}", half_m)) for j in range(BURST_PODS)]
        burst.created_s = burst.pods[0].created_s
        o.bursts.append(burst)
        w.until(
            f"burst {i + 1} bound",
            lambda b=burst: all(p.bound_s is not None for p in b.pods),  # type: ignore[misc]
            s.resume_timeout_s,
        )
        hold_until = w.now() + HOLD_S
        w.until("the hold", lambda h=hold_until: w.now() >= h, HOLD_S + 30)  # type: ignore[misc]
        w.delete([p.name for p in burst.pods])
        if i + 1 < BURSTS:
            try:  # not fatal: the next burst then finds a node on, and the checks say so
                w.until(
                    f"the spare nodes off after burst {i + 1}",
                    lambda: w.off(spare),
                    max(5.0, start + (i + 1) * s.forecast_day_s - w.now() - 5.0),
                )
            except RuntimeFailure as e:
                w.progress(f"(not all spare nodes off before burst {i + 2}: {e})")


def run(
    ctx: Context, rendered: RenderedSpec, values_files: Sequence[Path], daemonset: dict[str, Any], crd_dir: Path
) -> int:
    settings, state = ctx.settings, ctx.state
    run = open_run(state.runs, "suspend-live")
    run_dir, progress = run.dir, run.progress
    ctx = ctx.with_progress(progress)
    env = sl.controller_env(yaml.safe_load(p.read_text()) for p in values_files)
    live = sl.LiveSettings.from_env(env, settings.timing.controller_interval_s)
    progress(
        f"simcluster suspend-live: spec {rendered.spec.name}, timing {settings.timing.name} "
        f"(power-time-scale {settings.timing.power_time_scale:g}), results in {run_dir}"
    )
    o = sl.Observed(always_on=ALWAYS_ON)
    xeons = [n for n in rendered.node_names if n != ALWAYS_ON]
    try:
        process.up(ctx, rendered, crd_dir=crd_dir, telemetry_mode=settings.telemetry)
        deploy(ctx, rendered, DeployOptions(list(values_files), daemonset, workload=False))
        w = Watcher(ctx, o, time.monotonic(), progress)
        _refused_phase(w, o, xeons, live, state)
        _ahead_phase(w, o, xeons, live)
    except (RuntimeFailure, k8s.ApiException, OSError, ValueError) as e:
        o.error = str(e)
        progress(f"aborted: {e}")
    results = sl.evaluate(o, live)
    passed = not o.error and all(ok for _, ok, _ in results)
    summary = {
        "check": "suspend-live",
        "status": "pass" if passed else "fail",
        "spec": rendered.spec.name,
        "timing": settings.timing.name,
        "powerTimeScale": settings.timing.power_time_scale,
        **run.stamp(),
        "error": o.error or None,
        "controllerEnv": env,
        "settings": asdict(live),
        "refused": {
            "node": o.refused_node,
            "otherNode": o.other_node,
            "faultSetS": o.fault_set_s,
            "refusedPowerOns": o.refused_drawn,
            "pod": asdict(o.refused_pod) if o.refused_pod else None,
        },
        "bursts": [
            {"index": b.index, "createdS": b.created_s, "pods": [asdict(p) | {"waitS": p.wait_s} for p in b.pods]}
            for b in o.bursts
        ],
        "timeline": sl.timeline(o),
        "assertions": [{"name": n, "status": "pass" if ok else "fail", "observed": text} for n, ok, text in results],
    }
    return run.finish(summary, results, lambda: tear_down(state, settings.keep, progress), width=38)
