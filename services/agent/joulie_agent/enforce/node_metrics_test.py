"""Metric names a dashboard depends on are exported after a reconcile."""

from pathlib import Path

from prometheus_client import generate_latest

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.enforce.node import NodeController
from joulie_agent.fixtures import testtrees
from joulie_agent.host.hostread import HostPaths
from joulie_agent.host.toolrun import make_runner
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_api.generated.nodetwin import CPUCapSpec, NodeTwinSpec
from joulie_common.clock import FakeClock


def test_rapl_and_backend_metrics_after_two_reconciles(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path)
    clock, metrics = FakeClock(), AgentMetrics()
    c = NodeController("n1", HostPaths.under(tmp_path), load_catalog(), make_runner(str(tmp_path)), None, clock, metrics)
    c.discover({}, {})
    spec = NodeTwinSpec(node_name="n1", profile="eco", cpu=CPUCapSpec(package_power_cap_watts=120))
    c.reconcile_cpu(spec)
    clock.advance(5)  # the power meter's shortest window (energymeter.MIN_WINDOW_S)
    testtrees.write(tmp_path / "sys/class/powercap/intel-rapl:0/energy_uj", str(500_000_000))
    testtrees.write(tmp_path / "sys/class/powercap/intel-rapl:1/energy_uj", str(500_000_000))
    c.reconcile_cpu(spec)
    text = generate_latest(metrics.registry).decode()
    assert 'joulie_backend_mode{mode="rapl",node="n1"} 1.0' in text
    assert 'joulie_backend_mode{mode="dvfs",node="n1"} 0.0' in text
    assert 'joulie_rapl_energy_uj{node="n1",zone="intel-rapl:0"} 5e+08' in text
    assert 'joulie_rapl_estimated_power_watts{node="n1",zone="intel-rapl:0"} 100.0' in text
    assert 'joulie_rapl_package_total_power_watts{node="n1"} 200.0' in text
    assert 'joulie_policy_cap_watts{node="n1",policy=""} 120.0' in text
