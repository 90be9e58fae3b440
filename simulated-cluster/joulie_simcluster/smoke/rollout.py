"""``simcluster daemonset``: the chart's agent DaemonSet on real kubelet nodes and a rolling update of
it with the caps sampled throughout (simulated-cluster/KUBELET.md "The agent DaemonSet").

On the kubelet runtime with ``SIMCLUSTER_KUBELET_NODES`` 2 or 3: ``up`` starts the agent nodes (each a
kubelet and a containerd of its own, registered under a spec Node's name), ``deploy`` installs the
chart with ``agent.mode=daemonset`` (one agent Pod per agent node, reading that Node's emulated tree),
no workload runner. Then:

1. ``kubectl get ds,pods -o wide`` as lines: the DaemonSet and one agent Pod per agent node;
2. **before**: the smoke's S04 (the caps in the emulated files equal NodeTwin.spec) and S05 (power at
   or under the caps) on the agent nodes, sampled every :data:`SAMPLE_S` seconds;
3. **during**: the agent image re-tagged in every agent node's containerd (same content, a new tag:
   nothing can be pulled here) and ``helm upgrade`` with ``agent.image.tag`` set to it: the DaemonSet
   rolls (RollingUpdate, maxUnavailable 1), node after node, while S04/S05 are sampled the same way,
   with which agent Pod (tag, ready) each node had at that moment;
4. **after**: the same samples once every node runs the new tag; then the caps lowered to 50 %
   (``helm upgrade`` of the controller manager's env, the smoke's S09 step) must reach the files
   through the new agents (a stale file would pass S04 at 80 % but never this).

Every sample and the verdicts go into ``runs/<UTC>-daemonset/summary.json``. The verdicts
(:func:`judge`) are pure.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import shutil
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.deploy import onkubelet
from joulie_simcluster.deploy.processes import stop_deployed
from joulie_simcluster.deploy.start import DeployOptions, deploy
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes import kube
from joulie_simcluster.runtimes.kubelet import chart as kubelet_chart
from joulie_simcluster.runtimes.kubelet.agentnodes import agent_nodes_of
from joulie_simcluster.runtimes.kubelet.chart_values import pod_line, pod_ready
from joulie_simcluster.runtimes.kubelet.containerd import ctr
from joulie_simcluster.runtimes.kubelet.node import NAMESPACE, NodePaths
from joulie_simcluster.runtimes.registry import runtime_for
from joulie_simcluster.runtimes.runtime import KUBELET, UpRequest
from joulie_simcluster.smoke import checks
from joulie_simcluster.smoke.results import MemorySampler, open_run
from joulie_simcluster.state import StateDir

SAMPLE_S = 1.0
"""Seconds between two samples of the caps (a node's agent is gone for its Pod's restart: ~10-60 s here)."""
BEFORE_S = 15.0
AFTER_S = 20.0
ROLLOUT_TIMEOUT_S = 600.0
LOWERED_PCT = 50.0
DS_NAME = "joulie-agent"
ROLLOUT_TAG_SUFFIX = "-rollout"


@dataclass
class Sample:
    """One look at the agent nodes: seconds since the first sample, the phase, S04's and S05's
    verdicts, and each node's agent Pod then ("<tag> ready", "<tag> not ready", "none")."""

    at_s: float
    phase: str
    caps_ok: bool
    caps: str
    power_ok: bool
    power: str
    agents: dict[str, str] = field(default_factory=dict)


def agents_by_node(pods: Sequence[Mapping[str, Any]], nodes: Sequence[str]) -> dict[str, str]:
    """Each agent node's DaemonSet agent as a word: its image tag and whether it is ready, "none"
    without one (a Pod being deleted counts as none: it no longer runs the agent's loop)."""
    out = dict.fromkeys(nodes, "none")
    count = dict.fromkeys(nodes, 0)
    for pod in pods:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        if not any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
            continue
        node = spec.get("nodeName")
        if node not in out or meta.get("deletionTimestamp"):
            continue
        image = str(((spec.get("containers") or [{}])[0]).get("image", "?"))
        word = f"{image.rpartition(':')[2]} {'ready' if pod_ready(pod) else 'not ready'}"
        out[node] = word if out[node] == "none" or "not ready" in out[node] else out[node]
        count[node] += 1
    # Two running agents on one node (a DaemonSet surges none) is a defect the words must not hide.
    return {n: (f"{count[n]} agents" if count[n] > 1 else w) for n, w in out.items()}


def ds_line(ds: Mapping[str, Any]) -> str:
    """A DaemonSet as ``kubectl get ds -o wide`` shows it: desired, current, ready, up-to-date,
    available, node selector, image."""
    st, spec = ds.get("status") or {}, ds.get("spec") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    selector = ",".join(f"{k}={v}" for k, v in (pod.get("nodeSelector") or {}).items()) or "<none>"
    image = ((pod.get("containers") or [{}])[0]).get("image", "?")
    return (f"daemonset.apps/{(ds.get('metadata') or {}).get('name', '?')}  desired {st.get('desiredNumberScheduled', 0)}"
            f"  current {st.get('currentNumberScheduled', 0)}  ready {st.get('numberReady', 0)}"
            f"  up-to-date {st.get('updatedNumberScheduled', 0)}  available {st.get('numberAvailable', 0)}"
            f"  node-selector {selector}  image {image}")


def rolled_out(ds: Mapping[str, Any], tag: str) -> bool:
    """The DaemonSet's template names `tag`, the controller has seen it, and every scheduled Pod is
    updated and available."""
    st, meta = ds.get("status") or {}, ds.get("metadata") or {}
    pod = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    image = str(((pod.get("containers") or [{}])[0]).get("image", ""))
    want = int(st.get("desiredNumberScheduled", 0))
    return (image.endswith(f":{tag}") and int(st.get("observedGeneration", 0)) >= int(meta.get("generation", 1))
            and want > 0 and int(st.get("updatedNumberScheduled", 0)) == want
            and int(st.get("numberAvailable", 0)) == want)


def judge(samples: Sequence[Sample], nodes: Sequence[str], new_tag: str, lowered: tuple[bool, str] | None,
          ) -> list[tuple[str, bool, str]]:
    """The verdicts, each (name, passed, what was seen): one agent per node before; every sample of
    every phase with S04 and S05 passing; the rollout sampled while a node had no ready agent (else
    the run shows nothing about the gap); every node on the new tag after; the lowered caps reached
    the files through the new agents."""
    out: list[tuple[str, bool, str]] = []
    phase = {p: [s for s in samples if s.phase == p] for p in ("before", "during", "after")}
    first = phase["before"][:1]
    one_each = bool(first) and bool(nodes) and all(first[0].agents.get(n, "none").endswith(" ready") for n in nodes)
    out.append(("one-agent-per-node", one_each,
                ", ".join(f"{n}: {first[0].agents.get(n, 'none')}" for n in nodes) if first else "no sample before"))
    for p, got in phase.items():
        bad = [s for s in got if not (s.caps_ok and s.power_ok)]
        text = (f"{len(got)} samples, {len(got) - len(bad)} with S04 and S05 passing"
                + (f"; first failing at +{bad[0].at_s:.1f}s: {bad[0].caps if not bad[0].caps_ok else bad[0].power}"
                   if bad else f"; last: {got[-1].caps}; {got[-1].power}" if got else ""))
        out.append((f"caps-enforced-{p}", bool(got) and not bad, text))
    gaps = [s for s in phase["during"] if any(not w.endswith(" ready") for w in s.agents.values())]
    out.append(("rollout-gap-sampled", bool(gaps),
                f"{len(gaps)} samples with a node's agent not ready, caps checked in each; gaps seen on "
                + (", ".join(sorted({n for g in gaps for n, w in g.agents.items() if not w.endswith(" ready")}))
                   or "no node")
                + (f" (e.g. +{gaps[0].at_s:.1f}s: " + ", ".join(f"{n} {w}" for n, w in gaps[0].agents.items()) + ")"
                   if gaps else "")))
    last = phase["after"][-1:] or phase["during"][-1:]
    on_new = bool(last) and all(w == f"{new_tag} ready" for w in last[0].agents.values())
    out.append(("every-node-on-the-new-tag", on_new,
                ", ".join(f"{n}: {last[0].agents.get(n, 'none')}" for n in nodes) if last else "no sample"))
    if lowered is not None:
        out.append((f"new-agents-apply-caps-{LOWERED_PCT:g}pct", lowered[0], lowered[1]))
    return out


class Sampler:
    """Reads the twins, the hardware, the emulator's truth and the agent Pods; S04/S05 on the agent nodes."""

    def __init__(self, ctx: Context, nodes: Sequence[str], t0: float) -> None:
        self.ctx, self.nodes, self.t0 = ctx, list(nodes), t0
        env = ctx.state.read_deploy_env() or {}
        self.truth_url = f"http://{env['SIMULATOR_HTTP']}/debug/emulate"

    def _by_node(self, path: str) -> dict[str, dict[str, Any]]:
        return {o["spec"]["nodeName"]: o for o in kube.kube_list(self.ctx.state.kubeconfig, path)
                if o["spec"]["nodeName"] in self.nodes}

    def truth(self) -> dict[str, dict[str, Any]]:
        with urllib.request.urlopen(self.truth_url, timeout=10) as resp:
            return {n["name"]: n for n in json.loads(resp.read())["nodes"] if n["name"] in self.nodes}

    def caps(self, want_pct: float | None = None) -> checks.Assertion:
        return checks.caps_match("S04", self._by_node(kube.NODETWINS), self._by_node(kube.NODEHARDWARES), self.truth(),
                                 want_pct)

    def sample(self, phase: str) -> Sample:
        try:
            caps, power = self.caps(), checks.power_honours_caps("S05", self.truth())
            pods = kubelet_chart.release_pods(self.ctx.state)
            s = Sample(time.monotonic() - self.t0, phase, caps.status == "pass", caps.observed,
                       power.status == "pass", power.observed, agents_by_node(pods, self.nodes))
        except (OSError, KeyError, ValueError, RuntimeFailure) as e:
            s = Sample(time.monotonic() - self.t0, phase, False, f"reading failed: {type(e).__name__}: {e}", False, "-")
        self.ctx.progress(f"[{s.phase:<6} +{s.at_s:5.1f}s] S04 {'ok' if s.caps_ok else 'FAIL'} ({s.caps}); "
                          f"S05 {'ok' if s.power_ok else 'FAIL'}; agents: "
                          + ", ".join(f"{n} {w}" for n, w in s.agents.items()))
        return s


def show_ds_and_pods(ctx: Context) -> list[str]:
    """``kubectl get ds,pods -o wide`` of the release as lines (printed too)."""
    lines = [ds_line(ds) for ds in kube.kube_list(ctx.state.kubeconfig, f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets")]
    lines += [pod_line(p) for p in kubelet_chart.release_pods(ctx.state)]
    for line in lines:
        print(line, file=ctx.progress.out, flush=True)
    return lines


def retag_agent_image(ctx: Context, indexes: Sequence[int], image: str, tag: str) -> str:
    """The agent image under a new tag in every agent node's containerd (same layers: a rollout of a
    new tag without a registry); returns the new reference."""
    new = f"{image.rpartition(':')[0]}:{tag}"
    for i in indexes:
        r = ctr(NodePaths.under(ctx.state.root, i), "images", "tag", "--force", image, new)
        if r.returncode != 0:
            raise RuntimeFailure(f"ctr images tag {image} {new} on agent node {i} failed: {(r.stdout + r.stderr).strip()}")
    return new


def _helm_upgrade_with(ctx: Context, update: Mapping[str, Any], name: str) -> Callable[[], float]:
    """A ``helm upgrade`` of the recorded install with `update` over it (written to chart-values.<name>.yaml);
    once done, deploy.env's HELM_VALUES names that file too (a later upgrade, the lowered caps, keeps the
    new tag instead of rolling the DaemonSet back) and its Pods as they run now."""
    env = ctx.state.read_deploy_env() or {}
    files = [Path(p) for p in env.get("HELM_VALUES", "").split(",") if p]
    if not files:
        raise RuntimeFailure(f"no chart install recorded in {ctx.state.deploy_env}")
    extra = kubelet_chart.chart_values_file(ctx.state).with_name(f"chart-values.{name}.yaml")
    extra.write_text(yaml.safe_dump(dict(update), sort_keys=False))

    def upgrade() -> float:
        took = kubelet_chart.helm_install(ctx.state, [*files, extra], ctx.progress)
        now = ctx.state.read_deploy_env() or env
        urls = {k.removeprefix("URL_"): v for k, v in now.items() if k.startswith("URL_")}
        ctx.state.write_deploy_env({**now, **kubelet_chart.record_pods(ctx.state, urls),
                                    "HELM_VALUES": ",".join(str(p) for p in [*files, extra])})
        return took
    return upgrade


def _roll(ctx: Context, sampler: Sampler, samples: list[Sample], new_tag: str) -> None:
    """helm upgrade to the new tag in a thread; samples until the DaemonSet has rolled out and helm returned."""
    upgrade = _helm_upgrade_with(ctx, {"agent": {"image": {"tag": new_tag}}}, "rollout")
    failure: list[BaseException] = []

    def run() -> None:
        try:
            upgrade()
        except BaseException as e:  # - reported by the sampling loop
            failure.append(e)

    helm = threading.Thread(target=run, name="helm-rollout", daemon=True)
    helm.start()
    deadline = time.monotonic() + ROLLOUT_TIMEOUT_S
    ds_path = f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets"
    while True:
        samples.append(sampler.sample("during"))
        ds = next((d for d in kube.kube_list(ctx.state.kubeconfig, ds_path) if d["metadata"]["name"] == DS_NAME), {})
        if failure:
            raise RuntimeFailure(f"helm upgrade to {new_tag} failed: {failure[0]}")
        if rolled_out(ds, new_tag) and not helm.is_alive():
            ctx.progress(ds_line(ds))
            return
        if time.monotonic() > deadline:
            raise RuntimeFailure(f"the DaemonSet did not roll out to {new_tag} within {ROLLOUT_TIMEOUT_S:.0f}s: {ds_line(ds)}")
        time.sleep(SAMPLE_S)


def _sample_for(sampler: Sampler, samples: list[Sample], phase: str, seconds: float) -> None:
    end = time.monotonic() + seconds
    while True:
        samples.append(sampler.sample(phase))
        if time.monotonic() >= end:
            return
        time.sleep(SAMPLE_S)


def _lower_caps(ctx: Context, sampler: Sampler) -> tuple[bool, str]:
    """The smoke's halfway step: caps to 50 % through the controller manager; the new agents must
    write them (within 120 s)."""
    onkubelet.restart_controller(ctx.state, {k: f"{LOWERED_PCT:g}" for k in (
        "CPU_PERFORMANCE_CAP_PCT_OF_MAX", "GPU_PERFORMANCE_CAP_PCT_OF_MAX", "CPU_ECO_CAP_PCT_OF_MAX",
        "GPU_ECO_CAP_PCT_OF_MAX")}, ctx.progress)
    deadline, t0 = time.monotonic() + 120, time.monotonic()
    while True:
        try:
            a = sampler.caps(LOWERED_PCT)
        except (OSError, KeyError, ValueError, RuntimeFailure) as e:
            a = checks.Assertion("S04", "fail", f"reading failed: {e}", "")
        if a.status == "pass" or time.monotonic() > deadline:
            return a.status == "pass", f"{a.observed} (after {time.monotonic() - t0:.1f}s)"
        time.sleep(2.0)


def _record_run(state: StateDir, run_dir: Path) -> None:
    """The cluster's and the deploy's records into the run, and ``runs/latest`` pointed at it: ``down``
    then copies the Pods' logs into ``run_dir/logs`` (it finds the run by its deploy.env), where
    ``simcluster logs agent --node N`` reads them once the state dir is gone."""
    for f in ("cluster.env", "deploy.env", "spec.yaml"):
        if (state.root / f).is_file():
            shutil.copy2(state.root / f, run_dir / f)
    latest = state.runs / "latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(run_dir.name)


def run(ctx: Context, rendered: RenderedSpec, values_files: Sequence[Path], daemonset: dict[str, Any], crd_dir: Path) -> int:
    settings, state = ctx.settings, ctx.state
    if settings.runtime != KUBELET or settings.kubelet_nodes < 2:
        raise RuntimeFailure("simcluster daemonset runs the agent DaemonSet on real kubelet nodes: set "
                             "SIMCLUSTER_RUNTIME=kubelet SIMCLUSTER_HWEMU=files SIMCLUSTER_KUBELET_NODES=2 (or 3)")
    run = open_run(state.runs, "daemonset")
    run_dir, progress = run.dir, run.progress
    ctx = ctx.with_progress(progress)
    runtime = runtime_for(settings.runtime)
    samples: list[Sample] = []
    nodes: list[str] = []
    shown: list[str] = []
    lowered: tuple[bool, str] | None = None
    error, new_tag = "", ""
    t_up = t_deploy = t_roll = 0.0
    memory = MemorySampler(state)
    memory.start()
    try:
        t = time.monotonic()
        runtime.up(ctx, rendered, UpRequest(crd_dir, settings.telemetry, lambda: 0))
        t_up = time.monotonic() - t
        cluster = state.read_cluster_env() or {}
        nodes = agent_nodes_of(cluster)
        t = time.monotonic()
        deploy(ctx, rendered, DeployOptions(list(values_files), daemonset, workload=False))
        t_deploy = time.monotonic() - t
        shown = show_ds_and_pods(ctx)
        sampler = Sampler(ctx, nodes, time.monotonic())
        _sample_for(sampler, samples, "before", BEFORE_S)
        image = cluster["IMAGE_AGENT"]
        new_tag = image.rpartition(":")[2] + ROLLOUT_TAG_SUFFIX
        retag_agent_image(ctx, range(1, len(nodes) + 1), image, new_tag)
        t = time.monotonic()
        _roll(ctx, sampler, samples, new_tag)
        t_roll = time.monotonic() - t
        _sample_for(sampler, samples, "after", AFTER_S)
        shown += ["(after the rollout)", *show_ds_and_pods(ctx)]
        lowered = _lower_caps(ctx, sampler)
    except (RuntimeFailure, OSError, KeyError) as e:
        error = f"{type(e).__name__}: {e}"
        progress(f"aborted: {error}")
    memory.stopped.set()
    with contextlib.suppress(Exception):
        memory.peak_kib = max(memory.peak_kib, memory.sample())
    results = judge(samples, nodes, new_tag, lowered)
    passed = not error and all(ok for _, ok, _ in results)
    summary = {
        "check": "agent-daemonset-rollout", "status": "pass" if passed else "fail", "runtime": KUBELET,
        "kubeletNodes": settings.kubelet_nodes, "agentNodes": nodes, "spec": rendered.spec.name,
        **run.stamp(),
        "seconds": {"up": round(t_up, 1), "deploy": round(t_deploy, 1), "rollout": round(t_roll, 1)},
        "peakRssMiB": round(memory.peak_kib / 1024, 1), "sampleEveryS": SAMPLE_S, "newTag": new_tag, "error": error or None, "getDsPods": shown,
        "samples": [asdict(s) for s in samples],
        "assertions": [{"name": n, "status": "pass" if ok else "fail", "observed": text} for n, ok, text in results],
    }
    _record_run(state, run_dir)

    def teardown() -> None:
        if not settings.keep:
            runtime.down(ctx, stop_deployed)

    took = (dt.datetime.now(dt.UTC) - run.started).total_seconds()
    return run.finish(summary, results, teardown, width=30,
                      detail=f" in {took:.0f}s, peak memory {memory.peak_kib / 1024:.0f} MiB")
