"""The controller manager's environment variables (names as in the Go original), by the name of
the settings field each one sets.

A contract between the controller manager (which parses them), the chart (which sets them) and
the simulated cluster (which starts the controller with the benchmark's settings): it lives here
so those never import the controller's internals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

CONTROLLER_ENV: Final[Mapping[str, str]] = {
    "reconcile_interval_s": "RECONCILE_INTERVAL",
    "status_refresh_s": "STATUS_REFRESH_INTERVAL",
    "status_deadband_pct": "STATUS_DEADBAND_PCT",
    "write_concurrency": "WRITE_CONCURRENCY",
    "agent_lost_after_s": "AGENT_LOST_AFTER",
    "metrics_addr": "METRICS_ADDR",
    "node_selector": "NODE_SELECTOR",
    "reserved_label_key": "RESERVED_LABEL_KEY",
    "power_profile_label": "POWER_PROFILE_LABEL",
    "policy_type": "POLICY_TYPE",
    "static_hp_frac": "STATIC_HP_FRAC",
    "queue_hp_base_frac": "QUEUE_HP_BASE_FRAC",
    "queue_hp_min": "QUEUE_HP_MIN",
    "queue_hp_max": "QUEUE_HP_MAX",
    "queue_perf_per_hp_node": "QUEUE_PERF_PER_HP_NODE",
    "cluster_power_budget_w": "CLUSTER_POWER_BUDGET_W",
    "cluster_budget_min_pct": "CLUSTER_BUDGET_MIN_CAP_PCT",
    "work_aware_slowdown_pct": "WORK_AWARE_SLOWDOWN_BUDGET_PCT",
    "work_aware_forecast_s": "WORK_AWARE_FORECAST_HORIZON",
    "performance_cap_w": "PERFORMANCE_CAP_WATTS",
    "eco_cap_w": "ECO_CAP_WATTS",
    "cpu_performance_pct": "CPU_PERFORMANCE_CAP_PCT_OF_MAX",
    "cpu_eco_pct": "CPU_ECO_CAP_PCT_OF_MAX",
    "cpu_write_absolute": "CPU_WRITE_ABSOLUTE_CAPS",
    "gpu_performance_pct": "GPU_PERFORMANCE_CAP_PCT_OF_MAX",
    "gpu_eco_pct": "GPU_ECO_CAP_PCT_OF_MAX",
    "gpu_write_absolute": "GPU_WRITE_ABSOLUTE_CAPS",
    "gpu_model_caps": "GPU_MODEL_CAPS_JSON",
    "gpu_product_label_keys": "GPU_PRODUCT_LABEL_KEYS",
    "leader_elect": "LEADER_ELECT",
    "lease_name": "LEADER_ELECTION_LEASE_NAME",
    "pod_namespace": "POD_NAMESPACE",
    "lease_duration_s": "LEADER_ELECTION_LEASE_DURATION",
    "node_power_source": "NODE_POWER_SOURCE",
    "prometheus_address": "NODE_POWER_PROMETHEUS_ADDRESS",
    "prometheus_timeout_s": "NODE_POWER_PROMETHEUS_TIMEOUT",
    "power_rate_window": "NODE_POWER_RATE_WINDOW",
    "metric_naming": "OTEL_METRIC_NAMING",
    "node_attributes_promoted": "OTEL_NODE_ATTRIBUTE_PROMOTED",
    "node_attribute": "OTEL_NODE_ATTRIBUTE",
    "node_power_scope": "NODE_POWER_SCOPE",
    "node_power_query": "NODE_POWER_PROMETHEUS_QUERY",
    "enable_facility_metrics": "ENABLE_FACILITY_METRICS",
    "facility_prometheus_address": "FACILITY_PROMETHEUS_ADDRESS",
    "facility_poll_interval_s": "FACILITY_POLL_INTERVAL",
    "facility_ambient_metric": "FACILITY_AMBIENT_TEMP_METRIC",
    "facility_it_power_metric": "FACILITY_IT_POWER_METRIC",
    "facility_cooling_power_metric": "FACILITY_COOLING_POWER_METRIC",
    "facility_zone_ambient_metric": "FACILITY_ZONE_AMBIENT_METRIC",
    "facility_rack_power_metric": "FACILITY_RACK_POWER_METRIC",
    "facility_inlet_metric": "FACILITY_NODE_INLET_TEMP_METRIC",
    "power_policy": "POWER_POLICY",
    "suspend_after_s": "SUSPEND_AFTER",
    "suspend_timeout_s": "SUSPEND_TIMEOUT",
    "resume_timeout_s": "RESUME_TIMEOUT",
    "suspend_min_powered": "SUSPEND_MIN_POWERED",
    "suspend_max_concurrent": "SUSPEND_MAX_CONCURRENT",
    "suspend_pool_label": "SUSPEND_POOL_LABEL",
}


def env_name(field_name: str) -> str:
    """The variable that sets the controller settings field ``field_name``."""
    return CONTROLLER_ENV[field_name]
