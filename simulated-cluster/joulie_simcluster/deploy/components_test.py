import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from joulie_simcluster.deploy import components as comp
from joulie_simcluster.deploy.processes import pex_venv_entry, pex_venv_site
from joulie_simcluster.deploy.start import with_workload
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.nodes import render_nodes
from joulie_simcluster.settings import HwemuMode
from joulie_simcluster.smoke.load import shared_nodes
from joulie_simcluster.spec import load_spec
from joulie_simcluster.timing import timing
from joulie_workload.gen import GenOptions, generate
from joulie_workload.trace import load_trace, write_trace

SMOKE_SPEC = Path("simulated-cluster/specs/smoke.yaml")


def plan(tmp: Path, mode: HwemuMode = "fuse") -> comp.Plan:
    bins = {c: tmp / "bin" / f"joulie-{c}-0123456789ab.pex" for c in ("agent", "controller-manager", "extender", "simulator", "fakesmi")}
    agents = [comp.AgentNode("h100-0", "mounted", ("/lib64/ld-linux-x86-64.so.2", "/usr/lib/libnvidia-ml.so.1"), ("nvidia-smi",)),
              comp.AgentNode("intel-0", "none")]
    return comp.Plan(
        state=tmp, binaries=bins, kubeconfig=tmp / "kubeconfig", prometheus_url="http://127.0.0.1:9090",
        spec_file=tmp / "spec.yaml", mode=mode, timing=timing("ci"),
        ports=comp.Ports(18080, 18081, 9876, 8081, {"h100-0": 20001, "intel-0": 20002}), agents=agents,
        values={"agent": {"env": {"RECONCILE_INTERVAL": "20s", "SIMULATE_ONLY": "false"}},
                "controllerManager": {"env": {"STATIC_HP_FRAC": "1", "NODE_POWER_PROMETHEUS_ADDRESS": "http://in-cluster:9090"}}},
        python_path_env={"PATH": "/usr/bin"},
    )


def test_agents_run_emulated_on_their_own_view_with_fakesmi_first(tmp_path: Path) -> None:
    p = plan(tmp_path)
    cmd = comp.agent_command(p, p.agents[0])
    assert cmd.argv == [str(p.binaries["agent"]), "run"]
    assert cmd.env["AGENT_MODE"] == "emulated" and cmd.env["NODE_NAME"] == "h100-0"
    assert cmd.env["ROOT"] == str(tmp_path / "hwemu" / "fuse" / "h100-0")
    assert cmd.env["GPU_TOOL_PATH"] == str(tmp_path / "agents" / "h100-0" / "tools")
    # The timing wins over the values' production interval; other values pass through.
    assert cmd.env["RECONCILE_INTERVAL"] == "3s" and cmd.env["SIMULATE_ONLY"] == "false"
    assert cmd.metrics_url == "http://127.0.0.1:20001/metrics"
    assert comp.agent_command(plan(tmp_path, "files"), p.agents[0]).env["ROOT"] == str(tmp_path / "hwemu" / "h100-0")


def test_tool_delivery_decides_what_the_gpu_tools_find(tmp_path: Path) -> None:
    p = plan(tmp_path)
    wrappers = comp.fakesmi_wrappers(p, p.agents[0])
    nvsmi = wrappers[tmp_path / "agents" / "h100-0" / "tools" / "nvidia-smi"]
    assert f"export HWEMU_STATE_ROOT='{tmp_path}/hwemu/fuse/h100-0/state'" in nvsmi
    assert nvsmi.endswith(f"exec 'python3.11' '{p.binaries['fakesmi']}' nvidia-smi \"$@\"\n")
    assert comp.host_stubs(p, p.agents[0]) == [tmp_path / "agents/h100-0/host/lib64/ld-linux-x86-64.so.2",
                                                tmp_path / "agents/h100-0/host/usr/lib/libnvidia-ml.so.1"]
    assert comp.host_stubs(p, p.agents[1]) == []
    # Only the profile's tools: a CPU node has no GPU tool at all, as on a real one.
    assert list(wrappers) == [tmp_path / "agents" / "h100-0" / "tools" / "nvidia-smi"]
    assert comp.fakesmi_wrappers(p, p.agents[1]) == {}


def test_gpu_tools_start_fakesmis_venv_when_deploy_found_it(tmp_path: Path) -> None:
    p = replace(plan(tmp_path), fakesmi_entry="/pex/venvs/abc/def/pex")
    nvsmi = comp.fakesmi_wrappers(p, p.agents[0])[tmp_path / "agents" / "h100-0" / "tools" / "nvidia-smi"]
    assert nvsmi.endswith("exec '/pex/venvs/abc/def/pex' nvidia-smi \"$@\"\n")
    assert "HWEMU_STATE_ROOT" in nvsmi


def test_gpu_tools_import_fakesmi_from_its_venv_without_site(tmp_path: Path) -> None:
    """The wrapper a deploy writes when it learnt the venv's interpreter and site-packages, run for
    real against a site-packages holding a stand-in fakesmi: the tool is the first argument, the
    node's environment is exported, ``site`` and PYTHON* variables are not read."""
    site = tmp_path / "venv" / "site-packages"
    (site / "joulie_fakesmi").mkdir(parents=True)
    (site / "joulie_fakesmi" / "__init__.py").write_text("")
    (site / "joulie_fakesmi" / "cli.py").write_text(
        "import os, sys\n"
        "def main():\n"
        "    print(sys.argv[1:], os.environ['HWEMU_STATE_ROOT'].endswith('/state'), 'site' in sys.modules,"
        " sys.flags.isolated)\n"
        "    return 3\n")
    p = replace(plan(tmp_path), fakesmi_entry="/pex/venvs/abc/def/pex", fakesmi_site=(sys.executable, str(site)))
    tool = tmp_path / "agents" / "h100-0" / "tools" / "nvidia-smi"
    tool.parent.mkdir(parents=True)
    tool.write_text(comp.fakesmi_wrappers(p, p.agents[0])[tool])
    tool.chmod(0o755)
    out = subprocess.run([str(tool), "--query-gpu=name", "it's"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": "/nonexistent"}, check=False)
    assert out.returncode == 3, out.stderr
    assert out.stdout == "['nvidia-smi', '--query-gpu=name', \"it's\"] True False 1\n"


def test_a_program_that_is_no_venv_pex_has_no_venv_entry(tmp_path: Path) -> None:
    script = tmp_path / "not-a-pex.py"
    script.write_text("print('/nonexistent-prefix')\n")
    assert pex_venv_entry(sys.executable, script, dict(os.environ)) is None
    assert pex_venv_entry(sys.executable, tmp_path / "missing.pex", dict(os.environ)) is None
    assert pex_venv_site(sys.executable, script, dict(os.environ)) is None
    assert pex_venv_site(sys.executable, tmp_path / "missing.pex", dict(os.environ)) is None


def test_the_controller_manager_reads_this_clusters_prometheus(tmp_path: Path) -> None:
    cmd = comp.controller_command(plan(tmp_path))
    assert cmd.env["NODE_POWER_PROMETHEUS_ADDRESS"] == "http://127.0.0.1:9090"
    assert cmd.env["NODE_POWER_RATE_WINDOW"] == "12s" and cmd.env["STATIC_HP_FRAC"] == "1"
    assert cmd.argv[-2:] == ["--kubeconfig", str(tmp_path / "kubeconfig")]


def test_the_simulator_starts_first_and_pushes_otlp_at_the_timings_interval(tmp_path: Path) -> None:
    cmds = comp.commands(plan(tmp_path))
    assert [c.name for c in cmds] == ["simulator", "extender", "controller-manager", "agent-h100-0", "agent-intel-0"]
    sim = cmds[0].argv
    assert sim[sim.index("--otlp-endpoint") + 1] == "http://127.0.0.1:9090/api/v1/otlp/v1/metrics"
    assert sim[sim.index("--otlp-interval") + 1] == "2" and sim[sim.index("--mode") + 1] == "fuse"
    assert cmds[1].argv[1:3] == ["--addr", "127.0.0.1:9876"]
    # An emulated BMC per node, the login from a file (no password on the command line), ci boots fast.
    assert sim[sim.index("--bmc") + 1] == "127.0.0.1"
    assert sim[sim.index("--bmc-credentials") + 1] == str(tmp_path / "bmc" / "credentials.yaml")
    assert sim[sim.index("--power-time-scale") + 1] == "0.05"


def test_in_the_agent_telemetry_mode_every_agent_pushes_its_power(tmp_path: Path) -> None:
    base = plan(tmp_path)
    env = {"POWER_EXPORT_ENDPOINT": "http://127.0.0.1:9090/api/v1/otlp/v1/metrics", "POWER_EXPORT_INTERVAL": "2s"}
    p = comp.Plan(**{**base.__dict__, "agent_telemetry_env": env, "otlp_endpoint": ""})
    cmds = comp.commands(p)
    sim = cmds[0].argv
    assert sim[sim.index("--otlp-endpoint") + 1] == ""
    agents = [c for c in cmds if c.component == "agent"]
    assert agents and all(c.env[k] == v for c in agents for k, v in env.items())
    assert all("POWER_EXPORT_ENDPOINT" not in c.env for c in comp.commands(base) if c.component == "agent")


def test_with_telemetry_certificates_the_simulator_pushes_with_its_own_and_nothing_else_leaks(tmp_path: Path) -> None:
    base = plan(tmp_path)
    cert = {"OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE": "/tls/simulator.crt"}
    cmds = comp.commands(comp.Plan(**{**base.__dict__, "simulator_env": cert}))
    assert cmds[0].name == "simulator" and cmds[0].env["OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE"] == "/tls/simulator.crt"
    assert all("OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE" not in c.env for c in cmds[1:] if c.component != "agent")


def test_pool_agents_share_the_nodes_by_shard_with_per_node_roots_and_tools(tmp_path: Path) -> None:
    base = plan(tmp_path)
    p = comp.Plan(**{**base.__dict__, "agent_shards": 2, "pool_selector": "sim.joulie.io/cluster=s,joulie.io/managed=true",
                     "ports": comp.Ports(1, 2, 3, 4, {"shard-0": 5, "shard-1": 6})})
    agents = [c for c in comp.commands(p) if c.component == "agent"]
    assert [c.name for c in agents] == ["agent-pool-0", "agent-pool-1"]
    env = agents[1].env
    assert (env["AGENT_MODE"], env["POOL_SHARDS"], env["POOL_SHARD_ID"]) == ("pool", "2", "1")
    assert env["ROOT"] == f"{tmp_path}/hwemu/fuse/{{node}}" and env["GPU_TOOL_PATH"] == f"{tmp_path}/agents/{{node}}/tools"
    assert env["POOL_NODE_SELECTOR"] == "sim.joulie.io/cluster=s,joulie.io/managed=true"


def test_the_workload_runner_starts_last_on_the_smoke_trace_with_this_clusters_pods(tmp_path: Path) -> None:
    base = plan(tmp_path)
    assert "workload" not in [c.name for c in comp.commands(base)]  # no cluster named: no runner
    p = comp.Plan(**{**base.__dict__, "cluster": "smoke", "ports": replace(base.ports, workload_metrics=18090)})
    cmds = comp.commands(p)
    wl = cmds[-1]
    assert (wl.name, wl.component) == ("workload", "simulator")
    assert wl.argv == [str(p.binaries["simulator"]), "workload", "--trace", str(tmp_path / "workload" / "trace.jsonl"),
                       "--cluster", "smoke", "--kubeconfig", str(tmp_path / "kubeconfig"),
                       "--emulator", "127.0.0.1:18081", "--metrics", "127.0.0.1:18090", "--stay"]
    assert wl.metrics_url == "http://127.0.0.1:18090/metrics" and wl.log == tmp_path / "logs" / "workload.log"
    assert wl.env == {"PATH": "/usr/bin"}


def test_deploy_runs_a_users_trace_or_the_smokes_and_refuses_a_bad_trace_naming_the_line(tmp_path: Path) -> None:
    base = plan(tmp_path)
    nodes = render_nodes(load_spec(SMOKE_SPEC))
    smoke = with_workload(base, "smoke", nodes, None)
    assert smoke.cluster == "smoke" and smoke.ports.workload_metrics > 0
    # one pinned job per Node, two on each shared Node (smoke/load.py)
    assert len(load_trace(smoke.workload_trace)) == len(nodes) + len(shared_nodes(nodes))
    mine = tmp_path / "mine.jsonl"
    write_trace(mine, generate(GenOptions(jobs=7, seed=3)))
    assert [j.job_id for j in load_trace(with_workload(base, "smoke", nodes, mine).workload_trace)] == \
        [j.job_id for j in load_trace(mine)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"job","jobId":"x","submitTimeOffsetSec":-1,"work":{"cpuUnits":1}}\n')
    with pytest.raises(RuntimeFailure, match=rf"--trace: {bad}:1: submitTimeOffsetSec"):
        with_workload(base, "smoke", nodes, bad)
    assert len(load_trace(smoke.workload_trace)) == 7  # the last good trace is still there


def test_two_controller_replicas_elect_a_leader_on_one_lease_as_the_chart_sets_them(tmp_path: Path) -> None:
    p = plan(tmp_path)
    p = replace(p, controller_replicas=2, ports=replace(p.ports, controller_replica_metrics=(8082,)))
    cms = [c for c in comp.commands(p) if c.component == "controller-manager"]
    assert [c.name for c in cms] == ["controller-manager", "controller-manager-1"]
    assert [c.env["METRICS_ADDR"] for c in cms] == ["127.0.0.1:8081", "127.0.0.1:8082"]
    assert [c.env["POD_NAME"] for c in cms] == ["controller-manager", "controller-manager-1"]
    assert all(c.env["LEADER_ELECT"] == "true" and c.env["POD_NAMESPACE"] == comp.LEADER_NAMESPACE for c in cms)
    assert cms[1].env["LEADER_ELECTION_LEASE_DURATION"] == "6s" and cms[1].log == tmp_path / "logs/controller-manager-1.log"
    assert "LEADER_ELECT" not in comp.controller_command(plan(tmp_path)).env, "one replica: no election"


def test_replicas_without_leader_election_are_refused_as_the_chart_refuses_them() -> None:
    with pytest.raises(ValueError, match=r"leaderElection.enabled=true"):
        comp.controller_replicas({"controllerManager": {"replicas": 2}})
    assert comp.controller_replicas({"controllerManager": {"replicas": 2, "leaderElection": {"enabled": True}}}) == 2
    assert comp.controller_replicas({}) == 1


def test_auto_agent_shards_keep_small_clusters_per_node_and_pool_large_ones() -> None:
    assert comp.auto_agent_shards(9, 9) == 0, "the smoke's Nodes each get their own agent, as the seed's DaemonSet"
    assert comp.auto_agent_shards(32, 32) == 0
    assert comp.auto_agent_shards(200, 200) == 8
    assert comp.auto_agent_shards(1000, 1000) == 40
    assert comp.auto_agent_shards(200, 210) == 0, "pool agents own every managed Node: the DaemonSet must reach all"
