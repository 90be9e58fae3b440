"""Settings of the controller manager, read from environment variables (names as in the Go original).

The fields come in named groups, one frozen dataclass each (``settings.policy.type``,
``settings.prometheus.url``, ``settings.suspend.after_s``, ...); every field says its variable, its
unit and its default. The variables are named in ``joulie_api.controller_env`` by the field's path
(``"suspend.after_s": "SUSPEND_AFTER"``), the contract the chart and the simulated cluster share.

Values are read with the repository's one settings grammar (``joulie_common.settingsgrammar``):
durations such as ``500ms``, ``90s`` or ``1h30m``, booleans ``true``/``false``/``1``/``0``/``yes``/
``no``/``on``/``off``, percentages ``60`` or ``60%``. Parsing is strict: a malformed value is an
error naming the variable, the value and what was expected, raised at startup rather than guessed
around. An empty variable is unset (its default), except for the text settings, where empty is a
value (``NODE_SELECTOR=`` selects every node).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Final

from joulie_api.controller_env import CONTROLLER_ENV
from joulie_api.names import LABEL_POWER_PROFILE, LABEL_RESERVED
from joulie_common.settingsgrammar import (
    SettingError,
    parse_bool,
    parse_duration,
    parse_float,
    parse_int,
    parse_percent,
    read_env,
)
from joulie_controller.suspendsettings import SuspendSettings as SuspendSettings  # re-exported: one Settings module
from joulie_telemetry.vocabulary import (
    FACILITY_AMBIENT,
    FACILITY_COOLING_POWER,
    FACILITY_IT_POWER,
    HOST_AMBIENT_TEMPERATURE,
    RACK_POWER,
    ZONE_AMBIENT,
)

POLICIES: Final = ("static_partition", "queue_aware_v1", "rule_swap_v1", "cluster_power_budget", "work_aware_v1")
"""The POLICY_TYPE names; ``policies.registry.REGISTRY`` has a policy for each (a test keeps them equal)."""
METRIC_NAMINGS: Final = ("underscore-suffixes", "underscore", "utf8-suffixes", "utf8")
POWER_SOURCES: Final = ("prometheus", "static")
POWER_SCOPES: Final = ("auto", "host", "components")
POWER_POLICIES: Final = ("none", "idle_suspend_v1", "forecast_suspend_v1")
MIN_CAP_PCT: Final = 10.0
"""The lowest cap, % of max, the NodeTwin CRD accepts (charts/joulie/crds: packagePowerCapPctOfMax, capPctOfMax)."""
MIN_PACKAGE_CAP_W: Final = 10.0
MAX_PACKAGE_CAP_W: Final = 5000.0
"""The package caps in watts the NodeTwin CRD accepts (packagePowerCapWatts' minimum and maximum)."""

SettingsError = SettingError
"""The controller's name for the grammar's error (its message names the variable and the value)."""


def parse_duration_s(name: str, raw: str) -> float:
    """A positive duration in seconds (every duration the controller reads is a period or a timeout)."""
    return parse_duration(name, raw, allow_zero=False)


@dataclass(frozen=True)
class GpuModelCaps:
    min_cap_w: float
    max_cap_w: float


@dataclass(frozen=True)
class ReconcileSettings:
    """The tick and its writes."""

    interval_s: float = 60.0
    """RECONCILE_INTERVAL, default 1m."""
    status_refresh_s: float = 120.0
    """STATUS_REFRESH_INTERVAL, default 2m: an unchanged NodeTwin status is rewritten (lastUpdated only)
    this often, well inside the extender's 5 min staleness threshold; changed values are written at once."""
    status_deadband_pct: float = 1.0
    """STATUS_DEADBAND_PCT, default 1 (0 to 10): how far a measured value (node power, its trend, the
    headroom, cooling and PSU scores, PUE) may move, in percent, before the move alone is worth a status
    write (reconcile.statusband.measured_within). Every node's measured power moves a little each tick, so
    without it every twin was written every tick (17 writes/s at 1000 Nodes); inside it the value is
    written at the next refresh. 0: every 0.1 W change is written at once."""
    write_concurrency: int = 8
    """WRITE_CONCURRENCY, default 8 (1 to 64): Nodes whose NodeTwin writes go to the API server at once
    (one Node's spec, label and status stay in order). 1: one at a time, as before."""
    watch_cluster: bool = True
    """WATCH_CLUSTER, default true: the tick reads Nodes, Pods, NodeHardware and NodeTwins from caches fed by
    watches (kube.informer: one LIST at start, then none while the watches stream). false: a LIST of each,
    every tick, as before issue 39."""
    cache_resync_s: float = 600.0
    """CACHE_RESYNC_INTERVAL, default 10m (at least 1m): each watched cache lists its resource again this often,
    a safety net against a watch that silently stopped delivering (a 410 Gone relists at once, whatever this)."""
    receipts: bool = True
    """ENERGY_RECEIPTS, default true (with NODE_POWER_PROMETHEUS_ADDRESS set): every RECEIPT_WINDOW, split the
    nodes' metered energy between the Pods that ran (docs/energy-receipts.md), annotate each running Pod with its
    receipt (joulie.io/energy-receipt), once more when it finishes with one Event, and export the receipts'
    metrics. false: none of it (the controller then patches no Pod and creates no Event)."""
    receipt_window_s: float = 60.0
    """RECEIPT_WINDOW, default 1m (at least 10s): how often the receipts are brought up to date; a running
    Pod's annotation is written at most this often. Closed at the first tick after it has passed."""


@dataclass(frozen=True)
class NodeSettings:
    """Which nodes the controller manages, and the label it writes on them."""

    selector: str = "joulie.io/managed=true"
    """NODE_SELECTOR: `key` or `key=value`, comma-separated, all must match. Default joulie.io/managed=true."""
    reserved_label_key: str = LABEL_RESERVED
    """RESERVED_LABEL_KEY: value "true" excludes the node from policy."""
    profile_label: str = LABEL_POWER_PROFILE
    """POWER_PROFILE_LABEL."""


@dataclass(frozen=True)
class PolicySettings:
    """The cap policy (POLICY_TYPE) and its knobs."""

    type: str = "static_partition"
    """POLICY_TYPE: static_partition, queue_aware_v1, rule_swap_v1, cluster_power_budget or work_aware_v1."""
    static_hp_frac: float = 0.5
    """STATIC_HP_FRAC: share of nodes kept performance, 0..1 (clamped)."""
    queue_hp_base_frac: float = 0.6
    """QUEUE_HP_BASE_FRAC."""
    queue_hp_min: int = 1
    """QUEUE_HP_MIN."""
    queue_hp_max: int = 1_000_000
    """QUEUE_HP_MAX."""
    queue_perf_per_hp_node: int = 10
    """QUEUE_PERF_PER_HP_NODE: running performance pods one performance node absorbs; ≤0 means 1."""
    power_budget_w: float = 0.0
    """CLUSTER_POWER_BUDGET_W: cap on the sum of node capped budgets for cluster_power_budget, on measured
    power for work_aware_v1; 0 = none."""
    budget_min_cap_pct: float = 30.0
    """CLUSTER_BUDGET_MIN_CAP_PCT: lowest cap the budget lowers eco nodes to, % of max."""
    slowdown_budget_pct: float = 3.0
    """WORK_AWARE_SLOWDOWN_BUDGET_PCT: work_aware_v1 caps a device only as far as every Pod on it is
    predicted to run at most this much longer (τ, %)."""
    forecast_horizon_s: float = 120.0
    """WORK_AWARE_FORECAST_HORIZON: how far ahead work_aware_v1 extends the measured power trend when it
    checks CLUSTER_POWER_BUDGET_W."""
    slowdown_annotation_namespaces: tuple[str, ...] = ()
    """SLOWDOWN_ANNOTATION_NAMESPACES, a comma list, default empty (nobody): the namespaces whose Pods'
    annotation joulie.io/max-slowdown ("10%" or "0.1") work_aware_v1 honours as the Pod's own slowdown
    budget; ``*`` honours every namespace. A tenant's word, so off unless an operator allows it; any
    other Pod runs at WORK_AWARE_SLOWDOWN_BUDGET_PCT and its decision says why."""
    max_slowdown_ceiling_pct: float = 10.0
    """MAX_SLOWDOWN_CEILING_PCT, default 10, 0 to 50: the most slowdown an annotation may ask for (%);
    a larger one is held to it."""


@dataclass(frozen=True)
class CapSettings:
    """The caps written for each profile, CPU and GPU."""

    performance_cap_w: float = 5000.0
    """PERFORMANCE_CAP_WATTS: absolute CPU package cap for performance (effectively uncapped)."""
    eco_cap_w: float = 120.0
    """ECO_CAP_WATTS: absolute CPU package cap for eco."""
    cpu_performance_pct: float = 100.0
    """CPU_PERFORMANCE_CAP_PCT_OF_MAX."""
    cpu_eco_pct: float = 60.0
    """CPU_ECO_CAP_PCT_OF_MAX."""
    cpu_write_absolute: bool = False
    """CPU_WRITE_ABSOLUTE_CAPS: watts (clamped to the NodeHardware cap range) instead of %."""
    gpu_performance_pct: float = 100.0
    """GPU_PERFORMANCE_CAP_PCT_OF_MAX."""
    gpu_eco_pct: float = 60.0
    """GPU_ECO_CAP_PCT_OF_MAX; ≤0 disables the GPU cap intent."""
    gpu_write_absolute: bool = False
    """GPU_WRITE_ABSOLUTE_CAPS: adds capWattsPerGpu (NodeHardware range, else GPU_MODEL_CAPS_JSON)."""
    gpu_model_caps: Mapping[str, GpuModelCaps] = field(default_factory=dict)
    """GPU_MODEL_CAPS_JSON: {"<product>": {"minCapWatts": N, "maxCapWatts": M}}."""
    gpu_product_label_keys: tuple[str, ...] = (
        "joulie.io/gpu.product", "nvidia.com/gpu.product", "amd.com/gpu.product", "amd.com/gpu.family",
    )
    """GPU_PRODUCT_LABEL_KEYS, comma-separated."""


@dataclass(frozen=True)
class LeaderSettings:
    """Lease leader election (in POD_NAMESPACE)."""

    elect: bool = False
    """LEADER_ELECT."""
    lease_name: str = "joulie-controller-manager"
    """LEADER_ELECTION_LEASE_NAME."""
    lease_duration_s: float = 15.0
    """LEADER_ELECTION_LEASE_DURATION, default 15s."""


@dataclass(frozen=True)
class PrometheusSettings:
    """Where measured node power comes from: Prometheus and the OpenTelemetry hw.* metrics."""

    power_source: str = "prometheus"
    """NODE_POWER_SOURCE: prometheus (default; reads the OpenTelemetry hw.* metrics) or static (no data)."""
    url: str = ""
    """NODE_POWER_PROMETHEUS_ADDRESS, e.g. http://prometheus:9090. Empty: every node has no data."""
    timeout_s: float = 5.0
    """NODE_POWER_PROMETHEUS_TIMEOUT, default 5s."""
    ca_file: str = ""
    """NODE_POWER_PROMETHEUS_CA_FILE: the CA an https Prometheus's serving certificate is checked
    against (empty: the system's CAs)."""
    client_cert_file: str = ""
    """NODE_POWER_PROMETHEUS_CLIENT_CERT_FILE: the client certificate presented to a Prometheus whose
    web config requires one (the authenticated telemetry path, docs/security.md); with _KEY_FILE."""
    client_key_file: str = ""
    """NODE_POWER_PROMETHEUS_CLIENT_KEY_FILE: the key of NODE_POWER_PROMETHEUS_CLIENT_CERT_FILE."""
    rate_window: str = "2m"
    """NODE_POWER_RATE_WINDOW: range of rate() over the energy counter, as PromQL writes it."""
    metric_naming: str = "underscore-suffixes"
    """OTEL_METRIC_NAMING: how Prometheus translated OTel names (translation_strategy):
    underscore-suffixes = UnderscoreEscapingWithSuffixes (hw_host_energy_joules_total),
    underscore = UnderscoreEscapingWithoutSuffixes, utf8-suffixes = NoUTF8EscapingWithSuffixes,
    utf8 = NoTranslation."""
    node_attribute: str = "k8s.node.name"
    """OTEL_NODE_ATTRIBUTE: resource attribute naming the node."""
    node_attribute_promoted: bool = True
    """OTEL_NODE_ATTRIBUTE_PROMOTED: false joins target_info to find k8s.node.name."""
    power_scope: str = "auto"
    """NODE_POWER_SCOPE: host (hw.host.energy / hw.host.power only), components (sum of hw.energy /
    hw.power over the node's components) or auto (default: host, else components, per node)."""
    power_query: str = ""
    """NODE_POWER_PROMETHEUS_QUERY: a custom PromQL returning watts with one series per node, labelled
    by the node attribute; overrides the generated queries."""


@dataclass(frozen=True)
class FacilitySettings:
    """The facility poller: ambient, IT and cooling power, zones, racks and inlets."""

    enabled: bool = False
    """ENABLE_FACILITY_METRICS."""
    prometheus_url: str = ""
    """FACILITY_PROMETHEUS_ADDRESS: empty means NODE_POWER_PROMETHEUS_ADDRESS."""
    poll_interval_s: float = 30.0
    """FACILITY_POLL_INTERVAL, default 30s."""
    ambient_metric: str = FACILITY_AMBIENT.name
    """FACILITY_AMBIENT_TEMP_METRIC: OTel gauge, Cel (outdoor/supply air)."""
    it_power_metric: str = FACILITY_IT_POWER.name
    """FACILITY_IT_POWER_METRIC: OTel gauge, W."""
    cooling_power_metric: str = FACILITY_COOLING_POWER.name
    """FACILITY_COOLING_POWER_METRIC: OTel gauge, W."""
    zone_ambient_metric: str = ZONE_AMBIENT.name
    """FACILITY_ZONE_AMBIENT_METRIC: OTel gauge, Cel, attribute joulie.cooling_zone."""
    rack_power_metric: str = RACK_POWER.name
    """FACILITY_RACK_POWER_METRIC: OTel gauge, W, attribute joulie.rack."""
    inlet_metric: str = HOST_AMBIENT_TEMPERATURE.name
    """FACILITY_NODE_INLET_TEMP_METRIC: OTel gauge, Cel, per node (the node attribute)."""


@dataclass(frozen=True)
class Settings:
    """All knobs, by group. Units are in the names (`_s` seconds, `_w` watts, `_pct` percent of max)."""

    reconcile: ReconcileSettings = field(default_factory=ReconcileSettings)
    nodes: NodeSettings = field(default_factory=NodeSettings)
    policy: PolicySettings = field(default_factory=PolicySettings)
    caps: CapSettings = field(default_factory=CapSettings)
    prometheus: PrometheusSettings = field(default_factory=PrometheusSettings)
    facility: FacilitySettings = field(default_factory=FacilitySettings)
    suspend: SuspendSettings = field(default_factory=SuspendSettings)
    leader: LeaderSettings = field(default_factory=LeaderSettings)
    pod_namespace: str = "joulie-system"
    """POD_NAMESPACE: the controller's namespace (its Lease, the BMC Secrets)."""
    agent_lost_after_s: float = 120.0
    """AGENT_LOST_AFTER, default 2m (four agent heartbeats): a node whose agent's heartbeat (the
    renewTime of its Lease, or controlStatus.heartbeatAt when that is later) is older than this is
    marked agent-lost (status.agent)."""
    agent_liveness_window_s: float = 900.0
    """AGENT_LIVENESS_WINDOW, default 15m: how far back the agents' reported reconcile times
    (``joulie.agent.reconcile.time``, pushed with their power) are read each tick, and the most a
    heartbeat Lease's own duration counts (``kube/heartbeats.py``): a reported time is believed only
    while its node's Lease is that fresh, so a forged series hides a dead agent for at most this long."""
    agent_lease_namespace: str = ""
    """AGENT_LEASE_NAMESPACE, default empty: POD_NAMESPACE. Where the agents' heartbeat Leases
    (labelled joulie.io/agent-heartbeat=true) are watched; the agents' setting of the same name."""

    @property
    def heartbeat_namespace(self) -> str:
        return self.agent_lease_namespace or self.pod_namespace
    api_timeout_s: float = 10.0
    """KUBE_API_TIMEOUT, default 10s: how long one Kubernetes API request waits for the server
    (a frozen API server then costs a tick seconds, logged, not minutes; issue 36)."""
    metrics_addr: str = "127.0.0.1:8081"
    """METRICS_ADDR, default 127.0.0.1:8081 (the original bound :8081 on every interface)."""
    trusted_namespaces: tuple[str, ...] = ()
    """TRUSTED_NAMESPACES, a comma list, default empty: the namespaces whose Pods' own word on their
    class (annotation joulie.io/workload-class, a constraint on the power-profile label) and kind
    (joulie.io/workload-kind) work_aware_v1 believes; ``*`` trusts every namespace (the behaviour
    before issue 36). A Pod elsewhere is general work of no kind: capped by the budget like the
    rest, and it releases no capped node."""
    scheduler_names: tuple[str, ...] = ("default-scheduler",)
    """SCHEDULER_NAMES, a comma list, default default-scheduler: the schedulers whose Pending Pods
    (spec.schedulerName) may wake a suspended node or release a capped one."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        base = cls()
        values: dict[str, Any] = {}
        for f in fields(cls):
            default = getattr(base, f.name)
            values[f.name] = _read_group(env, f.name, default) if is_dataclass(default) else _read(env, f.name, default)
        s = cls(**values)
        _validate(s, env)
        return s

    def at(self, path: str) -> Any:
        """The value of the field at ``path``: ``group.field`` (or a top-level field's name), as
        ``joulie_api.controller_env.CONTROLLER_ENV`` names it."""
        group, _, leaf = path.rpartition(".")
        return getattr(getattr(self, group) if group else self, leaf)


def _read_group(env: Mapping[str, str], group: str, default: Any) -> Any:
    """The group's settings from their variables (``group.field`` in ``CONTROLLER_ENV``)."""
    return type(default)(**{f.name: _read(env, f"{group}.{f.name}", getattr(default, f.name)) for f in fields(default)})


def _percent(name: str, raw: str) -> float:
    """A percentage, `60` or `60%`; the range each one allows is checked with the others (``_validate``)."""
    return parse_percent(name, raw, lo=-math.inf, hi=math.inf)


def _read(env: Mapping[str, str], path: str, default: Any) -> Any:
    """The value of the setting at ``path`` (its variable from ``CONTROLLER_ENV``), parsed by its kind."""
    name = CONTROLLER_ENV[path]
    leaf = path.rpartition(".")[2]
    if leaf == "min_powered_by_pool":
        return read_env(env, name, _pool_floors, default)
    if isinstance(default, (str, tuple)):  # text: empty is a value, not "unset"
        raw = env.get(name)
        if raw is None:
            return default
        return tuple(k.strip() for k in raw.split(",") if k.strip()) if isinstance(default, tuple) else raw.strip()
    if leaf == "gpu_model_caps":
        return read_env(env, name, _gpu_caps, default)
    if isinstance(default, bool):
        return read_env(env, name, parse_bool, default)
    if leaf.endswith("_s"):
        return read_env(env, name, parse_duration_s, default)
    if leaf.endswith("_pct"):
        return read_env(env, name, _percent, default)
    if isinstance(default, int):
        return read_env(env, name, parse_int, default)
    return read_env(env, name, parse_float, default)


def _gpu_caps(name: str, raw: str) -> dict[str, GpuModelCaps]:
    try:
        data = json.loads(raw)
    except ValueError as err:
        raise SettingError(name, raw, f"valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise SettingError(name, raw, "a JSON object of product -> {minCapWatts, maxCapWatts}")
    out: dict[str, GpuModelCaps] = {}
    for product, caps in data.items():
        if not isinstance(caps, dict) or not isinstance(caps.get("maxCapWatts"), (int, float)):
            raise SettingError(name, raw, f'{{"minCapWatts": N, "maxCapWatts": M}} for {product!r}')
        lo = caps.get("minCapWatts", 0)
        if not isinstance(lo, (int, float)):
            raise SettingError(name, raw, f"a number for {product!r}.minCapWatts (got {lo!r})")
        out[str(product)] = GpuModelCaps(float(lo), float(caps["maxCapWatts"]))
    return out


def _pool_floors(name: str, raw: str) -> tuple[tuple[str, int], ...]:
    """``gpu=0,cpu=2``: each pool's floor, in nodes; a pool named twice or a floor not a whole number
    of 0 or more is an error naming the entry."""
    out: dict[str, int] = {}
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        pool, sep, count = (part.strip() for part in entry.partition("="))
        if not sep or not pool or not count.isdigit():
            raise SettingError(name, raw, f"pool=nodes entries, comma-separated (e.g. gpu=0,cpu=2); got {entry!r}")
        if pool in out:
            raise SettingError(name, raw, f"each pool once; {pool!r} is named twice")
        out[pool] = int(count)
    return tuple(sorted(out.items()))


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise SettingError(name, value, f"one of {', '.join(allowed)}")


def _within(env: Mapping[str, str], path: str, value: float, ok: bool, expected: str) -> None:
    if not ok:
        name = CONTROLLER_ENV[path]
        raise SettingError(name, env.get(name, f"{value:g}"), expected)


def _validate(s: Settings, env: Mapping[str, str]) -> None:
    """The checks a value alone cannot make: names from a list, ranges, and one setting against another."""
    _one_of("POLICY_TYPE", s.policy.type, POLICIES)
    _one_of("OTEL_METRIC_NAMING", s.prometheus.metric_naming, METRIC_NAMINGS)
    _one_of("NODE_POWER_SOURCE", s.prometheus.power_source, POWER_SOURCES)
    _one_of("NODE_POWER_SCOPE", s.prometheus.power_scope, POWER_SCOPES)
    p = s.prometheus
    if bool(p.client_cert_file) != bool(p.client_key_file):
        name, raw = (("NODE_POWER_PROMETHEUS_CLIENT_KEY_FILE", p.client_key_file) if p.client_cert_file
                     else ("NODE_POWER_PROMETHEUS_CLIENT_CERT_FILE", p.client_cert_file))
        raise SettingError(name, raw, "a file path, set together with the other of NODE_POWER_PROMETHEUS_CLIENT_"
                                      "CERT_FILE / _KEY_FILE")
    _one_of("POWER_POLICY", s.suspend.power_policy, POWER_POLICIES)
    r, sus = s.reconcile, s.suspend
    _within(env, "reconcile.write_concurrency", r.write_concurrency, 1 <= r.write_concurrency <= 64,
            "1 to 64 Nodes at once")
    _within(env, "reconcile.cache_resync_s", r.cache_resync_s, r.cache_resync_s >= 60,
            "a duration of at least 1m (each resync LISTs every Node and Pod again)")
    _within(env, "reconcile.receipt_window_s", r.receipt_window_s, r.receipt_window_s >= 10,
            "a duration of at least 10s (each window is four Prometheus queries and a Pod write per running Pod)")
    _within(env, "reconcile.status_deadband_pct", r.status_deadband_pct, 0 <= r.status_deadband_pct <= 10,
            "0 to 10 percent")
    _within(env, "suspend.min_powered", sus.min_powered, sus.min_powered >= 0, "0 or more nodes")
    _within(env, "suspend.max_concurrent", sus.max_concurrent, sus.max_concurrent >= 1, "at least 1 node")
    _within(env, "suspend.resume_retries", sus.resume_retries, sus.resume_retries >= 0, "0 or more retries")
    _within(env, "suspend.warm_quantile_pct", sus.warm_quantile_pct, 0 < sus.warm_quantile_pct < 100,
            "more than 0 and under 100 percent")
    _within(env, "suspend.forecast_day_s", sus.forecast_day_s, sus.forecast_day_s > 0, "a duration over 0")
    _within(env, "suspend.forecast_half_life_s", sus.forecast_half_life_s, sus.forecast_half_life_s > 0,
            "a duration over 0")
    _within(env, "suspend.forecast_min_days", sus.forecast_min_days, sus.forecast_min_days >= 1, "1 or more days")
    for path in ("suspend.suspend_rate_per_min", "suspend.resume_rate_per_min"):
        _within(env, path, s.at(path), s.at(path) >= 0, "0 (no limit) or more nodes per minute")
    _within(env, "suspend.ramp_limit_w_per_sec", sus.ramp_limit_w_per_sec,
            math.isfinite(sus.ramp_limit_w_per_sec) and sus.ramp_limit_w_per_sec >= 0,
            "0 (no limit) or more watts per second")
    _within(env, "suspend.max_cycles_per_day", sus.max_cycles_per_day, sus.max_cycles_per_day >= 0,
            "0 (no cap) or more power-offs")
    for path, v in (("caps.cpu_performance_pct", s.caps.cpu_performance_pct), ("caps.cpu_eco_pct", s.caps.cpu_eco_pct),
                    ("caps.gpu_performance_pct", s.caps.gpu_performance_pct), ("caps.gpu_eco_pct", s.caps.gpu_eco_pct),
                    ("policy.budget_min_cap_pct", s.policy.budget_min_cap_pct)):
        _within(env, path, v, not 0 < v < MIN_CAP_PCT,
                f"0 for no cap, or at least {MIN_CAP_PCT:g}: below the {MIN_CAP_PCT:g} % of max the NodeTwin CRD "
                f"accepts (what hardware enforces)")
    for path, w in (("caps.performance_cap_w", s.caps.performance_cap_w), ("caps.eco_cap_w", s.caps.eco_cap_w)):
        _within(env, path, w, MIN_PACKAGE_CAP_W <= w <= MAX_PACKAGE_CAP_W,
                f"{MIN_PACKAGE_CAP_W:g} to {MAX_PACKAGE_CAP_W:g} watts: the NodeTwin CRD's packagePowerCapWatts bounds (the API "
                f"server refuses a spec outside them)")
    _within(env, "policy.max_slowdown_ceiling_pct", s.policy.max_slowdown_ceiling_pct,
            0 <= s.policy.max_slowdown_ceiling_pct <= 50, "0 to 50 percent")
    _within(env, "policy.power_budget_w", s.policy.power_budget_w,
            s.policy.type != "cluster_power_budget" or s.policy.power_budget_w > 0,
            "more than 0 watts with POLICY_TYPE=cluster_power_budget")


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
