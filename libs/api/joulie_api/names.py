"""Names every Joulie component agrees on: API group, kinds, labels, annotations, field managers.

Contract tests check these strings; other components (and the Go original's users) depend on them.
"""

from __future__ import annotations

import functools
import re
from typing import Final

GROUP: Final = "joulie.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

KIND_NODE_HARDWARE: Final = "NodeHardware"
PLURAL_NODE_HARDWARE: Final = "nodehardwares"
KIND_NODE_TWIN: Final = "NodeTwin"
PLURAL_NODE_TWIN: Final = "nodetwins"

# Field managers: ownership of NodeTwin/NodeHardware fields is enforced through server-side apply.
FIELD_MANAGER_AGENT: Final = "joulie-agent"
FIELD_MANAGER_CONTROLLER_MANAGER: Final = "joulie-controller-manager"
# The controller manager's liveness check owns status.agent only (its own manager, so the main status
# apply, which leaves status.agent out, does not remove it).
FIELD_MANAGER_LIVENESS: Final = "joulie-controller-manager-liveness"

# Node labels.
LABEL_POWER_PROFILE: Final = "joulie.io/power-profile"
LABEL_MANAGED: Final = "joulie.io/managed"
LABEL_RESERVED: Final = "joulie.io/reserved"
LABEL_RACK: Final = "joulie.io/rack"
LABEL_COOLING_ZONE: Final = "joulie.io/cooling-zone"
LABEL_HW_CPU_MODEL: Final = "joulie.io/hw.cpu-model"
LABEL_HW_CPU_SOCKETS: Final = "joulie.io/hw.cpu-sockets"
LABEL_HW_GPU_MODEL: Final = "joulie.io/hw.gpu-model"
LABEL_HW_GPU_COUNT: Final = "joulie.io/hw.gpu-count"
LABEL_GPU_PRODUCT: Final = "joulie.io/gpu.product"
LABEL_NFD_CPU_MODEL: Final = "feature.node.kubernetes.io/cpu-model.name"
LABEL_NFD_CPU_SOCKETS: Final = "feature.node.kubernetes.io/cpu-sockets"
LABEL_NVIDIA_GPU_PRODUCT: Final = "nvidia.com/gpu.product"
LABEL_AMD_GPU_PRODUCT: Final = "amd.com/gpu.product"
LABEL_AMD_GPU_FAMILY: Final = "amd.com/gpu.family"

# Pod annotation: placement intent of a workload.
ANNOTATION_WORKLOAD_CLASS: Final = "joulie.io/workload-class"
LABEL_WORKLOAD_KIND: Final = "joulie.io/workload-kind"
"""How a Pod's work responds to a power cap (gpu-training, gpu-inference, cpu-compute, cpu-memory);
a label or an annotation. The work-aware policy and the extender read it."""

ANNOTATION_ENERGY_RECEIPT: Final = "joulie.io/energy-receipt"
"""A Pod's energy receipt (``joulie_api.receipt``: JSON, energy by device kind and what the caps saved),
written by the controller manager; ``kubectl joulie receipt(s)`` reads it (docs/energy-receipts.md)."""
ANNOTATION_MAX_SLOWDOWN: Final = "joulie.io/max-slowdown"
"""The slowdown a Pod's owner accepts ("10%" or "0.1"): work_aware_v1 honours it only for Pods in
SLOWDOWN_ANNOTATION_NAMESPACES, bounded by MAX_SLOWDOWN_CEILING_PCT; any other Pod runs at
WORK_AWARE_SLOWDOWN_BUDGET_PCT."""

PROFILE_PERFORMANCE: Final = "performance"
PROFILE_ECO: Final = "eco"
WORKLOAD_CLASS_PERFORMANCE: Final = "performance"
WORKLOAD_CLASS_STANDARD: Final = "standard"

# Simulated cluster (sim.joulie.io/*).
LABEL_SIM_CLUSTER: Final = "sim.joulie.io/cluster"
LABEL_SIM_POOL: Final = "sim.joulie.io/pool"
ANNOTATION_SIM_RELOAD: Final = "sim.joulie.io/reload"

# Node power states (issue 20, docs/suspend-resume.md): the controller's power policy cordons an idle
# node, taints it TAINT_SUSPENDED (effect NoSchedule) and powers it off through its BMC; it powers it
# on again when Pending Pods need it. A node labelled or annotated SUSPEND_EXCLUDE=true is never
# suspended. NodeTwin status.power.state is one of POWER_STATES, spec.power.state one of on/off.
TAINT_SUSPENDED: Final = "joulie.io/suspended"
TAINT_SUSPENDED_EFFECT: Final = "NoSchedule"
SUSPEND_EXCLUDE: Final = "joulie.io/suspend-exclude"
LABEL_POOL: Final = "joulie.io/pool"
"""The default SUSPEND_POOL_LABEL: nodes with the same value share one floor of powered nodes."""
POWER_ON: Final = "on"
POWER_SUSPENDING: Final = "suspending"
POWER_OFF: Final = "off"
POWER_RESUMING: Final = "resuming"
POWER_FAILED: Final = "failed"
POWER_STATES: Final = (POWER_ON, POWER_SUSPENDING, POWER_OFF, POWER_RESUMING, POWER_FAILED)

# Extended resources a node advertises for GPUs.
RESOURCE_NVIDIA_GPU: Final = "nvidia.com/gpu"
RESOURCE_AMD_GPU: Final = "amd.com/gpu"

_NOT_DNS_CHAR = re.compile(r"[^a-z0-9-]")


# Cached: the controller asks it for every node several times a tick (the regular expression was
# a quarter of a steady tick's per-node work at 10 000 Nodes, issue 39), always for the same names.
@functools.lru_cache(maxsize=1 << 16)
def object_name_for_node(node_name: str) -> str:
    """Name of the NodeHardware and NodeTwin objects of a node.

    Lower-case and trim, replace every character outside [a-z0-9-] with '-', trim leading and
    trailing '-'. Repeated dashes are kept and there is no length limit, exactly as the Go
    original's ObjectNameForNode, so both implementations address the same objects.
    """
    name = _NOT_DNS_CHAR.sub("-", node_name.strip().lower()).strip("-")
    if not name:
        raise ValueError(f"node name {node_name!r} has no character usable in an object name")
    return name


LABEL_AGENT_HEARTBEAT: Final = "joulie.io/agent-heartbeat"
"""On every agent heartbeat Lease (value "true"): the controller manager watches only these."""
AGENT_LEASE_PREFIX: Final = "joulie-agent-"
"""Every agent heartbeat Lease's name starts so; the admission policy lets agents write no other Lease."""


def agent_lease_name(node_name: str) -> str:
    """Name of the agent heartbeat Lease of a node (in the agents' Lease namespace). For a valid
    node name it is ``'joulie-agent-' + name.replace('.', '-')``, as the admission policy checks."""
    return AGENT_LEASE_PREFIX + object_name_for_node(node_name)
