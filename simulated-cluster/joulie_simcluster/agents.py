"""Which Nodes the agent DaemonSet of a real install reaches, decided as the DaemonSet controller does.

A Node is eligible when the pod template's ``nodeSelector`` matches its labels, its required node
affinity (``nodeSelectorTerms``: any term, every expression) matches, every NoSchedule and
NoExecute taint is tolerated by the template's tolerations plus those the DaemonSet controller adds
to every daemon pod, and its architecture is one the agent image is built for. Every other Node
gets a human reason (all that apply, ``; ``-joined).

The KWOK taint is ignored by default: it exists only on fake Nodes, never on a real one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from joulie_api import names
from joulie_simcluster.nodes import KWOK_TAINT_KEY

ARCH_LABEL = "kubernetes.io/arch"
# The agent image is built for linux/amd64 only (seed: "Images"; reference D15).
IMAGE_ARCHITECTURES: tuple[str, ...] = ("amd64",)
# PreferNoSchedule never keeps a daemon pod off a Node.
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def controller_tolerations(host_network: bool) -> list[dict[str, str]]:
    """The tolerations the DaemonSet controller adds to every daemon pod
    (k8s pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations); network-unavailable only for
    host-network pods."""
    out = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    ]
    if host_network:
        out.append({"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"})
    return out


def agent_daemonset(
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, str]] = (),
    affinity: Mapping[str, Any] | None = None,
    host_network: bool = True,
) -> dict[str, Any]:
    """The scheduling part of the chart's agent DaemonSet ``joulie-agent`` (reference §6.1: nodeSelector
    ``joulie.io/managed: "true"``, hostNetwork, no tolerations by default)."""
    pod: dict[str, Any] = {
        "hostNetwork": host_network,
        "nodeSelector": dict(node_selector if node_selector is not None else {names.LABEL_MANAGED: "true"}),
        "tolerations": [dict(t) for t in tolerations],
    }
    if affinity is not None:
        pod["affinity"] = dict(affinity)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "joulie-agent", "namespace": "joulie-system"},
        "spec": {"template": {"spec": pod}},
    }


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """k8s.io/api/core/v1 Toleration.ToleratesTaint."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return bool(key) and (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def _taint_str(t: Mapping[str, Any]) -> str:
    v = t.get("value") or ""
    return f"{t['key']}={v}:{t['effect']}" if v else f"{t['key']}:{t['effect']}"


def _expr_matches(expr: Mapping[str, Any], labels: Mapping[str, str], node_name: str, field: bool) -> bool:
    key, op, values = expr["key"], expr["operator"], list(expr.get("values") or [])
    if field:
        have: str | None = node_name if key == "metadata.name" else None
    else:
        have = labels.get(key)
    if op == "In":
        return have is not None and have in values
    if op == "NotIn":
        return have is None or have not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt"):
        try:
            h, v = int(have or ""), int(values[0])
        except (ValueError, IndexError):
            return False
        return h > v if op == "Gt" else h < v
    return False


def _expr_str(expr: Mapping[str, Any]) -> str:
    key, op, values = expr["key"], expr["operator"], list(expr.get("values") or [])
    if op in ("In", "NotIn"):
        return f"{key} {op.lower().replace('notin', 'not in')} [{', '.join(values)}]"
    if op in ("Gt", "Lt"):
        return f"{key} {'>' if op == 'Gt' else '<'} {values[0] if values else '?'}"
    return f"{key} {'exists' if op == 'Exists' else 'does not exist'}"


def _affinity_reason(pod: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> str | None:
    required = (((pod.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return None
    failed: list[str] = []
    for term in terms:
        misses = [
            *(e for e in term.get("matchExpressions") or [] if not _expr_matches(e, labels, node_name, field=False)),
            *(e for e in term.get("matchFields") or [] if not _expr_matches(e, labels, node_name, field=True)),
        ]
        # A term with no requirement matches nothing (k8s nodeaffinity).
        if not term.get("matchExpressions") and not term.get("matchFields"):
            failed.append("an empty term")
            continue
        if not misses:
            return None
        failed.append(" and ".join(_expr_reason(e, labels) for e in misses))
    return f"node affinity not matched: {' or '.join(failed)}"


def _expr_reason(expr: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    if expr["key"] == ARCH_LABEL and expr["operator"] == "In":
        return f"arch {labels.get(ARCH_LABEL, '(none)')} not in [{', '.join(expr.get('values') or [])}]"
    have = labels.get(expr["key"])
    return f"{_expr_str(expr)} (node has {expr['key']}={have})" if have is not None else f"{_expr_str(expr)} (node has no {expr['key']})"


def exclusion_reasons(
    node: Mapping[str, Any],
    daemonset: Mapping[str, Any],
    image_architectures: Sequence[str] = IMAGE_ARCHITECTURES,
    ignore_taint_keys: Iterable[str] = (KWOK_TAINT_KEY,),
) -> list[str]:
    """Why the DaemonSet would not run a pod on ``node`` (empty: it would)."""
    pod = daemonset["spec"]["template"]["spec"]
    name = node["metadata"]["name"]
    labels: Mapping[str, str] = node["metadata"].get("labels") or {}
    reasons: list[str] = []
    if pod.get("nodeName") and pod["nodeName"] != name:
        reasons.append(f"pod is pinned to node {pod['nodeName']}")
    for key, want in (pod.get("nodeSelector") or {}).items():
        have = labels.get(key)
        if have != want:
            if key == ARCH_LABEL:
                reasons.append(f"arch {have or '(none)'} not in [{want}]")
            else:
                got = f"node has {key}={have}" if have is not None else f"node has no {key}"
                reasons.append(f"nodeSelector {key}={want} not matched ({got})")
    aff = _affinity_reason(pod, labels, name)
    if aff is not None:
        reasons.append(aff)
    tolerations = [*(pod.get("tolerations") or []), *controller_tolerations(bool(pod.get("hostNetwork")))]
    ignored = set(ignore_taint_keys)
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in BLOCKING_EFFECTS or taint.get("key") in ignored:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            reasons.append(f"taint {_taint_str(taint)} not tolerated")
    arch = ((node.get("status") or {}).get("nodeInfo") or {}).get("architecture") or labels.get(ARCH_LABEL)
    if arch not in image_architectures and not any(f"arch {arch} not in" in r for r in reasons):
        reasons.append(f"arch {arch} not in [{', '.join(image_architectures)}] (the agent image's platforms)")
    return reasons


def select_agents(
    nodes: Iterable[Mapping[str, Any]],
    daemonset: Mapping[str, Any],
    image_architectures: Sequence[str] = IMAGE_ARCHITECTURES,
    ignore_taint_keys: Iterable[str] = (KWOK_TAINT_KEY,),
) -> tuple[list[str], list[tuple[str, str]]]:
    """(eligible Node names, [(excluded Node name, reason)]), both in the order of ``nodes``."""
    ignored = tuple(ignore_taint_keys)
    eligible: list[str] = []
    excluded: list[tuple[str, str]] = []
    for node in nodes:
        reasons = exclusion_reasons(node, daemonset, image_architectures, ignored)
        name = node["metadata"]["name"]
        if reasons:
            excluded.append((name, "; ".join(reasons)))
        else:
            eligible.append(name)
    return eligible, excluded
