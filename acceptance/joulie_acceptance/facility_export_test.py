"""The facility's names meet (issue 22): the simulator pushes its facility signals over OTLP into a
real Prometheus 3, and the controller's own facility queries (its FACILITY_*_METRIC defaults, the
default metric naming, promoted node attributes) read them back, within 3 % of the simulator's truth.
An ambient step through the control raises what the controller reads."""

from __future__ import annotations

import time

import pytest

from joulie_controller.api import Facility, Settings, facility_queries, pue, read_facility
from joulie_hwprofiles.schema import builtin_profile
from joulie_localcluster.prometheus import Prometheus
from joulie_simulator.api import Emulator, FacilityLive, Load
from joulie_simulator.shell_api import OtlpPusher

pytest_plugins = ["joulie_testinfra.fixtures"]

LABELS = {
    "l40s-0": {"joulie.io/rack": "rack-g", "joulie.io/cooling-zone": "hall-1"},
    "l40s-1": {"joulie.io/rack": "rack-g", "joulie.io/cooling-zone": "hall-1"},
    "epyc-0": {"joulie.io/rack": "rack-c", "joulie.io/cooling-zone": "hall-2"},
}


def _read(prometheus: Prometheus, want_ambient_c: float) -> Facility:
    """The controller's reading once Prometheus has the push with this ambient (a condition, not a delay)."""
    q = facility_queries(Settings())
    deadline = time.monotonic() + 20
    while True:
        got, problems = read_facility(q, lambda promql: list(prometheus.query(promql)))
        assert not problems, problems
        if got.outdoor_ambient_c is not None and abs(got.outdoor_ambient_c - want_ambient_c) < 1e-6 and got.node_inlet_c:
            return got
        assert time.monotonic() < deadline, f"Prometheus never showed ambient {want_ambient_c}: {got}"
        time.sleep(0.5)


def test_the_controllers_facility_poller_reads_the_simulators_facility(prometheus: Prometheus) -> None:
    t = [0.0]
    l40s, epyc = builtin_profile("nvidia-l40s-4gpu"), builtin_profile("amd-epyc-9534-2s-energy-only")
    emu = Emulator([("l40s-0", l40s), ("l40s-1", l40s), ("epyc-0", epyc)], clock=lambda: t[0])
    emu.set_load("l40s-0", Load(cpu_util=0.4, gpu_util=(1.0,) * 4))
    emu.set_load("l40s-1", Load(cpu_util=0.4, gpu_util=(0.5,) * 4))
    emu.set_load("epyc-0", Load(cpu_util=0.9))
    facility = FacilityLive(emu, LABELS)
    pusher = OtlpPusher(emu, prometheus.otlp_metrics_url, facility=facility)
    try:
        for _ in range(5):
            t[0] += 1.0
            emu.tick()
        truth = facility.reading()
        assert pusher.push()
        got = _read(prometheus, truth.ambient_c)
        assert got.it_power_w == pytest.approx(truth.it_w, rel=0.03)
        assert got.cooling_power_w == pytest.approx(truth.cooling_w, rel=0.03)
        assert got.zone_ambient_c == pytest.approx(dict(truth.zone_supply_c))
        assert got.rack_power_w == pytest.approx({r: x.it_w for r, x in truth.racks.items()}, rel=0.03)
        assert got.node_inlet_c == pytest.approx(dict(truth.node_inlet_c))
        assert got.node_inlet_c["l40s-0"] > got.node_inlet_c["epyc-0"] > got.outdoor_ambient_c  # type: ignore[operator]
        before = pue(got)
        assert before == pytest.approx(truth.pue, rel=0.03)

        facility.set_ambient(offset_c=8.0)  # a heat wave
        hot = facility.reading()
        assert pusher.push()
        after = _read(prometheus, hot.ambient_c)
        assert after.outdoor_ambient_c == pytest.approx(truth.ambient_c + 8.0)
        assert after.cooling_power_w is not None and got.cooling_power_w is not None
        assert after.cooling_power_w > got.cooling_power_w
        hot_pue = pue(after)
        assert before is not None and hot_pue is not None and hot_pue > before
        assert hot_pue == pytest.approx(hot.pue, rel=0.03)
    finally:
        pusher.stop()
