"""Issue 23, defect 5: the package power a node reports from a counter that steps once a tick."""

from pathlib import Path

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.enforce.node import NodeController
from joulie_agent.fixtures import testtrees
from joulie_agent.host.hostread import HostPaths
from joulie_agent.host.toolrun import make_runner
from joulie_agent.power.energymeter_test import READS, TRUE_W, counter_uj
from joulie_common.clock import FakeClock


def test_the_agent_reports_package_power_near_the_truth_from_a_stepping_counter(tmp_path: Path) -> None:
    # Through the CPU enforcer, as joulie_rapl_estimated_power_watts is made (it said 0, 918,
    # 1672 and 2614 W for a socket drawing ~290 W).
    testtrees.rapl_node(tmp_path, sockets=1)
    clock = FakeClock()
    c = NodeController("n1", HostPaths.under(tmp_path), load_catalog(), make_runner(str(tmp_path)), None, clock)
    c.discover({}, {})
    seen = []
    for t in READS:
        clock.t = t
        testtrees.write(tmp_path / "sys/class/powercap/intel-rapl:0/energy_uj", str(counter_uj(t)))
        w = c.cpu.package_power_w(c.facts.zones)
        if w is not None:
            seen.append(round(w))
    assert seen and all(abs(w - TRUE_W) / TRUE_W < 0.06 for w in seen), seen
