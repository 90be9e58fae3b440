"""``simcluster tenants``: the tenant cases of issue 36 on the live simulated cluster, each beside a control
that does move, so a case that passes only because nothing would ever move is caught.

Its own command, like ``simcluster suspend``: it needs its own controller settings
(``values/tenants-values.yaml``: work_aware_v1 trusting only namespace ``team``, the power policy on, a
budget that binds) and a small cluster (``specs/tenants.yaml``: three Xeons running a team's memory-bound
Pods, capped eco, and a spare the power policy suspends). No workload runner. Cases 2 to 5 run first;
then the components are deployed again with ``values/tenants-forged-values.yaml`` over those (a budget
honest power never reaches, so a forged reading would be what binds it) for case 1.

1. **forged-power**: a node holding the agents' push certificate (root on one node reads it) pushes a
   second ``hw.host.energy`` counter for one Xeon growing by 50 kJ/s (50 kW on the controller's
   ``sum by node (rate(...))``), over the authenticated path, for four controller ticks. No NodeTwin
   cap moves; control: the controller saw the reading and refuted it (that twin's
   ``powerMeasurement.source`` ``prometheus-implausible``, ``joulie_twin_power_implausible`` 1).
2. **untrusted-performance-pod**: a performance-annotated Pod in namespace ``tenant`` pinned to a capped
   Xeon leaves it eco and capped for four ticks; control: the same Pod in ``team`` uncaps another.
3. **pending-pods**: a Pending performance Pod with an impossible nodeSelector (marked Unschedulable by
   kube-scheduler) and one naming another ``schedulerName`` release no capped Xeon and wake no
   suspended spare for four ticks; controls: a performance Pod that fits a Xeon once released releases
   one, and a Pod pinned to the spare wakes it.
4. **extender-slow-uploads**: 100 connections from 100 loopback addresses each declare a 16 MiB
   upload and send 1 KiB; every /filter the harness sends meanwhile is answered within 0.5 s, the
   extender's memory stays bounded, and once the body timeout frees the slots kube-scheduler's calls
   reach it again (its filter counter grows) and a Pod is bound.
5. **pod-security-admission**: in namespaces enforcing Pod Security, the chart's controller manager and
   extender Pods (every option on) are admitted under "restricted"; the agent's is refused under
   "restricted" and "baseline" (privileged for the GPU tools; host paths of /sys even unprivileged) and
   admitted under "privileged" (the control): server-side dry runs, nothing started.

Results: ``runs/<UTC>-tenants/summary.json`` and the lines printed at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from joulie_api import names
from joulie_simcluster import chart
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.deploy.start import DeployOptions, deploy
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes import process
from joulie_simcluster.smoke.results import open_run, tear_down
from joulie_simcluster.smoke.tenantcases import (
    extender_slow_uploads,
    forged_power,
    pending_pods,
    pod_security,
    untrusted_performance_pod,
)
from joulie_simcluster.smoke.tenantlive import MEMORY_BOUND, TEAM, TENANT, Live, Result, pod
from joulie_simcluster.smoke.tenantlive import PERF as PERF
from joulie_simcluster.smoke.tenantlive import case as case
from joulie_simcluster.smoke.tenantlive import moved as moved

DEFAULT_SPEC = Path("simulated-cluster/specs/tenants.yaml")
DEFAULT_VALUES = Path("simulated-cluster/values/tenants-values.yaml")
FORGED_VALUES = Path("simulated-cluster/values/tenants-forged-values.yaml")


def forged_phase(ctx: Context, rendered: RenderedSpec, values_files: Sequence[Path], daemonset: dict[str, Any],
                 live: Live, xeons: list[str], spare: str) -> Result:
    """Case 1 after the others: the components again with the non-binding budget, the test Pods gone
    but the team's memory-bound work, then the forgery."""
    for ns, name in ((TEAM, "fits"), (TEAM, "wake"), *((TEAM, f"filler-{n}") for n in xeons)):
        live.delete(ns, name)
    deploy(ctx, rendered, DeployOptions([*values_files, FORGED_VALUES], daemonset, workload=False))
    # The spare is on (case 3's wake control woke it): suspended again before the caps are read, or the
    # family's performance node moves to a Xeon mid-case (run 2 read that as a cap that moved).
    live.wait(f"{spare} suspended again", lambda: live.power_state(spare) == names.POWER_OFF, 240)
    live.wait("two capped eco Xeons under the non-binding budget", lambda: sum(
        p == "eco" for p in live.profiles(xeons).values()) >= 2, 120)
    live.ticks(3)
    eco = sorted(n for n, p in live.profiles(xeons).items() if p == "eco")
    live.progress(f"profiles {live.profiles(xeons)}, caps {live.caps(xeons)}")
    return forged_power(live, eco)


# --- the run ---------------------------------------------------------------------------------


def run(ctx: Context, rendered: RenderedSpec, values_files: Sequence[Path], daemonset: dict[str, Any],
        crd_dir: Path) -> int:
    settings, state = ctx.settings, ctx.state
    run = open_run(state.runs, "tenants")
    run_dir, progress = run.dir, run.progress
    ctx = ctx.with_progress(progress)
    progress(f"simcluster tenants: spec {rendered.spec.name}, timing {settings.timing.name}, "
             f"telemetry TLS {'on' if settings.telemetry_tls else 'off'}, results in {run_dir}")
    results: list[Result] = []
    error = ""
    try:
        process.up(ctx, rendered, crd_dir=crd_dir, telemetry_mode=settings.telemetry)
        deploy(ctx, rendered, DeployOptions(list(values_files), daemonset, workload=False))
        live = Live(ctx, progress)
        xeons = sorted(n for n in rendered.node_names if n.startswith("xeon-"))
        spare = next(n for n in rendered.node_names if n.startswith("spare-"))
        for ns in (TEAM, TENANT):
            live.namespace(ns)
        for n in xeons:  # the team's memory-bound work: work_aware_v1 caps it eco
            live.create(TEAM, pod(f"stream-{n}", node=n, cpu="26", labels=MEMORY_BOUND))
        # The spare suspended first: while it is on, it may hold the family's performance slot, and the
        # slot moving to a Xeon during a case would read as a cap that moved.
        live.wait(f"{spare} suspended by the power policy", lambda: live.power_state(spare) == names.POWER_OFF, 240)
        live.wait("two capped eco Xeons", lambda: sum(
            p == "eco" for p in live.profiles(xeons).values()) >= 2, 120)
        live.ticks(2)
        eco = sorted(n for n, p in live.profiles(xeons).items() if p == "eco")
        progress(f"profiles {live.profiles([*xeons, spare])}, caps {live.caps(xeons)}")
        steps: list[tuple[str, Callable[[], Result]]] = [
            ("untrusted-performance-pod-uncaps-nothing", lambda: untrusted_performance_pod(live, eco)),
            ("pending-pods-release-and-wake-nothing", lambda: pending_pods(live, xeons, spare)),
            ("extender-answers-under-100-slow-uploads", lambda: extender_slow_uploads(live)),
            ("pod-security-admission", lambda: pod_security(live)),
            ("forged-power-moves-no-cap", lambda: forged_phase(ctx, rendered, values_files, daemonset, live, xeons, spare)),
        ]
        for name, step in steps:
            progress(f"case {name}")
            try:
                r = step()
            except (OSError, ApiException, KeyError, StopIteration, RuntimeFailure, chart.ChartError) as e:
                r = (name, False, f"step failed: {type(e).__name__}: {e}")
            results.append(r)
            progress(f"{'PASS' if r[1] else 'FAIL'} {r[0]}: {r[2]}")
    except (RuntimeFailure, ApiException, OSError) as e:
        error = str(e)
        progress(f"aborted: {e}")
    passed = not error and len(results) == 5 and all(ok for _, ok, _ in results)
    summary = {
        "check": "tenants", "status": "pass" if passed else "fail", "spec": rendered.spec.name,
        "timing": settings.timing.name, "telemetryTls": settings.telemetry_tls, **run.stamp(), "error": error or None,
        "assertions": [{"name": n, "status": "pass" if ok else "fail", "observed": text} for n, ok, text in results],
    }
    return run.finish(summary, results, lambda: tear_down(state, settings.keep, progress), width=42, noun="cases")
