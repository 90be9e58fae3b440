"""The controller manager's public surface, pure part: what the products (the simulated cluster, the
benchmark, the acceptance tests) may import of its model, policies and settings. It imports no I/O (the
pure-core contract covers it), so a pure product module may use it; the controller and its shells are in
``shell_api``. Everything else in ``joulie_controller`` is internal and may move; the layering test
refuses a product import of any other module (``repo_packages.py``).

- its settings (``Settings`` and its groups, from the environment as the chart sets it);
- the pure core the benchmark drives on its accelerated clock: ``reconcile`` over a ``Snapshot``, its
  ``Memory`` between ticks, ``apply_in_memory``, the node and Pod views (``NodeInfo``, ``PodInfo``), and
  the refused power actions the shell keeps between ticks (``Refusal``, ``refused_again``, ``forget_settled``);
- energy receipts (``attribute`` over a ``NodeEnergy``, ``counterfactual``, ``Ledger``: docs/energy-receipts.md);
- the queries and models the products check a cluster against: PromQL (``power_queries``,
  ``facility_queries``), the twin's formulas, the budget policy;
- the per-job estimate (``GpuSample`` in, ``JobEstimate`` out: ``prior_estimate``, ``observe``,
  ``probe_request``, ``expected_sample``) and the Pod key of ``Snapshot.gpu_samples`` (``pod_key``).
"""

from __future__ import annotations

from joulie_controller.model.counterfactual import METHOD as COUNTERFACTUAL_METHOD
from joulie_controller.model.counterfactual import Conditions, conditions_for_kind, counterfactual, package_busy
from joulie_controller.model.fsm import PodInfo, pod_key
from joulie_controller.model.hardware import HardwareView, NodeInfo, Taint, from_node_hardware
from joulie_controller.model.jobestimate import (
    GpuSample,
    JobEstimate,
    ProbeRequest,
    expected_sample,
    observe,
    prior_estimate,
    probe_request,
)
from joulie_controller.model.receipt import METHOD as RECEIPT_METHOD
from joulie_controller.model.receipt import (
    Attribution,
    Holding,
    IdleFloor,
    Ledger,
    NodeEnergy,
    Receipt,
    annotation,
    attribute,
    board_idle_w,
    package_idle_w,
)
from joulie_controller.model.twin import (
    NEUTRAL_COOLING_STRESS,
    TwinInput,
    TwinOutput,
    ambient_multiplier,
    headroom_score,
)
from joulie_controller.model.twin import compute as compute_twin
from joulie_controller.policies.plan import NodeCaps, PodDecision, PolicyNode
from joulie_controller.policies.powerbudget import cluster_power_budget
from joulie_controller.power.powerstate import BmcReading, BmcState
from joulie_controller.power.refusal import Refusal, forget_settled, refused_again
from joulie_controller.readings.facility import facility_queries, pue, read_facility
from joulie_controller.readings.promql import MetricNaming, power_queries
from joulie_controller.readings.receiptinputs import NodeFacts, node_energies, pod_cpu_seconds, receipt_queries
from joulie_controller.readings.values import Facility, Measurement
from joulie_controller.reconcile.snapshot import Memory, Snapshot, apply_in_memory
from joulie_controller.reconcile.tick import reconcile
from joulie_controller.settings import (
    CapSettings,
    FacilitySettings,
    LeaderSettings,
    NodeSettings,
    PolicySettings,
    PrometheusSettings,
    ReconcileSettings,
    Settings,
    SettingsError,
    SuspendSettings,
)

__all__ = [
    "COUNTERFACTUAL_METHOD",
    "RECEIPT_METHOD",
    "Attribution",
    "Conditions",
    "Holding",
    "IdleFloor",
    "Ledger",
    "NodeEnergy",
    "NodeFacts",
    "Receipt",
    "annotation",
    "attribute",
    "board_idle_w",
    "package_busy",
    "node_energies",
    "package_idle_w",
    "pod_cpu_seconds",
    "conditions_for_kind",
    "counterfactual",
    "NEUTRAL_COOLING_STRESS",
    "BmcReading",
    "BmcState",
    "CapSettings",
    "Facility",
    "FacilitySettings",
    "GpuSample",
    "HardwareView",
    "JobEstimate",
    "LeaderSettings",
    "Measurement",
    "Memory",
    "MetricNaming",
    "NodeCaps",
    "NodeInfo",
    "NodeSettings",
    "PodDecision",
    "PodInfo",
    "PolicyNode",
    "PolicySettings",
    "ProbeRequest",
    "PrometheusSettings",
    "ReconcileSettings",
    "Refusal",
    "Settings",
    "SettingsError",
    "Snapshot",
    "SuspendSettings",
    "Taint",
    "TwinInput",
    "TwinOutput",
    "ambient_multiplier",
    "apply_in_memory",
    "cluster_power_budget",
    "compute_twin",
    "expected_sample",
    "facility_queries",
    "forget_settled",
    "from_node_hardware",
    "headroom_score",
    "observe",
    "pod_key",
    "power_queries",
    "receipt_queries",
    "refused_again",
    "prior_estimate",
    "probe_request",
    "pue",
    "read_facility",
    "reconcile",
]
