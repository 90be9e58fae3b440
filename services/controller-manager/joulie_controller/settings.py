"""Settings of the controller manager, read from environment variables (names as in the Go original).

Every field says its unit and default. Parsing is strict: a malformed value is an error naming the
variable, the value and what was expected, raised at startup rather than guessed around.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Final

from joulie_api.controller_env import CONTROLLER_ENV
from joulie_api.names import LABEL_POOL, LABEL_POWER_PROFILE, LABEL_RESERVED

POLICIES: Final = ("static_partition", "queue_aware_v1", "rule_swap_v1", "cluster_power_budget", "work_aware_v1")
METRIC_NAMINGS: Final = ("underscore-suffixes", "underscore", "utf8-suffixes", "utf8")
POWER_SOURCES: Final = ("prometheus", "static")
POWER_SCOPES: Final = ("auto", "host", "components")
POWER_POLICIES: Final = ("none", "idle_suspend_v1")
MIN_CAP_PCT: Final = 10.0
"""The lowest cap, % of max, the NodeTwin CRD accepts (charts/joulie/crds: packagePowerCapPctOfMax, capPctOfMax)."""

_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?$")


class SettingsError(ValueError):
    """An environment variable with a value we cannot use."""


def parse_duration_s(name: str, raw: str) -> float:
    """Go-style durations: 1m, 30s, 1h30m, 1.5s; a bare number is seconds."""
    text = raw.strip()
    try:
        value = float(text)
    except ValueError:
        m = _DURATION.match(text)
        if not text or not m or not any(m.groups()):
            raise SettingsError(f"{name}={raw!r}: expected a duration such as 30s, 1m or 1h30m") from None
        h, mi, s = (float(g) if g else 0.0 for g in m.groups())
        value = h * 3600 + mi * 60 + s
    if not math.isfinite(value) or value <= 0:
        raise SettingsError(f"{name}={raw!r}: expected a positive duration")
    return value


@dataclass(frozen=True)
class GpuModelCaps:
    min_cap_w: float
    max_cap_w: float


@dataclass(frozen=True)
class Settings:
    """All knobs. Units are in the names (`_s` seconds, `_w` watts, `_pct` percent of max)."""

    reconcile_interval_s: float = 60.0
    """RECONCILE_INTERVAL, default 1m."""
    status_refresh_s: float = 120.0
    """STATUS_REFRESH_INTERVAL, default 2m: an unchanged NodeTwin status is rewritten (lastUpdated only)
    this often, well inside the extender's 5 min staleness threshold; changed values are written at once."""
    write_concurrency: int = 8
    """WRITE_CONCURRENCY, default 8: Nodes whose NodeTwin writes go to the API server at once (one
    Node's spec, label and status stay in order). 1: one at a time, as before."""
    status_deadband_pct: float = 1.0
    """STATUS_DEADBAND_PCT, default 1: how far a measured value (node power, its trend, the headroom,
    cooling and PSU scores, PUE) may move, in percent, before the move alone is worth a status write
    (reconcile.measured_within). Every node's measured power moves a little each tick, so without it
    every twin was written every tick (17 writes/s at 1000 Nodes); inside it the value is written at
    the next refresh. 0: every 0.1 W change is written at once."""
    agent_lost_after_s: float = 120.0
    """AGENT_LOST_AFTER, default 2m (four agent heartbeats): a node whose agent's heartbeat
    (controlStatus.heartbeatAt) is older than this is marked agent-lost (status.agent)."""
    metrics_addr: str = "127.0.0.1:8081"
    """METRICS_ADDR, default 127.0.0.1:8081 (the original bound :8081 on every interface)."""
    node_selector: str = "joulie.io/managed=true"
    """NODE_SELECTOR: `key` or `key=value`, comma-separated, all must match. Default joulie.io/managed=true."""
    reserved_label_key: str = LABEL_RESERVED
    """RESERVED_LABEL_KEY: value "true" excludes the node from policy."""
    power_profile_label: str = LABEL_POWER_PROFILE
    """POWER_PROFILE_LABEL."""
    policy_type: str = "static_partition"
    """POLICY_TYPE: static_partition, queue_aware_v1, rule_swap_v1, cluster_power_budget or work_aware_v1."""
    static_hp_frac: float = 0.5
    """STATIC_HP_FRAC: share of nodes kept performance, 0..1 (clamped)."""
    queue_hp_base_frac: float = 0.6
    queue_hp_min: int = 1
    queue_hp_max: int = 1_000_000
    queue_perf_per_hp_node: int = 10
    """QUEUE_PERF_PER_HP_NODE: running performance pods one performance node absorbs; ≤0 means 1."""
    cluster_power_budget_w: float = 0.0
    """CLUSTER_POWER_BUDGET_W: cap on the sum of node capped budgets for cluster_power_budget; 0 = none."""
    cluster_budget_min_pct: float = 30.0
    work_aware_slowdown_pct: float = 3.0
    """WORK_AWARE_SLOWDOWN_BUDGET_PCT: work_aware_v1 caps a device only as far as every Pod on it is
    predicted to run at most this much longer (τ, %)."""
    work_aware_forecast_s: float = 120.0
    """WORK_AWARE_FORECAST_HORIZON: how far ahead work_aware_v1 extends the measured power trend when it
    checks CLUSTER_POWER_BUDGET_W (0 = measured power only)."""
    """CLUSTER_BUDGET_MIN_CAP_PCT: lowest cap the budget policy lowers eco nodes to, % of max."""
    performance_cap_w: float = 5000.0
    """PERFORMANCE_CAP_WATTS: absolute CPU package cap for performance (effectively uncapped)."""
    eco_cap_w: float = 120.0
    """ECO_CAP_WATTS: absolute CPU package cap for eco."""
    cpu_performance_pct: float = 100.0
    cpu_eco_pct: float = 60.0
    cpu_write_absolute: bool = False
    gpu_performance_pct: float = 100.0
    gpu_eco_pct: float = 60.0
    """GPU_ECO_CAP_PCT_OF_MAX; ≤0 disables the GPU cap intent."""
    gpu_write_absolute: bool = False
    gpu_model_caps: Mapping[str, GpuModelCaps] = field(default_factory=dict)
    """GPU_MODEL_CAPS_JSON: {"<product>": {"minCapWatts": N, "maxCapWatts": M}}."""
    gpu_product_label_keys: tuple[str, ...] = (
        "joulie.io/gpu.product", "nvidia.com/gpu.product", "amd.com/gpu.product", "amd.com/gpu.family",
    )
    leader_elect: bool = False
    lease_name: str = "joulie-controller-manager"
    pod_namespace: str = "joulie-system"
    lease_duration_s: float = 15.0
    """LEADER_ELECTION_LEASE_DURATION, default 15s."""
    node_power_source: str = "prometheus"
    """NODE_POWER_SOURCE: prometheus (default; reads the OpenTelemetry hw.* metrics) or static (no data)."""
    prometheus_address: str = ""
    """NODE_POWER_PROMETHEUS_ADDRESS, e.g. http://prometheus:9090. Empty: every node has no data."""
    prometheus_timeout_s: float = 5.0
    power_rate_window: str = "2m"
    """NODE_POWER_RATE_WINDOW: range of rate() over the energy counter."""
    metric_naming: str = "underscore-suffixes"
    """OTEL_METRIC_NAMING: how Prometheus translated OTel names (translation_strategy):
    underscore-suffixes = UnderscoreEscapingWithSuffixes (hw_host_energy_joules_total),
    underscore = UnderscoreEscapingWithoutSuffixes, utf8-suffixes = NoUTF8EscapingWithSuffixes,
    utf8 = NoTranslation."""
    node_attributes_promoted: bool = True
    """OTEL_NODE_ATTRIBUTE_PROMOTED: false joins target_info to find k8s.node.name."""
    node_attribute: str = "k8s.node.name"
    """OTEL_NODE_ATTRIBUTE: resource attribute naming the node."""
    node_power_scope: str = "auto"
    """NODE_POWER_SCOPE: host (hw.host.energy / hw.host.power only), components (sum of hw.energy /
    hw.power over the node's components) or auto (default: host, else components, per node)."""
    node_power_query: str = ""
    """NODE_POWER_PROMETHEUS_QUERY: a custom PromQL returning watts with one series per node, labelled
    by the node attribute; overrides the generated queries."""
    enable_facility_metrics: bool = False
    """ENABLE_FACILITY_METRICS: poll facility metrics (ambient, IT/cooling power, zones, racks, inlets)."""
    facility_prometheus_address: str = ""
    """FACILITY_PROMETHEUS_ADDRESS: empty means NODE_POWER_PROMETHEUS_ADDRESS."""
    facility_poll_interval_s: float = 30.0
    """FACILITY_POLL_INTERVAL, default 30s."""
    facility_ambient_metric: str = "joulie.facility.ambient.temperature"
    """FACILITY_AMBIENT_TEMP_METRIC: OTel gauge, Cel (outdoor/supply air)."""
    facility_it_power_metric: str = "joulie.facility.it.power"
    """FACILITY_IT_POWER_METRIC: OTel gauge, W."""
    facility_cooling_power_metric: str = "joulie.facility.cooling.power"
    """FACILITY_COOLING_POWER_METRIC: OTel gauge, W."""
    facility_zone_ambient_metric: str = "joulie.cooling_zone.ambient.temperature"
    """FACILITY_ZONE_AMBIENT_METRIC: OTel gauge, Cel, attribute joulie.cooling_zone."""
    facility_rack_power_metric: str = "joulie.rack.power"
    """FACILITY_RACK_POWER_METRIC: OTel gauge, W, attribute joulie.rack."""
    facility_inlet_metric: str = "hw.host.ambient_temperature"
    """FACILITY_NODE_INLET_TEMP_METRIC: OTel gauge, Cel, per node (the node attribute)."""

    power_policy: str = "none"
    """POWER_POLICY: none (default: no node is ever cordoned, powered off or on) or idle_suspend_v1
    (idle nodes suspended through their BMCs, resumed for Pending Pods; docs/suspend-resume.md)."""
    suspend_after_s: float = 600.0
    """SUSPEND_AFTER, default 10m: how long a node has had no workload Pods (DaemonSet Pods aside)
    before it is cordoned for suspend."""
    suspend_timeout_s: float = 300.0
    """SUSPEND_TIMEOUT, default 5m: from the cordon to the BMC reading off; past it the node is failed."""
    resume_timeout_s: float = 900.0
    """RESUME_TIMEOUT, default 15m: from the power-on to the BMC reading on and the Node Ready; past it
    the node is failed, left cordoned and not retried."""
    suspend_min_powered: int = 1
    """SUSPEND_MIN_POWERED, default 1: powered, schedulable nodes each pool keeps (the floor)."""
    suspend_max_concurrent: int = 2
    """SUSPEND_MAX_CONCURRENT, default 2: nodes suspending or resuming at once, cluster-wide."""
    suspend_pool_label: str = LABEL_POOL
    """SUSPEND_POOL_LABEL, default joulie.io/pool: nodes with the same value are one pool for the
    floor; nodes without the label are the pool "default"."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        return _parse(cls, env)


def _bool(name: str, raw: str) -> bool:
    v = raw.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off", ""):
        return False
    raise SettingsError(f"{name}={raw!r}: expected true or false")


def _float(name: str, raw: str) -> float:
    try:
        v = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected a number") from None
    if not math.isfinite(v):
        raise SettingsError(f"{name}={raw!r}: expected a finite number")
    return v


def _int(name: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected an integer") from None


def _gpu_caps(name: str, raw: str) -> dict[str, GpuModelCaps]:
    try:
        data = json.loads(raw or "{}")
    except ValueError as err:
        raise SettingsError(f"{name}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{name}: expected a JSON object of product -> {{minCapWatts, maxCapWatts}}")
    out: dict[str, GpuModelCaps] = {}
    for product, caps in data.items():
        if not isinstance(caps, dict) or not isinstance(caps.get("maxCapWatts"), (int, float)):
            raise SettingsError(f"{name}[{product!r}]: expected {{\"minCapWatts\": N, \"maxCapWatts\": M}}")
        lo = caps.get("minCapWatts", 0)
        if not isinstance(lo, (int, float)):
            raise SettingsError(f"{name}[{product!r}].minCapWatts={lo!r}: expected a number")
        out[str(product)] = GpuModelCaps(float(lo), float(caps["maxCapWatts"]))
    return out


def _parse(cls: type[Settings], env: Mapping[str, str]) -> Settings:
    values: dict[str, Any] = {}
    for f in fields(cls):
        name = CONTROLLER_ENV[f.name]
        raw = env.get(name)
        if raw is None:
            continue
        default = getattr(cls(), f.name)
        if f.name.endswith("_s") and f.name != "power_rate_window":
            values[f.name] = parse_duration_s(name, raw)
        elif isinstance(default, bool):
            values[f.name] = _bool(name, raw)
        elif isinstance(default, int):
            values[f.name] = _int(name, raw)
        elif isinstance(default, float):
            values[f.name] = _float(name, raw)
        elif f.name == "gpu_model_caps":
            values[f.name] = _gpu_caps(name, raw)
        elif f.name == "gpu_product_label_keys":
            values[f.name] = tuple(k.strip() for k in raw.split(",") if k.strip())
        else:
            values[f.name] = raw.strip()
    s = cls(**values)
    if s.policy_type not in POLICIES:
        raise SettingsError(f"POLICY_TYPE={s.policy_type!r}: expected one of {', '.join(POLICIES)}")
    if s.metric_naming not in METRIC_NAMINGS:
        raise SettingsError(f"OTEL_METRIC_NAMING={s.metric_naming!r}: expected one of {', '.join(METRIC_NAMINGS)}")
    if s.node_power_source not in POWER_SOURCES:
        raise SettingsError(f"NODE_POWER_SOURCE={s.node_power_source!r}: expected one of {', '.join(POWER_SOURCES)}")
    if s.node_power_scope not in POWER_SCOPES:
        raise SettingsError(f"NODE_POWER_SCOPE={s.node_power_scope!r}: expected one of {', '.join(POWER_SCOPES)}")
    if s.power_policy not in POWER_POLICIES:
        raise SettingsError(f"POWER_POLICY={s.power_policy!r}: expected one of {', '.join(POWER_POLICIES)}")
    if not 1 <= s.write_concurrency <= 64:
        raise SettingsError(f"WRITE_CONCURRENCY={s.write_concurrency}: expected 1 to 64 Nodes at once")
    if not 0 <= s.status_deadband_pct <= 10:
        raise SettingsError(f"STATUS_DEADBAND_PCT={s.status_deadband_pct:g}: expected 0 to 10 percent")
    if s.suspend_min_powered < 0:
        raise SettingsError(f"SUSPEND_MIN_POWERED={s.suspend_min_powered}: expected 0 or more nodes")
    if s.suspend_max_concurrent < 1:
        raise SettingsError(f"SUSPEND_MAX_CONCURRENT={s.suspend_max_concurrent}: expected at least 1 node")
    for pct_field in ("cpu_performance_pct", "cpu_eco_pct", "gpu_performance_pct", "gpu_eco_pct", "cluster_budget_min_pct"):
        v = getattr(s, pct_field)
        if 0 < v < MIN_CAP_PCT:
            raise SettingsError(f"{CONTROLLER_ENV[pct_field]}={v:g}: below the {MIN_CAP_PCT:g} % of max the NodeTwin CRD accepts "
                                f"(what hardware enforces); use 0 for no cap, or at least {MIN_CAP_PCT:g}")
    if s.policy_type == "cluster_power_budget" and s.cluster_power_budget_w <= 0:
        raise SettingsError("CLUSTER_POWER_BUDGET_W must be > 0 watts with POLICY_TYPE=cluster_power_budget")
    return s


def selector_matches(selector: str, labels: Mapping[str, str]) -> bool:
    """NODE_SELECTOR semantics: comma-separated `key` (exists) or `key=value`, all must hold."""
    for part in selector.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" in part:
            key, _, value = part.partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
        elif part not in labels:
            return False
    return True
