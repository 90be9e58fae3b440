"""Runtime settings from the environment: defaults, units, errors naming the variable."""

import pytest

from joulie_agent.settings import Settings, SettingsError


def test_defaults_are_the_documented_ones() -> None:
    s = Settings.from_env({"NODE_NAME": "n1"})
    assert (s.mode, s.root, s.reconcile_interval_s, s.simulate_only) == ("daemonset", "/", 20.0, False)
    assert s.dvfs.cooldown_s == 20.0 and s.dvfs.min_freq_khz == 1_500_000
    assert s.dcgm_every == 2 and Settings.from_env({"NODE_NAME": "n1", "DCGM_EVERY": "1"}).dcgm_every == 1


def test_emulated_mode_takes_its_tree_and_tools_from_the_node_root() -> None:
    s = Settings.from_env({"AGENT_MODE": "emulated", "NODE_NAME": "gpu-7", "ROOT": "/var/lib/joulie-hwemu/{node}",
                           "RECONCILE_INTERVAL": "500ms", "SIMULATE_ONLY": "true", "GPU_TOOL_PATH": "/usr/bin"})
    assert str(s.node_sys_root("gpu-7")) == "/var/lib/joulie-hwemu/gpu-7/sys"
    assert s.node_tool_path("gpu-7").startswith("/var/lib/joulie-hwemu/gpu-7/bin:")
    assert s.reconcile_interval_s == 0.5 and s.simulate_only


def test_a_pool_agent_finds_each_nodes_tools_through_node_in_the_tool_path() -> None:
    s = Settings.from_env({"AGENT_MODE": "pool", "ROOT": "/hwemu/{node}", "GPU_TOOL_PATH": "/agents/{node}/tools",
                           "POOL_SHARDS": "4", "POOL_SHARD_ID": "1"})
    assert s.node_tool_path("gpu-7") == "/agents/gpu-7/tools"
    assert str(s.node_sys_root("gpu-7")) == "/hwemu/gpu-7/sys"


@pytest.mark.parametrize(("env", "name"), [
    ({"AGENT_MODE": "turbo"}, "AGENT_MODE"),
    ({}, "NODE_NAME"),
    ({"NODE_NAME": "n", "RECONCILE_INTERVAL": "soon"}, "RECONCILE_INTERVAL"),
    ({"NODE_NAME": "n", "SIMULATE_ONLY": "maybe"}, "SIMULATE_ONLY"),
    ({"NODE_NAME": "n", "DVFS_STEP_PCT": "x"}, "DVFS_STEP_PCT"),
    ({"AGENT_MODE": "pool", "POOL_SHARD_ID": "-1"}, "POOL_SHARD_ID"),
    ({"NODE_NAME": "n", "POWER_EXPORT_ENDPOINT": "prometheus:9090"}, "POWER_EXPORT_ENDPOINT"),
    ({"NODE_NAME": "n", "POWER_EXPORT_INTERVAL": "100ms"}, "POWER_EXPORT_INTERVAL"),
    ({"NODE_NAME": "n", "BMC_SECRET_DIR": "/etc/joulie/bmc"}, "BMC_SECRET_DIR.*POWER_EXPORT_ENDPOINT"),
    ({"NODE_NAME": "n", "POWER_EXPORT_ENDPOINT": "http://p:9090", "BMC_TIMEOUT": "100ms"}, "BMC_TIMEOUT"),
    ({"NODE_NAME": "n", "DCGM_EVERY": "0"}, "DCGM_EVERY"),
    ({"NODE_NAME": "n", "DCGM_EVERY": "1.5"}, "DCGM_EVERY"),
])
def test_bad_values_name_the_variable(env: dict[str, str], name: str) -> None:
    with pytest.raises(SettingsError, match=name):
        Settings.from_env(env)


def test_pool_shard_comes_from_the_pod_name() -> None:
    # Which nodes a shard owns: joulie_common/sharding_test.py.
    s = Settings.from_env({"AGENT_MODE": "pool", "POOL_SHARDS": "3", "POD_NAME": "joulie-agent-2"})
    assert (s.pool_shards, s.pool_shard_id) == (3, 2)


def test_power_export_is_off_by_default_and_takes_endpoint_and_interval() -> None:
    assert Settings.from_env({"NODE_NAME": "n"}).power_export_endpoint == ""
    s = Settings.from_env({"NODE_NAME": "n", "POWER_EXPORT_ENDPOINT": "http://prom:9090/api/v1/otlp/v1/metrics",
                           "POWER_EXPORT_INTERVAL": "15s"})
    assert (s.power_export_endpoint, s.power_export_interval_s) == ("http://prom:9090/api/v1/otlp/v1/metrics", 15.0)


def test_host_power_from_a_bmc_is_off_by_default_and_takes_the_mounted_secret_and_timeout() -> None:
    s = Settings.from_env({"NODE_NAME": "n"})
    assert (s.bmc_secret_dir, s.bmc_timeout_s) == ("", 5.0)
    s = Settings.from_env({"NODE_NAME": "n", "POWER_EXPORT_ENDPOINT": "http://prom:9090/api/v1/otlp/v1/metrics",
                           "BMC_SECRET_DIR": "/etc/joulie/bmc", "BMC_TIMEOUT": "2s"})
    assert (s.bmc_secret_dir, s.bmc_timeout_s) == ("/etc/joulie/bmc", 2.0)


def test_kubernetes_api_requests_have_a_deadline_by_default_and_take_kube_api_timeout() -> None:
    assert Settings.from_env({"NODE_NAME": "n1"}).api_timeout_s == 10.0
    assert Settings.from_env({"NODE_NAME": "n1", "KUBE_API_TIMEOUT": "2s"}).api_timeout_s == 2.0
    with pytest.raises(SettingsError, match="KUBE_API_TIMEOUT"):
        Settings.from_env({"NODE_NAME": "n1", "KUBE_API_TIMEOUT": "0s"})


def test_heartbeat_leases_default_to_the_pods_namespace_and_none_turns_them_off() -> None:
    node = {"NODE_NAME": "n1"}
    assert Settings.from_env({**node, "POD_NAMESPACE": "joulie-system"}).lease_namespace == "joulie-system"
    off = {**node, "POD_NAMESPACE": "joulie-system", "AGENT_LEASE_NAMESPACE": "none"}
    assert Settings.from_env(off).lease_namespace == ""
    assert Settings.from_env(node).lease_namespace == ""
