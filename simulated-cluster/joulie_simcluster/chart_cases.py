"""What the chart tests share: the charts, the values files each mode is rendered with (``CASES``),
the helm check every chart test starts with, and helpers over rendered objects. Test support
(owned by the BUILD's ``python_test_utils``, never in the simcluster PEX)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from joulie_localcluster.tools import Tools
from joulie_simcluster import chart

JOULIE = Path("charts/joulie")
SIMULATOR = Path("charts/joulie-simulator")
SMOKE_SPEC = Path("simulated-cluster/specs/smoke.yaml")
SMOKE_VALUES = Path("simulated-cluster/values/smoke-values.yaml")
EMULATED_VALUES = JOULIE / "ci/emulated-smoke-values.yaml"
POOL_VALUES = JOULIE / "ci/pool-values.yaml"
EXTENDER_VALUES = JOULIE / "ci/extender-values.yaml"
PRODUCTION_VALUES = JOULIE / "ci/production-values.yaml"  # the README's install example
NVIDIA_VALUES = JOULIE / "ci/nvidia-gpu-values.yaml"  # docs/gpu-tools.md, NVIDIA container toolkit
AMD_VALUES = JOULIE / "ci/amd-gpu-values.yaml"  # docs/gpu-tools.md, ROCm from the host
ALL_OPTIONS_VALUES = JOULIE / "ci/all-options-values.yaml"  # every privilege-granting option: docs/security.md
SIM_VALUES = SIMULATOR / "ci/smoke-values.yaml"
PROMETHEUS_VALUES = Path("values/prometheus-grafana.yaml")
DASHBOARD = JOULIE / "dashboards/joulie.json"
NS = chart.NAMESPACE

SMOKE_AGENT_NODES = ["intel-0", "epyc-0", "epyc-hsmp-0", "h100-nvl-0", "h100-sxm-0", "mi300x-0", "vm-0",
                     "intel-managed-0"]
VERSION_FILES = {
    ("joulie", "agent"): Path("services/agent/joulie_agent/VERSION"),
    ("joulie", "controllerManager"): Path("services/controller-manager/joulie_controller/VERSION"),
    ("joulie", "schedulerExtender"): Path("services/extender/joulie_extender/VERSION"),
    ("joulie-simulator", None): Path("services/simulator/joulie_simulator/VERSION"),
}


@pytest.fixture(scope="module", autouse=True)
def helm(test_tools: Tools) -> Path:
    """Every test here needs the real helm: a missing one fails them all, saying how to build it."""
    return chart.helm_path()


def ids(docs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return [(d["kind"], d["metadata"]["name"]) for d in docs]


def one(docs: Sequence[Mapping[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = chart.find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind}/{name}, rendered: {ids(docs)}"
    return found[0]


def container(workload: Mapping[str, Any]) -> dict[str, Any]:
    containers = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def env_of(workload: Mapping[str, Any]) -> dict[str, Any]:
    """name -> value, or the fieldRef path for downward-API entries."""
    out: dict[str, Any] = {}
    for e in container(workload).get("env") or []:
        assert e["name"] not in out, f"env {e['name']} set twice"
        out[e["name"]] = e["value"] if "value" in e else ("fieldRef", e["valueFrom"]["fieldRef"]["fieldPath"])
    return out


def rules(role: Mapping[str, Any]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for r in role["rules"]:
        for group in r["apiGroups"]:
            for res in r["resources"]:
                out.setdefault((group, res), set()).update(r["verbs"])
    return out


def version(path: Path) -> str:
    return path.read_text().strip()


CASES: dict[str, tuple[Path, list[Path], dict[str, str]]] = {
    "defaults": (JOULIE, [], {}),
    "smoke": (JOULIE, [SMOKE_VALUES], {}),
    "pool": (JOULIE, [POOL_VALUES], {}),
    "emulated": (JOULIE, [SMOKE_VALUES, EMULATED_VALUES], {}),
    "extender": (JOULIE, [EXTENDER_VALUES], {}),
    "production": (JOULIE, [PRODUCTION_VALUES], {}),
    "extender-hostnet": (JOULIE, [EXTENDER_VALUES], {"schedulerExtender.hostNetwork": "true"}),
    "none": (JOULIE, [], {"agent.mode": "none"}),
    "power-policy": (JOULIE, [], {"controllerManager.env.POWER_POLICY": "idle_suspend_v1"}),
    "nvidia-gpu": (JOULIE, [NVIDIA_VALUES], {}),
    "amd-gpu": (JOULIE, [AMD_VALUES], {}),
    "amd-gpu-pool": (JOULIE, [AMD_VALUES], {"agent.mode": "pool"}),
    "all-options": (JOULIE, [ALL_OPTIONS_VALUES], {"schedulerExtender.tls.secretName": "extender-tls",
                                                  "schedulerExtender.tls.clientCA": "true"}),
    "name-override": (JOULIE, [EXTENDER_VALUES], {"nameOverride": "energy", "grafanaDashboard.enabled": "true"}),
    # Several nodes on one host (the kubelet runtime's agent nodes): metrics on the node's address, each
    # node's directory of one host path as /host-sys (chart_daemonset_hosts_test.py).
    "daemonset-shared-host": (JOULIE, [SMOKE_VALUES], {
        "agent.daemonset.hostNetwork": "true", "agent.daemonset.metricsOnHostIP": "true",
        "agent.daemonset.privileged": "false", "agent.daemonset.hostSys": "/var/lib/joulie-hwemu",
        "agent.daemonset.hostSysSubPathExpr": "$(NODE_NAME)/sys"}),
    "simulator-fuse": (SIMULATOR, [SIM_VALUES], {}),
    "simulator-files": (SIMULATOR, [SIM_VALUES], {"mode": "files"}),
}


def render(case: str) -> list[dict[str, Any]]:
    chart_dir, values, sets = CASES[case]
    return chart.render_chart(chart_dir, values, sets or None)
