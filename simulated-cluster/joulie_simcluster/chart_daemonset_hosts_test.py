"""The agent DaemonSet on hosts that carry several nodes (the kubelet runtime's agent nodes, a test
rig): each agent binds its metrics on its node's address and reads its node's directory of a shared
host path; both off by default, where the DaemonSet renders as before."""

from __future__ import annotations

import pytest

from joulie_simcluster import chart
from joulie_simcluster.chart_cases import JOULIE, container, env_of, helm, one

pytest_plugins = ["joulie_testinfra.fixtures"]

__all__ = ["helm"]

SHARED = {"agent.daemonset.hostNetwork": "true", "agent.daemonset.metricsOnHostIP": "true",
          "agent.daemonset.hostSys": "/var/lib/joulie-hwemu",
          "agent.daemonset.hostSysSubPathExpr": "$(NODE_NAME)/sys"}


def test_several_nodes_on_one_host_each_bind_their_address_and_read_their_own_tree() -> None:
    ds = one(chart.render_chart(JOULIE, [], SHARED), "DaemonSet", "joulie-agent")
    env = env_of(ds)
    assert env["HOST_IP"] == ("fieldRef", "status.hostIP")
    assert env["METRICS_ADDR"] == "$(HOST_IP):8080"
    names = [e["name"] for e in container(ds)["env"]]
    assert names.index("HOST_IP") < names.index("METRICS_ADDR")  # a $(VAR) expands only from earlier entries
    assert names.index("NODE_NAME") < names.index("METRICS_ADDR")
    mounts = {m["mountPath"]: m for m in container(ds)["volumeMounts"]}
    assert mounts["/host-sys"]["subPathExpr"] == "$(NODE_NAME)/sys" and mounts["/host-sys"]["readOnly"] is True
    rw = mounts["/host-sys/devices/virtual/powercap"]
    assert rw["name"] == "host-sys" and rw["subPathExpr"] == "$(NODE_NAME)/sys/devices/virtual/powercap"
    assert "readOnly" not in rw
    volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    assert volumes["host-sys"]["hostPath"] == {"path": "/var/lib/joulie-hwemu", "type": "Directory"}
    assert not [n for n in volumes if n.startswith("host-sys-rw-")]  # one volume, per-node subpaths


def test_by_default_the_daemonset_binds_agent_env_and_mounts_the_host_sys_itself() -> None:
    ds = one(chart.render_chart(JOULIE), "DaemonSet", "joulie-agent")
    env = env_of(ds)
    assert "HOST_IP" not in env and env["METRICS_ADDR"] == "0.0.0.0:8080"
    assert not [m for m in container(ds)["volumeMounts"] if "subPathExpr" in m]
    volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    assert volumes["host-sys-rw-0"]["hostPath"]["path"] == "/sys/devices/virtual/powercap"


def test_metrics_on_the_host_ip_off_the_host_network_is_refused_at_render() -> None:
    with pytest.raises(chart.ChartError, match=r"metricsOnHostIP=true needs agent\.daemonset\.hostNetwork=true"):
        chart.render_chart(JOULIE, [], {"agent.daemonset.metricsOnHostIP": "true"})
