"""The controller manager's environment variables (names as in the Go original), by the path of
the settings field each one sets (``group.field``, e.g. ``"suspend.after_s"`` for
``settings.suspend.after_s``; a field outside the groups by its name).

A contract between the controller manager (which parses them), the chart (which sets them) and
the simulated cluster (which starts the controller with the benchmark's settings): it lives here
so those never import the controller's internals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

CONTROLLER_ENV: Final[Mapping[str, str]] = {
    "reconcile.interval_s": "RECONCILE_INTERVAL",
    "reconcile.status_refresh_s": "STATUS_REFRESH_INTERVAL",
    "reconcile.status_deadband_pct": "STATUS_DEADBAND_PCT",
    "reconcile.write_concurrency": "WRITE_CONCURRENCY",
    "reconcile.watch_cluster": "WATCH_CLUSTER",
    "reconcile.cache_resync_s": "CACHE_RESYNC_INTERVAL",
    "reconcile.receipts": "ENERGY_RECEIPTS",
    "reconcile.receipt_window_s": "RECEIPT_WINDOW",
    "agent_lost_after_s": "AGENT_LOST_AFTER",
    "agent_lease_namespace": "AGENT_LEASE_NAMESPACE",
    "agent_liveness_window_s": "AGENT_LIVENESS_WINDOW",
    "api_timeout_s": "KUBE_API_TIMEOUT",
    "metrics_addr": "METRICS_ADDR",
    "trusted_namespaces": "TRUSTED_NAMESPACES",
    "scheduler_names": "SCHEDULER_NAMES",
    "nodes.selector": "NODE_SELECTOR",
    "nodes.reserved_label_key": "RESERVED_LABEL_KEY",
    "nodes.profile_label": "POWER_PROFILE_LABEL",
    "policy.type": "POLICY_TYPE",
    "policy.static_hp_frac": "STATIC_HP_FRAC",
    "policy.queue_hp_base_frac": "QUEUE_HP_BASE_FRAC",
    "policy.queue_hp_min": "QUEUE_HP_MIN",
    "policy.queue_hp_max": "QUEUE_HP_MAX",
    "policy.queue_perf_per_hp_node": "QUEUE_PERF_PER_HP_NODE",
    "policy.power_budget_w": "CLUSTER_POWER_BUDGET_W",
    "policy.budget_min_cap_pct": "CLUSTER_BUDGET_MIN_CAP_PCT",
    "policy.slowdown_budget_pct": "WORK_AWARE_SLOWDOWN_BUDGET_PCT",
    "policy.forecast_horizon_s": "WORK_AWARE_FORECAST_HORIZON",
    "policy.slowdown_annotation_namespaces": "SLOWDOWN_ANNOTATION_NAMESPACES",
    "policy.max_slowdown_ceiling_pct": "MAX_SLOWDOWN_CEILING_PCT",
    "caps.performance_cap_w": "PERFORMANCE_CAP_WATTS",
    "caps.eco_cap_w": "ECO_CAP_WATTS",
    "caps.cpu_performance_pct": "CPU_PERFORMANCE_CAP_PCT_OF_MAX",
    "caps.cpu_eco_pct": "CPU_ECO_CAP_PCT_OF_MAX",
    "caps.cpu_write_absolute": "CPU_WRITE_ABSOLUTE_CAPS",
    "caps.gpu_performance_pct": "GPU_PERFORMANCE_CAP_PCT_OF_MAX",
    "caps.gpu_eco_pct": "GPU_ECO_CAP_PCT_OF_MAX",
    "caps.gpu_write_absolute": "GPU_WRITE_ABSOLUTE_CAPS",
    "caps.gpu_model_caps": "GPU_MODEL_CAPS_JSON",
    "caps.gpu_product_label_keys": "GPU_PRODUCT_LABEL_KEYS",
    "leader.elect": "LEADER_ELECT",
    "leader.lease_name": "LEADER_ELECTION_LEASE_NAME",
    "pod_namespace": "POD_NAMESPACE",
    "leader.lease_duration_s": "LEADER_ELECTION_LEASE_DURATION",
    "prometheus.power_source": "NODE_POWER_SOURCE",
    "prometheus.url": "NODE_POWER_PROMETHEUS_ADDRESS",
    "prometheus.timeout_s": "NODE_POWER_PROMETHEUS_TIMEOUT",
    "prometheus.ca_file": "NODE_POWER_PROMETHEUS_CA_FILE",
    "prometheus.client_cert_file": "NODE_POWER_PROMETHEUS_CLIENT_CERT_FILE",
    "prometheus.client_key_file": "NODE_POWER_PROMETHEUS_CLIENT_KEY_FILE",
    "prometheus.rate_window": "NODE_POWER_RATE_WINDOW",
    "prometheus.metric_naming": "OTEL_METRIC_NAMING",
    "prometheus.node_attribute_promoted": "OTEL_NODE_ATTRIBUTE_PROMOTED",
    "prometheus.node_attribute": "OTEL_NODE_ATTRIBUTE",
    "prometheus.power_scope": "NODE_POWER_SCOPE",
    "prometheus.power_query": "NODE_POWER_PROMETHEUS_QUERY",
    "facility.enabled": "ENABLE_FACILITY_METRICS",
    "facility.prometheus_url": "FACILITY_PROMETHEUS_ADDRESS",
    "facility.poll_interval_s": "FACILITY_POLL_INTERVAL",
    "facility.ambient_metric": "FACILITY_AMBIENT_TEMP_METRIC",
    "facility.it_power_metric": "FACILITY_IT_POWER_METRIC",
    "facility.cooling_power_metric": "FACILITY_COOLING_POWER_METRIC",
    "facility.zone_ambient_metric": "FACILITY_ZONE_AMBIENT_METRIC",
    "facility.rack_power_metric": "FACILITY_RACK_POWER_METRIC",
    "facility.inlet_metric": "FACILITY_NODE_INLET_TEMP_METRIC",
    "suspend.power_policy": "POWER_POLICY",
    "suspend.after_s": "SUSPEND_AFTER",
    "suspend.timeout_s": "SUSPEND_TIMEOUT",
    "suspend.resume_timeout_s": "RESUME_TIMEOUT",
    "suspend.resume_retries": "RESUME_RETRIES",
    "suspend.resume_retry_backoff_s": "RESUME_RETRY_BACKOFF",
    "suspend.min_powered": "SUSPEND_MIN_POWERED",
    "suspend.min_powered_by_pool": "SUSPEND_MIN_POWERED_BY_POOL",
    "suspend.ramp_limit_w_per_sec": "POWER_RAMP_LIMIT_W_PER_S",
    "suspend.max_concurrent": "SUSPEND_MAX_CONCURRENT",
    "suspend.pool_label": "SUSPEND_POOL_LABEL",
    "suspend.warm_wait_target_s": "WARM_POOL_WAIT_TARGET",
    "suspend.warm_quantile_pct": "WARM_POOL_QUANTILE",
    "suspend.boot_estimate_s": "RESUME_BOOT_ESTIMATE",
    "suspend.forecast_half_life_s": "FORECAST_HALF_LIFE",
    "suspend.forecast_day_s": "FORECAST_DAY",
    "suspend.forecast_min_days": "FORECAST_MIN_DAYS",
    "suspend.max_cycles_per_day": "MAX_POWER_CYCLES_PER_DAY",
    "suspend.suspend_rate_per_min": "SUSPEND_RATE",
    "suspend.resume_rate_per_min": "RESUME_RATE",
}


def env_name(path: str) -> str:
    """The variable that sets the controller settings field at ``path`` (``group.field``)."""
    return CONTROLLER_ENV[path]
