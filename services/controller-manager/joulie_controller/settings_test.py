"""Settings from environment variables: defaults, units, and errors that name the variable."""

from __future__ import annotations

from dataclasses import fields, is_dataclass

import pytest

from joulie_api.controller_env import CONTROLLER_ENV
from joulie_controller.settings import GpuModelCaps, Settings, SettingsError, parse_duration_s, selector_matches


def test_defaults_match_the_reference() -> None:
    s = Settings.from_env({})
    assert (s.reconcile.interval_s, s.policy.type, s.policy.static_hp_frac, s.policy.queue_hp_base_frac) == (
        60, "static_partition", 0.5, 0.6)
    assert (s.caps.cpu_eco_pct, s.caps.gpu_eco_pct, s.caps.eco_cap_w, s.caps.performance_cap_w) == (60, 60, 120, 5000)
    assert not s.facility.enabled and not s.leader.elect
    assert s.reconcile.status_refresh_s < 300  # inside the extender's staleness threshold


def test_values_are_parsed_with_units() -> None:
    s = Settings.from_env({"RECONCILE_INTERVAL": "5s", "STATUS_REFRESH_INTERVAL": "1m30s", "LEADER_ELECT": "true",
                           "POLICY_TYPE": "queue_aware_v1", "QUEUE_HP_MIN": "2",
                           "GPU_MODEL_CAPS_JSON": '{"a100": {"minCapWatts": 150, "maxCapWatts": 400}}',
                           "GPU_PRODUCT_LABEL_KEYS": "a, b"})
    assert (s.reconcile.interval_s, s.reconcile.status_refresh_s) == (5, 90)
    assert (s.leader.elect, s.policy.queue_hp_min) == (True, 2)
    assert s.caps.gpu_model_caps == {"a100": GpuModelCaps(150, 400)}
    assert s.caps.gpu_product_label_keys == ("a", "b")


@pytest.mark.parametrize(("env", "message"), [
    ({"RECONCILE_INTERVAL": "soon"}, "RECONCILE_INTERVAL='soon': expected a duration"),
    ({"STATIC_HP_FRAC": "half"}, "STATIC_HP_FRAC='half': expected a number"),
    ({"LEADER_ELECT": "maybe"}, "LEADER_ELECT='maybe': expected true or false"),
    ({"POLICY_TYPE": "turbo"}, "POLICY_TYPE='turbo': expected one of"),
    ({"GPU_MODEL_CAPS_JSON": "{"}, "GPU_MODEL_CAPS_JSON='{': expected valid JSON"),
    ({"POLICY_TYPE": "cluster_power_budget"},
     "CLUSTER_POWER_BUDGET_W='0': expected more than 0 watts with POLICY_TYPE=cluster_power_budget"),
    ({"OTEL_METRIC_NAMING": "dots"}, "OTEL_METRIC_NAMING='dots'"),
    ({"NODE_POWER_SCOPE": "rack"}, "NODE_POWER_SCOPE='rack'"),
    ({"WRITE_CONCURRENCY": "0"}, "WRITE_CONCURRENCY='0': expected 1 to 64 Nodes at once"),
    ({"WRITE_CONCURRENCY": "many"}, "WRITE_CONCURRENCY='many': expected an integer"),
    ({"STATUS_DEADBAND_PCT": "25"}, "STATUS_DEADBAND_PCT='25': expected 0 to 10 percent"),
])
def test_bad_values_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace("{", r"\{")):
        Settings.from_env(env)


@pytest.mark.parametrize(("raw", "seconds"), [("1m", 60), ("30s", 30), ("1h30m", 5400), ("1.5", 1.5)])
def test_durations(raw: str, seconds: float) -> None:
    assert parse_duration_s("X", raw) == seconds


def test_node_selector() -> None:
    assert selector_matches("joulie.io/managed=true", {"joulie.io/managed": "true"})
    assert not selector_matches("joulie.io/managed=true", {"joulie.io/managed": "false"})
    assert selector_matches("node-role.kubernetes.io/worker", {"node-role.kubernetes.io/worker": ""})
    assert selector_matches("", {})


def test_a_cap_percentage_below_what_the_crd_accepts_is_refused_naming_the_variable() -> None:
    with pytest.raises(SettingsError,
                       match=r"CPU_ECO_CAP_PCT_OF_MAX='5': expected 0 for no cap, or at least 10: below the 10 % of max"):
        Settings.from_env({"CPU_ECO_CAP_PCT_OF_MAX": "5"})
    assert Settings.from_env({"GPU_ECO_CAP_PCT_OF_MAX": "0"}).caps.gpu_eco_pct == 0.0  # 0 still disables the GPU intent


def test_the_power_policy_is_off_by_default_and_its_settings_read_with_units() -> None:
    s = Settings.from_env({})
    assert s.suspend.power_policy == "none"
    assert (s.suspend.after_s, s.suspend.timeout_s, s.suspend.resume_timeout_s) == (600, 300, 900)
    assert (s.suspend.min_powered, s.suspend.max_concurrent, s.suspend.pool_label) == (1, 2, "joulie.io/pool")
    on = Settings.from_env({"POWER_POLICY": "idle_suspend_v1", "SUSPEND_AFTER": "2m", "RESUME_TIMEOUT": "5m",
                            "SUSPEND_MIN_POWERED": "0", "SUSPEND_POOL_LABEL": "sim.joulie.io/pool"})
    assert (on.suspend.power_policy, on.suspend.after_s, on.suspend.resume_timeout_s, on.suspend.min_powered) == (
        "idle_suspend_v1", 120, 300, 0)
    assert on.suspend.pool_label == "sim.joulie.io/pool"


@pytest.mark.parametrize(("env", "message"), [
    ({"POWER_POLICY": "sleep"}, "POWER_POLICY='sleep': expected one of none, idle_suspend_v1"),
    ({"SUSPEND_MAX_CONCURRENT": "0"}, "SUSPEND_MAX_CONCURRENT='0': expected at least 1"),
    ({"SUSPEND_MIN_POWERED": "-1"}, "SUSPEND_MIN_POWERED='-1': expected 0 or more"),
    ({"SUSPEND_AFTER": "0"}, "SUSPEND_AFTER='0': expected a positive duration"),
])
def test_bad_power_settings_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings.from_env(env)


def test_the_shared_grammar_reads_milliseconds_percent_signs_and_empty_as_unset() -> None:
    s = Settings.from_env({"NODE_POWER_PROMETHEUS_TIMEOUT": "500ms", "CPU_ECO_CAP_PCT_OF_MAX": "55%",
                           "SUSPEND_AFTER": "1h30m", "STATIC_HP_FRAC": "", "NODE_SELECTOR": ""})
    assert (s.prometheus.timeout_s, s.caps.cpu_eco_pct, s.suspend.after_s) == (0.5, 55.0, 5400.0)
    assert s.policy.static_hp_frac == 0.5  # empty: the default
    assert s.nodes.selector == ""  # text: empty is a value (every node)


def test_every_setting_has_its_variable_and_every_variable_a_setting() -> None:
    s = Settings()
    paths = set()
    for f in fields(s):
        group = getattr(s, f.name)
        paths |= {f"{f.name}.{g.name}" for g in fields(group)} if is_dataclass(group) else {f.name}
    assert paths == set(CONTROLLER_ENV)


def test_kubernetes_api_requests_have_a_deadline_by_default_and_take_kube_api_timeout() -> None:
    assert Settings.from_env({}).api_timeout_s == 10.0
    assert Settings.from_env({"KUBE_API_TIMEOUT": "3s"}).api_timeout_s == 3.0
    with pytest.raises(SettingsError, match="KUBE_API_TIMEOUT"):
        Settings.from_env({"KUBE_API_TIMEOUT": "0s"})


def test_resume_retries_and_their_backoff_are_read_and_checked() -> None:
    s = Settings.from_env({})
    assert (s.suspend.resume_retries, s.suspend.resume_retry_backoff_s) == (3, 30.0)
    on = Settings.from_env({"RESUME_RETRIES": "0", "RESUME_RETRY_BACKOFF": "1m30s"})
    assert (on.suspend.resume_retries, on.suspend.resume_retry_backoff_s) == (0, 90.0)
    with pytest.raises(SettingsError, match="RESUME_RETRIES='-1': expected 0 or more"):
        Settings.from_env({"RESUME_RETRIES": "-1"})
    with pytest.raises(SettingsError, match="RESUME_RETRY_BACKOFF"):
        Settings.from_env({"RESUME_RETRY_BACKOFF": "0"})


@pytest.mark.parametrize(("name", "value"), [("PERFORMANCE_CAP_WATTS", "6000"), ("ECO_CAP_WATTS", "5"), ("ECO_CAP_WATTS", "1e30")])
def test_a_package_cap_the_crd_would_refuse_is_refused_at_start_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=f"^{name}='{value}': expected 10 to 5000 watts"):
        Settings.from_env({name: value})


def test_no_namespace_is_trusted_by_default_and_the_lists_read_as_comma_lists() -> None:
    d = Settings.from_env({})
    assert d.trusted_namespaces == () and d.scheduler_names == ("default-scheduler",)
    s = Settings.from_env({"TRUSTED_NAMESPACES": " ml-team, batch ,", "SCHEDULER_NAMES": "default-scheduler,gpu"})
    assert s.trusted_namespaces == ("ml-team", "batch") and s.scheduler_names == ("default-scheduler", "gpu")
    assert Settings.from_env({"TRUSTED_NAMESPACES": "*"}).trusted_namespaces == ("*",)


def test_owners_slowdown_budgets_are_off_by_default_and_bounded_by_a_ceiling() -> None:
    d = Settings()
    assert d.policy.slowdown_annotation_namespaces == () and d.policy.max_slowdown_ceiling_pct == 10.0
    s = Settings.from_env({"SLOWDOWN_ANNOTATION_NAMESPACES": "ml, serving", "MAX_SLOWDOWN_CEILING_PCT": "15%"})
    assert s.policy.slowdown_annotation_namespaces == ("ml", "serving") and s.policy.max_slowdown_ceiling_pct == 15.0
    with pytest.raises(SettingsError, match=r"^MAX_SLOWDOWN_CEILING_PCT='80': expected 0 to 50 percent"):
        Settings.from_env({"MAX_SLOWDOWN_CEILING_PCT": "80"})
    with pytest.raises(SettingsError, match=r"^MAX_SLOWDOWN_CEILING_PCT='lots': expected a percentage"):
        Settings.from_env({"MAX_SLOWDOWN_CEILING_PCT": "lots"})
