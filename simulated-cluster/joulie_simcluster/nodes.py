"""The fake Node objects a cluster spec implies.

Each pool member ``<pool>-<i>`` is the simulator's Node for its profile
(:func:`joulie_hwprofiles.nodeobject.node_object`: labels, NFD/GFD, taints, capacity, allocatable,
architecture) plus ``sim.joulie.io/cluster=<spec>``, ``sim.joulie.io/pool=<pool>``, the KWOK
annotation and taint, with the spec's labels and taints merged on top (a spec taint replaces the
profile's taint of the same key and effect) and its architecture override applied.
"""

from __future__ import annotations

from typing import Any

from joulie_api import names
from joulie_hwprofiles.nodeobject import node_object
from joulie_hwprofiles.schema import Profile, builtin_profile
from joulie_simcluster.spec import ClusterSpec, Pool

# The same strings as joulie_localcluster.kwok (a test checks it); KWOK manages only annotated Nodes,
# and the taint keeps infrastructure pods off fake Nodes.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"
KWOK_TAINT_KEY = "kwok.x-k8s.io/node"
KWOK_TAINT: dict[str, str] = {"key": KWOK_TAINT_KEY, "value": "fake", "effect": "NoSchedule"}


def node_names(pool: Pool) -> list[str]:
    return [f"{pool.name}-{i}" for i in range(pool.count)]


def _merge_taints(base: list[dict[str, str]], over: list[dict[str, str]]) -> list[dict[str, str]]:
    out = {(t["key"], t["effect"]): t for t in base}
    for t in over:
        out[(t["key"], t["effect"])] = t
    return list(out.values())


def render_pool(spec: ClusterSpec, pool: Pool, profile: Profile) -> list[dict[str, Any]]:
    out = []
    for name in node_names(pool):
        extra = {names.LABEL_SIM_CLUSTER: spec.name, names.LABEL_SIM_POOL: pool.name, **pool.labels}
        node = node_object(profile, name, extra_labels=extra)
        meta, nspec, status = node["metadata"], node["spec"], node["status"]
        if pool.architecture is not None:
            meta["labels"]["kubernetes.io/arch"] = meta["labels"]["beta.kubernetes.io/arch"] = pool.architecture
            status["nodeInfo"]["architecture"] = pool.architecture
        meta["labels"] = dict(sorted(meta["labels"].items()))
        meta["annotations"][KWOK_NODE_ANNOTATION] = KWOK_NODE_ANNOTATION_VALUE
        spec_taints = [t.model_dump() for t in pool.taints]
        nspec["taints"] = _merge_taints(nspec.get("taints", []), [*spec_taints, dict(KWOK_TAINT)])
        out.append(node)
    return out


def render_nodes(spec: ClusterSpec) -> list[dict[str, Any]]:
    """Every Node of the spec, pools in spec order, members in index order."""
    profiles: dict[str, Profile] = {}
    out: list[dict[str, Any]] = []
    for pool in spec.pools:
        if pool.profile not in profiles:
            profiles[pool.profile] = builtin_profile(pool.profile)
        out.extend(render_pool(spec, pool, profiles[pool.profile]))
    return out
