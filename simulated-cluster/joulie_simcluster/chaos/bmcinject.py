"""How the ``bmc-refuse`` and ``bmc-hang`` faults are injected into the live cluster, and cleared: the
simulator's BMCs switched through ``bmcfaults.py``, a probe Pod that fits only the off nodes, and a note
of what the window showed (power-ons refused or hung, where the probe bound, which nodes failed)."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
from typing import Any

from kubernetes import client as k8s

from joulie_simcluster.chaos.bmcfaults import set_bmc_faults
from joulie_simcluster.chaos.injected import PROBE_NAMESPACE, Injected
from joulie_simcluster.runtimes import kube
from joulie_simcluster.state import StateDir

BMC_PROBE_WAIT_S = 150.0
"""How long the note waits for the BMC probe Pod to bind: a hung power-on fails at RESUME_TIMEOUT
(1 m in the chaos power values), then the next node boots in 12 s: 150 s leaves room for both and a
few reconciles, and keeps a campaign of a few BMC faults within minutes (300 s cut the first one short)."""


def bmc_fault(state: StateDir, *, refuse: bool) -> Injected:
    """Every power-on refused (HTTP 500) or hung while the fault holds. A power-on needs a reason to
    happen in the window: with a node off, a probe Pod that fits only the off nodes (required node
    affinity) is created. The note says how many power-ons were refused or hung, where and when the
    probe bound, and which nodes the controller failed."""
    kind = "refused" if refuse else "hung"
    before = set_bmc_faults(state, 1.0 if refuse else 0.0, 0.0 if refuse else 1.0)["drawn"]
    started = time.monotonic()
    # Off nodes the policy may wake: a node it failed stays off for an operator and is never woken again,
    # so a probe that fitted only failed nodes would wait forever whatever the fault did.
    failed_before = set(_failed_nodes(state))
    off = sorted(n for n, t in _truth(state).items()
                 if (t.get("power") or {}).get("state") == "off" and n not in failed_before)
    probe = _bmc_probe_pod(state, off) if off else None
    after: list[dict[str, int]] = []

    def clear() -> None:
        after.append(set_bmc_faults(state, 0.0, 0.0)["drawn"])

    def note() -> str:
        if not after:
            return "BMC faults not cleared"
        count = after[0][kind] - before[kind]
        head = f"power-ons {kind} in the window: {count}"
        if probe is None:
            return head + f"; no node was off and not failed ({len(failed_before)} failed), so nothing asked for a power-on"
        core = kube.core_api(state.kubeconfig)
        node, bound_s = "", None
        while time.monotonic() - started < BMC_PROBE_WAIT_S:
            pod = core.read_namespaced_pod(probe, PROBE_NAMESPACE)
            if pod.spec and pod.spec.node_name:
                node, bound_s = pod.spec.node_name, time.monotonic() - started
                break
            time.sleep(2.0)
        with contextlib.suppress(Exception):
            core.delete_namespaced_pod(probe, PROBE_NAMESPACE, grace_period_seconds=0)
        failed = {n: r for n, r in _failed_nodes(state).items() if n not in failed_before}
        where = (f"probe Pod (fits {', '.join(off)}) bound on {node} {bound_s:.0f} s after the fault began"
                 if bound_s is not None else f"probe Pod (fits {', '.join(off)}) not bound within {BMC_PROBE_WAIT_S:.0f} s")
        gone = "; ".join(f"{n} failed: {r[:160]}" for n, r in sorted(failed.items())) or "no node newly failed"
        return f"{head}; {where}; {gone}"

    return Injected("bmcs", clear=clear, note=note)


def _failed_nodes(state: StateDir) -> dict[str, str]:
    """Node -> the reason of each NodeTwin whose power state is ``failed``."""
    out: dict[str, str] = {}
    for t in kube.kube_list(state.kubeconfig, kube.NODETWINS):
        power = (t.get("status") or {}).get("power") or {}
        if power.get("state") == "failed":
            out[t["spec"]["nodeName"]] = str(power.get("reason", ""))
    return out


def _truth(state: StateDir) -> dict[str, dict[str, Any]]:
    url = f"http://{(state.read_deploy_env() or {})['SIMULATOR_HTTP']}/debug/emulate"
    with urllib.request.urlopen(url, timeout=5) as resp:
        return {n["name"]: n for n in json.loads(resp.read())["nodes"]}


def _bmc_probe_pod(state: StateDir, nodes: list[str]) -> str:
    """A small Pod that fits only ``nodes`` (required node affinity on their hostnames)."""
    name = f"chaos-bmc-probe-{int(time.time() * 1000) % 10**9}"
    term = k8s.V1NodeSelectorTerm(match_expressions=[
        k8s.V1NodeSelectorRequirement(key="kubernetes.io/hostname", operator="In", values=nodes)])
    pod = k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, labels={"app.kubernetes.io/name": "chaos-probe"}),
        spec=k8s.V1PodSpec(
            containers=[k8s.V1Container(name="probe", image="registry.k8s.io/pause:3.10",
                                        resources=k8s.V1ResourceRequirements(requests={"cpu": "1", "memory": "64Mi"}))],
            tolerations=[k8s.V1Toleration(key="kwok.x-k8s.io/node", operator="Exists", effect="NoSchedule")],
            affinity=k8s.V1Affinity(node_affinity=k8s.V1NodeAffinity(
                required_during_scheduling_ignored_during_execution=k8s.V1NodeSelector(node_selector_terms=[term])))))
    kube.core_api(state.kubeconfig).create_namespaced_pod(PROBE_NAMESPACE, pod)
    return name
