"""One look at the live cluster during a chaos run: which recorded processes run, does the API
answer, does every component report, do the caps in the emulator equal the controller's decisions
(NodeTwin.spec), which Nodes report drift, which workload Pods failed or are stuck, and how many
restarts the supervisor has made."""

from __future__ import annotations

import datetime as dt
import json
import re
import urllib.request
from dataclasses import dataclass
from typing import Any

from joulie_simcluster.context import RenderedSpec
from joulie_simcluster.deploy.reports import component_reports
from joulie_simcluster.runtimes import kube, power
from joulie_simcluster.runtimes.supervision import control as supervisor
from joulie_simcluster.runtimes.supervision.processes import watched
from joulie_simcluster.smoke import checks
from joulie_simcluster.state import StateDir
from joulie_workload.pods import LABEL_PART_OF, PART_OF

STUCK_PENDING_S = 120.0
"""A workload Pod Pending longer than this is stuck (the smoke's Pods bind within seconds)."""


@dataclass(frozen=True)
class Health:
    dead: tuple[str, ...]
    api_ready: bool
    not_reporting: tuple[str, ...]
    caps_mismatched: int
    """Caps in the emulator that differ from NodeTwin.spec: decisions that did not reach the device."""
    caps_detail: str
    drift_nodes: tuple[str, ...]
    pods_failed: int
    pods_stuck: int
    restarts: dict[str, int]

    @property
    def healthy(self) -> bool:
        return not self.dead and self.api_ready and not self.not_reporting and self.caps_mismatched == 0

    def recovered(self, baseline: Health) -> bool:
        """Healthy, but for caps that already differed before the fault (a defect left by an
        earlier one must not make every later fault count as not survived)."""
        return (not self.dead and self.api_ready and not self.not_reporting
                and self.caps_mismatched <= baseline.caps_mismatched)

    def why_not(self) -> str:
        parts = []
        if self.dead:
            parts.append("not running: " + ", ".join(self.dead))
        if not self.api_ready:
            parts.append("API not ready")
        if self.not_reporting:
            parts.append("not reporting: " + ", ".join(self.not_reporting))
        if self.caps_mismatched:
            parts.append(f"{self.caps_mismatched} caps ≠ NodeTwin.spec ({self.caps_detail[:200]})")
        return "; ".join(parts) or "healthy"


def mismatches(a: checks.Assertion) -> int:
    """How many caps a failed S04-style assertion lists (it shows 6, then '… N more')."""
    if a.status == "pass":
        return 0
    if a.observed.startswith("no cap was checked"):
        return 0
    more = re.search(r"… (\d+) more", a.observed)
    return 6 + int(more.group(1)) if more else a.observed.count("; ") + 1


def _by_node(state: StateDir, path: str) -> dict[str, dict[str, Any]]:
    return {o["spec"]["nodeName"]: o for o in kube.kube_list(state.kubeconfig, path, attempts=1)}


def truth(state: StateDir) -> dict[str, dict[str, Any]]:
    url = f"http://{(state.read_deploy_env() or {})['SIMULATOR_HTTP']}/debug/emulate"
    with urllib.request.urlopen(url, timeout=5) as resp:
        return {n["name"]: n for n in json.loads(resp.read())["nodes"]}


def capped_nodes(state: StateDir) -> list[str]:
    """Agent Nodes whose hardware reports a control (CPU or GPU caps the agent writes)."""
    agents = set((state.read_deploy_env() or {}).get("AGENT_NODES", "").split(",")) - {""}
    out = []
    for node, hw in _by_node(state, kube.NODEHARDWARES).items():
        st = hw.get("status") or {}
        if node in agents and (((st.get("cpu") or {}).get("controlAvailable")) or ((st.get("gpu") or {}).get("controlAvailable"))):
            out.append(node)
    return sorted(out)


def _pods(state: StateDir) -> tuple[int, int]:
    core = kube.core_api(state.kubeconfig)
    now = dt.datetime.now(dt.UTC)
    failed = stuck = 0
    for p in core.list_pod_for_all_namespaces(label_selector=f"{LABEL_PART_OF}={PART_OF}", _request_timeout=5).items:
        phase = p.status.phase if p.status else ""
        if phase == "Failed":
            failed += 1
        elif phase == "Pending" and p.metadata and p.metadata.creation_timestamp and (
                now - p.metadata.creation_timestamp).total_seconds() > STUCK_PENDING_S:
            stuck += 1
    return failed, stuck


def look(state: StateDir, rendered: RenderedSpec) -> Health:
    # A node powered off through its BMC (a power policy's suspend) has its agent stopped on purpose,
    # as a real node's kubelet and agent stop: neither a dead process nor a component not reporting,
    # and no cap to compare (runtimes/power.py takes it down and up).
    off = set(power.read_powered_off(state.root))
    dead = tuple(w.name for w in watched(state) if not w.alive and w.name.removeprefix("agent-") not in off)
    restarts = supervisor.restarts(state)
    if not kube.api_ready(state.kubeconfig):
        return Health(dead, False, (), 0, "", (), 0, 0, restarts)
    env = state.read_deploy_env() or {}
    try:
        reports = component_reports(state, env, rendered.managed)
        not_reporting = tuple(r.name for r in reports if not r.ok and r.name.removeprefix("agent-") not in off)
        agents = set(env.get("AGENT_NODES", "").split(",")) - {"", *off}
        twins = {n: t for n, t in _by_node(state, kube.NODETWINS).items() if n in agents}
        caps = checks.caps_match("S04", twins, _by_node(state, kube.NODEHARDWARES), truth(state))
        drift = tuple(sorted(n for n, t in twins.items()
                             if "drift" in json.dumps((t.get("status") or {}).get("controlStatus") or {}).lower()))
        failed, stuck = _pods(state)
    except Exception as e:  # - a component down mid-look: unhealthy, say why
        return Health(dead, True, (f"look failed: {e}"[:200],), 0, "", (), 0, 0, restarts)
    return Health(dead, True, not_reporting, mismatches(caps), caps.observed if caps.status != "pass" else "",
                  drift, failed, stuck, restarts)
