"""docs/security.md's permission table is what the chart renders today (``permissions.py``), and the
derivation reads RBAC, admission policies and Pods the way the API server and the kubelet would."""

from __future__ import annotations

from typing import Any

import pytest

from joulie_simcluster import permissions
from joulie_simcluster.chart_cases import helm

pytest_plugins = ["joulie_testinfra.fixtures"]

__all__ = ["helm"]


def test_the_security_doc_table_is_the_fresh_render() -> None:
    """Fails when the chart's RBAC, policies or Pods change and the doc was not regenerated."""
    documented = permissions.current_block(permissions.DOC.read_text())
    fresh = permissions.render()
    assert (
        documented == fresh
    ), "docs/security.md's permission table is stale: run `python -m joulie_simcluster.permissions --write`"


def _role(kind: str, name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name}, "rules": rules}


def _binding(kind: str, name: str, role_kind: str, sa: str) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": "ns"}],
    }


DOCS: list[dict[str, Any]] = [
    {"kind": "ServiceAccount", "metadata": {"name": "sa"}},
    _role("ClusterRole", "c", [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]),
    _binding("ClusterRoleBinding", "c", "ClusterRole", "sa"),
    _role("Role", "r", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]),
    _binding("RoleBinding", "r", "Role", "sa"),
    _role("ClusterRole", "unbound", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
    {
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"resources": ["nodes"]}]},
            "matchConditions": [{"expression": "request.userInfo.username == 'system:serviceaccount:ns:sa'"}],
            "validations": [{"message": "only joulie.io/ labels"}],
        },
    },
    {
        "kind": "DaemonSet",
        "metadata": {"name": "d"},
        "spec": {
            "template": {
                "spec": {
                    "serviceAccountName": "sa",
                    "hostNetwork": True,
                    "containers": [
                        {
                            "name": "c",
                            "securityContext": {"privileged": True},
                            "volumeMounts": [{"name": "sys", "readOnly": True}, {"name": "rapl"}, {"name": "s"}],
                        }
                    ],
                    "volumes": [
                        {"name": "sys", "hostPath": {"path": "/sys"}},
                        {"name": "rapl", "hostPath": {"path": "/sys/devices/virtual/powercap"}},
                        {"name": "s", "secret": {"secretName": "ro"}},
                    ],
                }
            }
        },
    },
]


def test_grants_scopes_policies_and_what_cannot_be_done() -> None:
    (account,) = permissions.accounts(DOCS, "ns")
    assert account.allows("patch", "", "nodes") == "cluster" and account.allows("list", "", "secrets") == "release"
    assert account.allows("get", "", "secrets") is None  # the unbound wildcard role counts for nothing
    text = permissions.table(DOCS, "ns")
    assert "| `sa` | cluster | core | `nodes` | get, patch | `p` (writes) |" in text
    assert "| `sa` | release | core | `secrets` | list | RBAC only |" in text
    cannot = next(line for line in text.splitlines() if line.startswith("| `sa` | read a Secret"))
    assert "list Secrets" not in cannot and "change Nodes" not in cannot and "create Pods" in cannot
    assert "| `p` | `nodes` | only joulie.io/ labels |" in text
    assert "| `DaemonSet/d` | `sa` | yes | yes | uid 0 | `/sys/devices/virtual/powercap` | `/sys` | `ro` |" in text


def test_the_block_is_replaced_between_its_markers_only() -> None:
    doc = f"intro\n{permissions.BEGIN}\nold\n{permissions.END}\noutro\n"
    new = permissions.replace_block(doc, "new\n")
    assert new == f"intro\n{permissions.BEGIN}\nnew\n{permissions.END}\noutro\n"
    assert permissions.current_block(new) == "new\n"
    with pytest.raises(ValueError, match="expected the markers"):
        permissions.replace_block("no markers", "x")
