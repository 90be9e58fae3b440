"""``simcluster smoke``: up, deploy, the checks, the run results, down (unless SIMCLUSTER_KEEP=1).

The sequence (caps as the smoke values set them: every Node performance, CPU and GPU at 80 %):

1. load on every emulated Node from real Pods: ``deploy`` started the workload runner on the smoke
   trace (:mod:`joulie_simcluster.smoke.load`: one Pod per Node, pinned to it, asking all but 2 of its cores and
   every GPU at utilisation 1), the real kube-scheduler binds them and the runner sets each Node's
   load on the emulator; the smoke waits until the emulator's truth shows it, so caps bind;
2. S01-S07 at 80 %: components, placement, NodeHardware, caps in the files, power under caps,
   measured power vs truth, profile labels;
3. the simulator is killed and restarted (FUSE views gone, then back) while the agents run on; the
   workload runner sends the loads the restart lost, and the smoke waits for them again;
4. halfway: the controller manager is restarted with the caps at 50 % and half the Nodes eco
   (a changed install); S09 checks the new caps reach the files and bind, S08 that the agents
   that lived through the simulator restart applied them;
5. pods of each workload class through the real kube-scheduler and the extender: S10-S12;
6. the facility: the outdoor ambient raised 10 °C through the simulator's control
   (``POST /debug/facility/ambient``); S13 reads what the controller's facility poller reads from
   Prometheus and the NodeTwins' cooling stress against /debug/emulate's facility truth, then
   puts the ambient back;
7. the GPU SM clock lock (S14, :mod:`joulie_simcluster.smoke.lockstep`): set on one NVIDIA Node's
   NodeTwin, lost by a device reset, applied again, released;
8. the energy receipts (S16, :mod:`joulie_simcluster.smoke.receipts`): the load Pods' annotations as the
   controller manager writes them every RECEIPT_WINDOW; and (S18, :mod:`joulie_simcluster.smoke.receiptaccuracy`)
   their counters over ten windows against the node meters and the emulator's per-Pod truth.

Each check is recorded even when an earlier one failed; an exception in a step records that step's
checks as failed with the error, never a silent pass.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

from joulie_api import names
from joulie_hwprofiles.schema import builtin_profile
from joulie_simcluster import telemetry, telemetrytls
from joulie_simcluster.agents import select_agents
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.deploy import onkubelet
from joulie_simcluster.deploy.processes import deployed_alive, pid_key, recorded_deploy_pids
from joulie_simcluster.deploy.reload import restart_process
from joulie_simcluster.deploy.reports import collector_report, component_reports, http_ok
from joulie_simcluster.deploy.start import DeployOptions, deploy
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.progress import Progress
from joulie_simcluster.runtimes import kube
from joulie_simcluster.runtimes.registry import smoke_runtime
from joulie_simcluster.runtimes.runtime import UpRequest
from joulie_simcluster.runtimes.supervision import control as supervisor
from joulie_simcluster.smoke import (
    checks,
    facilitystep,
    gpupodstep,
    lockstep,
    receiptaccuracystep,
    receiptstep,
    telemetryauthstep,
)
from joulie_simcluster.smoke import load as smokeload
from joulie_simcluster.smoke.checks import Assertion
from joulie_simcluster.smoke.results import (
    Deadline,
    MemorySampler,
    Tee,
    collect,
    git_state,
    release_cluster,
    write_results,
)
from joulie_simcluster.smoke.summary import RunRecord, build_summary, checks_table, run_dir_name, run_status
from joulie_workload.trace import load_trace

PHASE2_ENV = {
    "CPU_PERFORMANCE_CAP_PCT_OF_MAX": "50",
    "GPU_PERFORMANCE_CAP_PCT_OF_MAX": "50",
    "CPU_ECO_CAP_PCT_OF_MAX": "50",
    "GPU_ECO_CAP_PCT_OF_MAX": "50",
    "STATIC_HP_FRAC": "0.5",
}
TEST_NAMESPACE = "default"
LOAD_TIMEOUT_S = 180.0
"""How long the workload's Pods may take to be bound and their load to reach the emulator: a
scheduling cycle and a runner tick (1 s) when all goes well, the rest is room for a busy machine
and for the runner's gRPC channel to reconnect after the simulator restart."""


@dataclass(frozen=True)
class SmokeOptions:
    """What one smoke run uses beyond the settings (hwemu, timing, telemetry, keep and timeout come from there)."""

    values_files: list[Path]
    """The values files in helm's order (the chart's values.yaml first)."""
    daemonset: dict[str, Any]
    """The agent DaemonSet the install would create."""
    crd_dir: Path
    break_component: str | None = None
    """Kill this component after deploy on purpose, to see the checks fail and say why."""


class Smoke:
    """The three steps of checks against a deployed cluster; each records its Assertions."""

    def __init__(self, ctx: Context, rendered: RenderedSpec) -> None:
        self.state, self.spec, self.timing = ctx.state, rendered.spec, ctx.settings.timing
        self.progress: Callable[[str], None] = ctx.progress
        self.rendered = rendered
        self.assertions: list[Assertion] = []
        self.nodes = rendered.nodes
        self.node_names = rendered.node_names

    # --- reading the cluster and the truth ----------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        return self.state.read_deploy_env() or {}

    def process_alive(self, name: str) -> bool:
        env = self.env
        pid = env.get(pid_key(name), "")
        return pid.isdigit() and deployed_alive(name, int(pid), env)

    def truth(self) -> dict[str, dict[str, Any]]:
        url = f"http://{self.env['SIMULATOR_HTTP']}/debug/emulate"
        with urllib.request.urlopen(url, timeout=10) as resp:
            return {n["name"]: n for n in json.loads(resp.read())["nodes"]}

    def by_node(self, path: str) -> dict[str, dict[str, Any]]:
        return {o["spec"]["nodeName"]: o for o in kube.kube_list(self.state.kubeconfig, path)}

    def twins(self) -> dict[str, dict[str, Any]]:
        return self.by_node(kube.NODETWINS)

    def hardware(self) -> dict[str, dict[str, Any]]:
        return self.by_node(kube.NODEHARDWARES)

    def truth_scope(self) -> str:
        """What S06 compares with: whole-host power, or the components' sum where the mode has no host power."""
        return telemetry.mode(self.env.get("TELEMETRY", "otlp")).truth_scope()

    def agent_nodes(self) -> list[str]:
        return [n for n in self.env.get("AGENT_NODES", "").split(",") if n]

    def wait_for_load(self, timeout_s: float = LOAD_TIMEOUT_S) -> None:
        """Until the emulator's truth shows every Node under its workload Pod's load (as the
        workload engine computes it from the smoke trace); a RuntimeFailure naming the Nodes
        without it, their Pods and the workload log otherwise."""
        want = smokeload.expected_loads(self.nodes, load_trace(smokeload.trace_path(self.state.root)))
        t0 = time.monotonic()
        lacking: dict[str, str] = {}
        while True:
            try:
                lacking = smokeload.lacking_load(want, self.truth())
            except (OSError, KeyError, ValueError) as e:  # a restarting simulator: not serving yet
                lacking = {n: f"/debug/emulate unreadable: {type(e).__name__}: {e}" for n in want}
            if not lacking:
                self.progress(f"load from {len(want)} workload pods on {len(want)} Nodes "
                              f"({smokeload.load_summary(want)}) after {time.monotonic() - t0:.1f}s")
                return
            dead = [n for n in ("simulator", "workload") if not self.process_alive(n)]
            if dead:  # no use waiting out the timeout for what a dead process would have sent
                raise RuntimeFailure(
                    f"{len(lacking)} of {len(want)} Nodes lack the workload's load, and "
                    + ", ".join(f"{n} (log {self.state.log(n)})" for n in dead) + " is not running")
            if time.monotonic() - t0 > timeout_s:
                break
            time.sleep(1.0)
        try:
            pods = smokeload.pod_states(kube.kube_list(self.state.kubeconfig, smokeload.PODS_PATH))
        except (OSError, ValueError, RuntimeFailure) as e:
            pods = dict.fromkeys(lacking, f"pods unreadable: {e}")
        lines = "\n".join("  " + line for line in smokeload.describe_lacking(lacking, pods))
        raise RuntimeFailure(
            f"{len(lacking)} of {len(want)} Nodes lack the workload's load after {timeout_s:.0f}s:\n{lines}\n"
            f"see the workload runner's log {self.state.log('workload')}")

    def extender_counts(self) -> dict[str, float]:
        ok, body = http_ok(f"http://{self.env['EXTENDER_ADDR']}/metrics")
        out = {"filter": 0.0, "prioritize": 0.0}
        for line in body.splitlines() if ok else []:
            for verb in out:
                if line.startswith(f"joulie_scheduler_{verb}_requests_total{{"):
                    out[verb] += float(line.rsplit(" ", 1)[1])
        return out

    # --- recording ----------------------------------------------------------------------------

    def record(self, a: Assertion) -> Assertion:
        self.assertions.append(a)
        self.progress(f"{a.id} {a.name}: {a.status.upper()} — {a.observed}")
        return a

    def failed(self, ids: list[str], err: BaseException) -> None:
        for check_id in ids:
            if not any(a.id == check_id for a in self.assertions):
                self.record(Assertion(check_id, "fail", f"step failed: {type(err).__name__}: {err}", checks.CHECKS[check_id][1]))

    def until(self, check_id: str, evaluate: Callable[[], Assertion], timeout_s: float) -> Assertion:
        """Re-evaluates until the check passes or `timeout_s` passes; the last result counts."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                result = evaluate()
            except (OSError, KeyError, TypeError, ValueError, RuntimeFailure) as e:
                result = Assertion(check_id, "fail", f"reading the cluster failed: {type(e).__name__}: {e}",
                                   checks.CHECKS[check_id][1])
            if result.status == "pass" or time.monotonic() > deadline:
                return result
            time.sleep(1.0)

    # --- the steps ----------------------------------------------------------------------------

    def run_steps(self, excluded: list[tuple[str, str]]) -> None:
        """The three steps in order; a step that raises fails its checks not yet recorded, and the run goes on."""
        steps: list[tuple[list[str], Callable[[], None]]] = [
            (["S01", "S02", "S03", "S04", "S05", "S06", "S07"], lambda: self.step_phase1(excluded)),
            (["S15"], self.step_gpu_signals),
            (["S17"], self.step_telemetry_authenticated),
            (["S08", "S09"], self.step_restart_and_lower),
            (["S10", "S11", "S12"], self.step_pods),
            (["S13"], self.step_facility),
            (["S14"], self.step_clock_lock),
            (["S16"], self.step_receipts),
            (["S18"], self.step_receipt_accuracy),
        ]
        for ids, step in steps:
            try:
                step()
            except KeyboardInterrupt:
                raise
            except Exception as e:  # - a failed step fails its checks, the run goes on
                self.failed(ids, e)

    def step_phase1(self, excluded: list[tuple[str, str]]) -> None:
        reports = component_reports(self.state, self.env, self.rendered.managed)
        collector = collector_report(self.state, self.state.read_cluster_env() or {})
        if collector is not None:  # the Collector modes: the power path runs through it
            reports.append(collector)
        self.record(checks.components_report((r.name, r.ok, r.detail) for r in reports))
        arch = {n["metadata"]["name"]: n["metadata"]["labels"].get("kubernetes.io/arch", "") for n in self.nodes}
        self.record(checks.agent_placement(self.agent_nodes(), self.agent_nodes(), excluded, arch))
        profiles = {n: builtin_profile(self.spec.pool(self.rendered.pool_of(n)).profile) for n in self.agent_nodes()}
        self.record(self.until("S03", lambda: checks.nodehardware_matches(profiles, self.hardware()), 60))
        self.wait_for_load()
        wait = 60 + 6 * (self.timing.controller_interval_s + self.timing.agent_interval_s)
        self.record(self.until("S04", lambda: checks.caps_match("S04", self.agent_twins(), self.hardware(), self.truth(), 80), wait))
        self.record(self.until("S05", lambda: checks.power_honours_caps("S05", self.truth()), 20))
        self.progress(f"waiting for measured power to settle (rate window {self.timing.rate_window_s:g}s)")
        time.sleep(self.timing.settle_s)
        self.record(self.until("S06", self.check_measured_power, 3 * self.timing.settle_s + 30))
        self.record(self.until("S07", lambda: checks.profile_labels(self.cluster_nodes(), self.twins()), 30))

    def check_measured_power(self) -> checks.Assertion:
        """S06; where the agents measure the power, the Nodes they cannot measure are skipped with the reason."""
        twins = self.managed_twins()
        skip = None
        if telemetry.mode(self.env.get("TELEMETRY", "otlp")).agents_push:
            skip = checks.unmeasurable_nodes(twins, self.hardware())
        return checks.measured_power(twins, self.truth(), self.truth_scope(), skip)

    def agent_twins(self) -> dict[str, dict[str, Any]]:
        agents = set(self.agent_nodes())
        return {n: t for n, t in self.twins().items() if n in agents}

    def managed_twins(self) -> dict[str, dict[str, Any]]:
        managed = set(self.rendered.managed)
        twins = self.twins()
        missing = managed - set(twins)
        if missing:
            raise KeyError(f"no NodeTwin for {sorted(missing)}")
        return {n: twins[n] for n in managed}

    def cluster_nodes(self) -> list[dict[str, Any]]:
        return kube.list_nodes(kube.core_api(self.state.kubeconfig), f"{names.LABEL_SIM_CLUSTER}={self.spec.name}")

    def step_restart_and_lower(self) -> None:
        env = self.env
        agent_pids = {n: int(env[pid_key(n)]) for n, _ in recorded_deploy_pids(env) if n.startswith("agent-")}
        self.progress("killing the simulator (SIGKILL) and starting it again; the agents keep running")
        t0 = time.monotonic()
        restart_process(self.state, "simulator", kill=True)
        url = f"http://{self.env['SIMULATOR_HTTP']}/debug/emulate"
        deadline = time.monotonic() + 120
        while not http_ok(url)[0]:
            if time.monotonic() > deadline:
                raise RuntimeFailure(f"the restarted simulator did not serve {url}; log {self.state.log('simulator')}")
            time.sleep(0.2)
        outage = time.monotonic() - t0
        self.progress(f"simulator back after {outage:.1f}s; waiting for the workload runner to send the lost loads")
        self.wait_for_load()
        self.progress("halfway: restarting the controller manager with CPU and GPU caps at 50 % and half the Nodes eco")
        if "POD_controller-manager" in self.env:  # the kubelet runtime: a changed install recreates its Pod
            onkubelet.restart_controller(self.state, PHASE2_ENV, self.progress)
        else:
            restart_process(self.state, "controller-manager", env_update=PHASE2_ENV)
        wait = 90 + 6 * (self.timing.controller_interval_s + self.timing.agent_interval_s)
        caps = self.record(self.until("S09", lambda: checks.caps_match("S09", self.agent_twins(), self.hardware(), self.truth(), 50), wait))
        after_env = self.env
        after = {n: int(after_env[pid_key(n)]) for n in agent_pids if after_env.get(pid_key(n), "").isdigit()}
        alive = {n: deployed_alive(n, p, after_env) for n, p in after.items()}
        self.record(checks.restart_survived(agent_pids, after, alive, caps, outage))
        power = self.until("S09", lambda: checks.power_honours_caps("S09", self.truth()), 20)
        if power.status != "pass":
            self.assertions.remove(caps)
            self.record(Assertion("S09", "fail", f"{caps.observed}; but {power.observed}", caps.expected, caps.value))

    def prom_query(self, promql: str) -> list[Mapping[str, Any]]:
        """An instant query to the cluster's Prometheus: the result vector."""
        cluster = self.state.read_cluster_env() or {}
        url = f"{cluster['PROMETHEUS_URL']}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(url, timeout=10, context=telemetrytls.query_context(cluster)) as resp:
            return cast(list[Mapping[str, Any]], json.loads(resp.read())["data"]["result"])

    def step_facility(self) -> None:
        """S13 (smoke/facilitystep.py): the outdoor ambient raised, then put back."""
        facilitystep.facility_step(self)

    def nvidia_agent_nodes(self) -> set[str]:
        profiles = {n: builtin_profile(self.spec.pool(self.rendered.pool_of(n)).profile) for n in self.agent_nodes()}
        return {n for n, p in profiles.items() if p.gpus is not None and p.gpus.vendor == "nvidia"}

    def step_gpu_signals(self) -> None:
        """S15 (smoke/gpupodstep.py): the load's GPU Pods on their boards in Prometheus."""
        self.record(gpupodstep.gpu_pod_signals(self))

    def step_telemetry_authenticated(self) -> None:
        """S17 (smoke/telemetryauthstep.py): a push without a client certificate stores nothing."""
        self.record(telemetryauthstep.telemetry_authenticated_step(self.state.read_cluster_env() or {},
                                                                   10 + 3 * self.timing.otlp_interval_s))

    def step_clock_lock(self) -> None:
        """S14 (smoke/lockstep.py): a clock lock set, lost by a device reset and applied again, released."""
        nodes = {n: builtin_profile(self.spec.pool(self.rendered.pool_of(n)).profile) for n in self.agent_nodes()}
        self.record(lockstep.clock_lock(self, lockstep.lock_node(nodes)))

    def step_receipts(self) -> None:
        """S16 (smoke/receiptstep.py): the load Pods' energy receipts, as the controller manager writes them live."""
        self.record(receiptstep.receipts_step(self))

    def step_receipt_accuracy(self) -> None:
        """S18 (smoke/receiptaccuracystep.py): the receipts over the controller's windows against the node
        meters and the workload runner's per-Pod truth."""
        self.record(receiptaccuracystep.accuracy_step(self))

    def step_pods(self) -> None:
        api = kube.core_api(self.state.kubeconfig)
        before = self.extender_counts()
        created = []
        for i, cls in enumerate(["performance", "performance", "performance", "standard", "standard", "standard"]):
            name = f"smoke-{cls}-{i}"
            body: dict[str, Any] = {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": TEST_NAMESPACE,
                             "labels": {"app": "simcluster-smoke", names.ANNOTATION_WORKLOAD_CLASS: cls},
                             "annotations": {names.ANNOTATION_WORKLOAD_CLASS: cls}},
                "spec": {
                    "nodeSelector": {names.LABEL_SIM_CLUSTER: self.spec.name},
                    # Fake Nodes carry the KWOK taint and their profiles' own; placement is the extender's.
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": "work", "image": "joulie.local/smoke-work:none",
                                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                },
            }
            with contextlib.suppress(Exception):
                api.delete_namespaced_pod(name, TEST_NAMESPACE, grace_period_seconds=0)
            deadline = time.monotonic() + 30
            while True:
                try:
                    api.create_namespaced_pod(TEST_NAMESPACE, body)  # type: ignore[arg-type]
                    break
                except Exception as e:  # - a pod of the same name still terminating: retry
                    if time.monotonic() > deadline:
                        raise RuntimeFailure(f"creating pod {name}: {e}") from e
                    time.sleep(0.5)
            created.append(name)
        self.progress(f"created {len(created)} pods (3 performance, 3 standard) in namespace {TEST_NAMESPACE}")

        def pods() -> list[dict[str, Any]]:
            items = api.list_namespaced_pod(TEST_NAMESPACE, label_selector="app=simcluster-smoke").items
            return [dict(api.api_client.sanitize_for_serialization(p)) for p in items]

        def bound() -> Assertion:
            return checks.extender_scored(before, self.extender_counts(), pods())

        self.record(self.until("S10", bound, 90))
        self.record(checks.performance_not_on_eco(pods(), self.twins()))
        every = [dict(api.api_client.sanitize_for_serialization(p)) for p in api.list_pod_for_all_namespaces().items]
        self.record(checks.only_classified_on_fake(every, self.node_names))


def run_smoke(ctx: Context, rendered: RenderedSpec, options: SmokeOptions) -> int:
    """The whole smoke; returns its exit code (summary.json's exitCode)."""
    settings, state, spec = ctx.settings, ctx.state, rendered.spec
    mode, timing, telemetry_mode, timeout_s = settings.hwemu, settings.timing, settings.telemetry, settings.smoke_timeout_s
    started = dt.datetime.now(dt.UTC)
    sha, dirty = git_state()
    state.runs.mkdir(parents=True, exist_ok=True)
    run = state.runs / run_dir_name(started, spec.name, mode if telemetry_mode == "otlp" else f"{mode}-{telemetry_mode}", sha, dirty)
    run.mkdir(parents=True)
    log = (run / "smoke.log").open("w")
    out = Tee(sys.stdout, log)
    progress = Progress(out=cast(TextIO, out))
    ctx = ctx.with_progress(progress)
    progress(f"simcluster smoke: spec {spec.name}, hwemu {mode}, telemetry {telemetry_mode}, timing {timing.name}, "
             f"results in {run}")
    sampler = MemorySampler(state)
    sampler.start()
    smoke: Smoke | None = None
    aborted: str | None = None
    timed_out = False
    images: dict[str, str] = {}
    runtime = smoke_runtime(settings.runtime)
    deadline = Deadline(timeout_s).start()
    try:
        if runtime.components_as_pods:  # the chart's components as Pods on a real node (KUBELET.md)
            onkubelet.check_mode(mode)
        runtime.up(ctx, rendered, UpRequest(options.crd_dir, telemetry_mode,
                                            lambda: len(select_agents(rendered.nodes, options.daemonset)[0])))
        result = deploy(ctx, rendered, DeployOptions(options.values_files, options.daemonset))
        env = state.read_deploy_env() or {}
        images = {k.removeprefix("TAG_"): v for k, v in env.items() if k.startswith("TAG_")}
        smoke = Smoke(ctx, rendered)
        if options.break_component:
            # A crash nobody restarts: the checks must see it, so the supervisor goes first.
            supervisor.stop(state)
            _break(env, options.break_component, progress)
        smoke.run_steps(result.excluded)
    except KeyboardInterrupt:
        if deadline.fired.is_set():
            timed_out = True
            progress(f"timed out after {timeout_s:.0f}s (SIMCLUSTER_TEST_TIMEOUT)")
        else:
            aborted = "interrupted"
            progress("interrupted; stopping the cluster")
    except RuntimeFailure as e:
        aborted = str(e)
        progress(f"aborted: {e}")
    finally:
        deadline.cancel()
        sampler.stopped.set()
        with contextlib.suppress(Exception):
            sampler.peak_kib = max(sampler.peak_kib, sampler.sample())
    assertions = sorted(smoke.assertions if smoke else [], key=lambda a: a.id)
    finished = dt.datetime.now(dt.UTC)
    status = run_status(assertions, timed_out, aborted)
    collect(state, run, smoke.truth if smoke else None)
    resources = {"peakRssMiB": round(sampler.peak_kib / 1024, 1), "agents": len(smoke.agent_nodes()) if smoke else 0,
                 "nodes": len(rendered.nodes)}
    summary = build_summary(RunRecord(
        assertions=assertions, status=status, spec=spec.name, mode=mode, scope=settings.power_scope,
        timing={**timing.as_env(), "SIMCLUSTER_TELEMETRY": telemetry_mode}, commit=sha, dirty=dirty, images=images, started=started, finished=finished,
        resources=resources, runtime=runtime.name, aborted=aborted,
    ))
    write_results(state, run, summary, assertions, spec.name, mode, finished)
    release_cluster(state, settings.keep, progress)
    print("", file=out)
    print(checks_table(assertions), file=out)
    print(f"\n{status.upper()}: {sum(a.status == 'pass' for a in assertions)}/{len(assertions)} checks passed "
          f"in {summary['wallSeconds']:.0f}s, peak memory {resources['peakRssMiB']:.0f} MiB; {run / 'summary.json'}",
          file=out)
    out.flush()
    log.close()
    return int(summary["exitCode"])


def _break(env: Mapping[str, str], component: str, progress: Callable[[str], None]) -> None:
    """``--break``: SIGKILL every deployed process of `component`, on purpose."""
    # The workload runner is the simulator's binary too, but it is the load, not a component under test.
    broken = [n for n, _ in recorded_deploy_pids(env) if env.get(f"COMPONENT_{n}") == component and n != "workload"]
    if not broken:
        raise RuntimeFailure(f"--break {component}: no such deployed component")
    for name in broken:
        os.killpg(int(env[pid_key(name)]), 9)
    progress(f"--break: killed {', '.join(broken)} on purpose; the checks must say so")
