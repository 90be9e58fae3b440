"""``simcluster suspend``: an idle emulated node is suspended through its BMC and resumed by a Pod.

Its own command, not a smoke step: the smoke loads every Node (no node is ever idle), restarts the
simulator and the controller manager halfway (either would reset a suspend in flight), and a
suspend-and-resume cycle adds a minute; a separate, small cluster (``specs/suspend.yaml``: two
Xeon nodes in one pool, floor one powered node) keeps both runs short and independent.

The sequence, on the process runtime with ``values/suspend-values.yaml`` (POWER_POLICY
idle_suspend_v1, SUSPEND_AFTER 20s) and no workload runner, the timing's ``power_time_scale``
shortening boots (ci: 240 s of a Xeon's boot in 12 s):

1. one node is cordoned and tainted ``joulie.io/suspended`` (NodeTwin ``suspending``) after
   SUSPEND_AFTER, the other kept as the pool's floor;
2. its BMC powers it off: the emulator's truth says ``off`` and its host power is the profile's
   standby power; the Node goes NotReady and its agent process stops (``runtimes/power.py``),
   both seen before the Pod is created;
3. a Pod that fits only that node (``nodeSelector kubernetes.io/hostname``) is created: the
   controller powers the node on, the boot ends, the Node is Ready, uncordoned, and the Pod runs.

Every step's time goes into ``runs/<UTC>-suspend/summary.json`` (``timeline``) with the checks.
The evaluation (``evaluate``) is pure.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from joulie_api import names
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.deploy.processes import deployed_alive, pid_key
from joulie_simcluster.deploy.start import DeployOptions, deploy
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.nodes import KWOK_TAINT_KEY
from joulie_simcluster.runtimes import kube, process
from joulie_simcluster.smoke.results import open_run, tear_down

DEFAULT_SPEC = Path("simulated-cluster/specs/suspend.yaml")
DEFAULT_VALUES = Path("simulated-cluster/values/suspend-values.yaml")
POD_NAME = "suspend-check-wake"
POD_NAMESPACE = "default"
STANDBY_TOLERANCE_W = 0.5


@dataclass
class Observed:
    """What the run saw; times are seconds since the deploy ended (None: never seen)."""

    node: str = ""
    timeline: dict[str, float] = field(default_factory=dict)
    standby_w: float | None = None
    expected_standby_w: float | None = None
    agent_stopped_while_off: bool = False
    agent_running_after_boot: bool = False
    twin_states: list[str] = field(default_factory=list)
    boots: int | None = None
    other_node_stayed_on: bool = True
    error: str = ""


EVENTS = ("cordoned", "off", "not-ready", "agent-stopped", "pod-created", "power-on", "on", "ready", "uncordoned", "pod-running")


def evaluate(o: Observed) -> list[tuple[str, bool, str]]:
    """The checks, each (name, passed, what was seen)."""
    t = o.timeline
    out: list[tuple[str, bool, str]] = []

    def order(a: str, b: str) -> bool:
        return a in t and b in t and t[a] <= t[b]

    out.append(("idle-node-cordoned", "cordoned" in t,
                f"{o.node or 'no node'} cordoned and tainted at +{t['cordoned']:.1f}s" if "cordoned" in t else "no node was cordoned"))
    out.append(("powered-off-through-bmc", order("cordoned", "off"),
                f"emulator says off at +{t['off']:.1f}s" if "off" in t else "the emulator never said off"))
    standby_ok = (o.standby_w is not None and o.expected_standby_w is not None
                  and abs(o.standby_w - o.expected_standby_w) <= STANDBY_TOLERANCE_W)
    out.append(("draws-standby-power", standby_ok,
                f"host power while off {o.standby_w} W, profile standby {o.expected_standby_w} W"))
    seen = f"Node NotReady at +{t['not-ready']:.1f}s" if "not-ready" in t else "Node never NotReady"
    agent = "agent process stopped" if o.agent_stopped_while_off else "agent process still running"
    out.append(("off-node-not-ready-agent-stopped", "not-ready" in t and o.agent_stopped_while_off, f"{seen}; {agent}"))
    out.append(("resumed-for-pending-pod", order("pod-created", "power-on") and order("power-on", "on"),
                f"power-on at +{t['power-on']:.1f}s, on at +{t['on']:.1f}s" if "power-on" in t and "on" in t
                else "the node was not powered on for the Pod"))
    out.append(("pod-runs-on-resumed-node", order("ready", "pod-running") and order("uncordoned", "pod-running"),
                f"Ready +{t.get('ready', -1):.1f}s, uncordoned +{t.get('uncordoned', -1):.1f}s, "
                f"Pod Running +{t.get('pod-running', -1):.1f}s; agent running again: {o.agent_running_after_boot}"))
    out.append(("floor-kept", o.other_node_stayed_on, "the pool's other node stayed on (SUSPEND_MIN_POWERED 1)"
                if o.other_node_stayed_on else "the pool's other node was powered off too"))
    return out


def wake_pod(node: str) -> dict[str, Any]:
    """A Pod that fits only `node`: pinned by hostname, tolerating KWOK's taint but not the suspend taint."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": POD_NAME, "namespace": POD_NAMESPACE,
                         "annotations": {names.ANNOTATION_WORKLOAD_CLASS: names.WORKLOAD_CLASS_STANDARD}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                     "tolerations": [{"key": KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{"name": "work", "image": "busybox",
                                     "resources": {"requests": {"cpu": "1", "memory": "256Mi"}}}]}}


class Watcher:
    """Reads the cluster and the emulator's truth once a second and records each event once."""

    def __init__(self, ctx: Context, out: Observed, t0: float, progress: Callable[[str], None]):
        self.ctx, self.o, self.t0, self.progress = ctx, out, t0, progress
        self.api = kube.core_api(ctx.state.kubeconfig)

    def mark(self, event: str, detail: str = "") -> None:
        if event not in self.o.timeline:
            self.o.timeline[event] = round(time.monotonic() - self.t0, 1)
            self.progress(f"+{self.o.timeline[event]:6.1f}s {event} {self.o.node} {detail}".rstrip())

    def truth(self) -> dict[str, dict[str, Any]]:
        env = self.ctx.state.read_deploy_env() or {}
        with urllib.request.urlopen(f"http://{env['SIMULATOR_HTTP']}/debug/emulate", timeout=10) as resp:
            return {n["name"]: n for n in json.loads(resp.read())["nodes"]}

    def twins(self) -> dict[str, dict[str, Any]]:
        return {o["spec"]["nodeName"]: o for o in kube.kube_list(self.ctx.state.kubeconfig, kube.NODETWINS)}

    def agent_alive(self, node: str) -> bool:
        env = self.ctx.state.read_deploy_env() or {}
        pid = env.get(pid_key(f"agent-{node}"), "")
        return pid.isdigit() and deployed_alive(f"agent-{node}", int(pid), env)

    def look(self) -> None:
        o = self.o
        twins = self.twins()
        if not o.node:
            for name, tw in sorted(twins.items()):
                if ((tw.get("status") or {}).get("power") or {}).get("state") == "suspending":
                    o.node = name
                    break
            if not o.node:
                return
        power = (twins.get(o.node, {}).get("status") or {}).get("power") or {}
        state = str(power.get("state", ""))
        if not o.twin_states or o.twin_states[-1] != state:
            o.twin_states.append(state)
        o.boots = power.get("boots", o.boots)
        node = self.api.read_node(o.node)
        truth = self.truth()
        emu = str((truth[o.node].get("power") or {}).get("state"))
        ready = kube.node_ready(self.api.api_client.sanitize_for_serialization(node))
        cordoned = bool(node.spec and node.spec.unschedulable)
        if cordoned:
            self.mark("cordoned", f"(NodeTwin {state})")
        if emu == "off" and "cordoned" in o.timeline:
            self.mark("off", f"(host {truth[o.node]['host']['powerW']} W)")
            if o.standby_w is None:
                o.standby_w = float(truth[o.node]["host"]["powerW"])
                o.expected_standby_w = float(truth[o.node]["power"]["standbyW"])
        if "off" in o.timeline and not ready:
            self.mark("not-ready")
            if "pod-created" not in o.timeline and not self.agent_alive(o.node):
                o.agent_stopped_while_off = True
                self.mark("agent-stopped")
        if "pod-created" in o.timeline and emu in ("booting", "on"):
            self.mark("power-on", f"(emulator {emu})")
        if "power-on" in o.timeline and emu == "on":
            self.mark("on")
        if "on" in o.timeline and ready:
            self.mark("ready")
        if "ready" in o.timeline and not cordoned:
            self.mark("uncordoned", f"(NodeTwin {state})")
        for other, t in truth.items():
            if other != o.node and (t.get("power") or {}).get("state") != "on":
                o.other_node_stayed_on = False
        if "pod-created" in o.timeline:
            pod = self.api.read_namespaced_pod(POD_NAME, POD_NAMESPACE)
            if pod.status and pod.status.phase == "Running" and pod.spec and pod.spec.node_name == o.node:
                self.mark("pod-running")
                o.agent_running_after_boot = self.agent_alive(o.node)

    def until(self, event: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while event not in self.o.timeline:
            if time.monotonic() > deadline:
                raise RuntimeFailure(f"no {event} within {timeout_s:.0f}s (seen: {', '.join(self.o.timeline) or 'nothing'}; "
                                     f"NodeTwin power states {self.o.twin_states})")
            try:
                self.look()
            except (OSError, k8s.ApiException, KeyError) as e:
                self.progress(f"(reading the cluster: {e!r}; again)")
            time.sleep(1.0)


def run(ctx: Context, rendered: RenderedSpec, values_files: Sequence[Path], daemonset: dict[str, Any], crd_dir: Path) -> int:
    settings, state = ctx.settings, ctx.state
    run = open_run(state.runs, "suspend")
    run_dir, progress = run.dir, run.progress
    ctx = ctx.with_progress(progress)
    progress(f"simcluster suspend: spec {rendered.spec.name}, timing {settings.timing.name} "
             f"(power-time-scale {settings.timing.power_time_scale:g}), results in {run_dir}")
    o = Observed()
    try:
        process.up(ctx, rendered, crd_dir=crd_dir, telemetry_mode=settings.telemetry)
        deploy(ctx, rendered, DeployOptions(list(values_files), daemonset, workload=False))
        w = Watcher(ctx, o, time.monotonic(), progress)
        w.until("cordoned", 180)
        w.until("off", 120)
        w.until("not-ready", 60)
        w.until("agent-stopped", 30)
        kube.core_api(state.kubeconfig).create_namespaced_pod(POD_NAMESPACE, wake_pod(o.node))  # type: ignore[arg-type]
        w.mark("pod-created", f"(Pod {POD_NAMESPACE}/{POD_NAME}, nodeSelector kubernetes.io/hostname={o.node})")
        w.until("pod-running", 240)
    except (RuntimeFailure, k8s.ApiException, OSError) as e:
        o.error = str(e)
        progress(f"aborted: {e}")
    results = evaluate(o)
    passed = not o.error and all(ok for _, ok, _ in results)
    summary = {
        "check": "idle-node-suspend-resume", "status": "pass" if passed else "fail",
        "spec": rendered.spec.name, "timing": settings.timing.name, "powerTimeScale": settings.timing.power_time_scale,
        **run.stamp(),
        "node": o.node, "error": o.error or None,
        "timeline": [{"event": e, "atS": o.timeline[e]} for e in EVENTS if e in o.timeline],
        "observed": {k: v for k, v in asdict(o).items() if k not in ("timeline", "node", "error")},
        "assertions": [{"name": n, "status": "pass" if ok else "fail", "observed": text} for n, ok, text in results],
    }
    timeline = "timeline (s after deploy): " + ", ".join(f"{e} +{o.timeline[e]:.1f}" for e in EVENTS if e in o.timeline)
    return run.finish(summary, results, lambda: tear_down(state, settings.keep, progress), width=34, notes=[timeline])

