"""The chart's least privilege, as an operator's security review reads the render (docs/security.md):
which Secrets each Pod can read, how each Pod runs, which admission policies guard the writes.
The same objects against the real kube-apiserver: ``chart_server_test.py``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from joulie_simcluster import chart
from joulie_simcluster.chart_cases import JOULIE, POOL_VALUES, container, helm, one

pytest_plugins = ["joulie_testinfra.fixtures"]

__all__ = ["helm"]

ALL_OPTIONS = JOULIE / "ci/all-options-values.yaml"
READ_ONLY_SECRET = "joulie-bmc-readonly"


def _pod(workload: Mapping[str, Any]) -> dict[str, Any]:
    return dict(workload["spec"]["template"]["spec"])


def secrets_of(pod: Mapping[str, Any]) -> set[str]:
    """Every Secret a Pod can read: volumes (plain and projected) and env of each container."""
    out: set[str] = set()
    for v in pod.get("volumes") or []:
        if "secret" in v:
            out.add(v["secret"]["secretName"])
        for source in (v.get("projected") or {}).get("sources") or []:
            if "secret" in source:
                out.add(source["secret"]["name"])
    for c in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        for e in c.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            if ref:
                out.add(ref["name"])
        out |= {f["secretRef"]["name"] for f in c.get("envFrom") or [] if "secretRef" in f}
    return out


def _agent_workloads(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        d for d in docs if d["kind"] in ("DaemonSet", "StatefulSet", "Deployment") and "agent" in d["metadata"]["name"]
    ]


@pytest.mark.parametrize("values", [[ALL_OPTIONS], [ALL_OPTIONS, POOL_VALUES]], ids=["daemonset", "pool"])
def test_agent_pods_mount_no_secret_that_powers_nodes(values: list[Path]) -> None:
    """With the power policy on (the controller's BMC Secrets in the namespace) and host power from the
    BMCs, an agent Pod can read the read-only account's Secret and no other; without one, none."""
    docs = chart.render_chart(JOULIE, values)
    agents = _agent_workloads(docs)
    assert agents, "the render has an agent"
    one(docs, "Role", "joulie-controller-manager-bmc-secrets")  # the power-control Secrets exist here
    for w in agents:
        assert secrets_of(_pod(w)) == {READ_ONLY_SECRET}, w["metadata"]["name"]
    bare = chart.render_chart(JOULIE, values, {"agent.powerExport.readOnlyBmcSecret": ""})
    for w in _agent_workloads(bare):
        assert secrets_of(_pod(w)) == set(), w["metadata"]["name"]
        assert "BMC_SECRET_DIR" not in {e["name"] for e in container(w)["env"]}


def test_the_former_bmc_secret_value_is_refused_with_the_replacement_named() -> None:
    with pytest.raises(chart.ChartError) as err:
        chart.render_chart(JOULIE, [ALL_OPTIONS], {"agent.powerExport.bmcSecret": "joulie-bmcs"})
    assert "agent.powerExport.bmcSecret was removed" in str(err.value)
    assert "agent.powerExport.readOnlyBmcSecret" in str(err.value)
