"""The agent's host power from the node's BMC (issue 21), against the simulator's emulated BMC:
real Redfish over sushy on loopback, the BMC Secret mounted as files, the emulator's truth to
compare with. The BMC answers, goes down (its server stopped: connection refused), and comes back
on the same address: the export follows it (source bmc -> sum-of-components -> bmc), logs one
line per change, and every host energy counter only grows.

The poller is driven by hand on the bench's frozen clock, so each step is one poll and one export;
that a hung BMC holds up no export (the poller's own thread) is services/agent/joulie_agent/telemetry/bmcpower_test.py.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData, NumberDataPoint

from joulie_acceptance.harness import Bench
from joulie_agent.shell_api import BmcPowerReader, PowerExporter
from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.shell_api import BmcCredentials, BmcFleet

PASSWORD = "Pa55-w0rd-of-the-pool"
NODE = "node-a"
SOURCE = "joulie.host.power.source"


class Sink(MetricExporter):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[MetricsData] = []

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        self.sent.append(metrics_data)
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        pass

    def host(self) -> tuple[dict[str, float], tuple[str, float] | None]:
        """The last export's hw.host.energy per source and its hw.host.power (source, W)."""
        (rm,) = self.sent[-1].resource_metrics
        energy: dict[str, float] = {}
        power = None
        for m in rm.scope_metrics[0].metrics:
            for p in m.data.data_points:
                assert isinstance(p, NumberDataPoint) and p.attributes is not None
                if m.name == "hw.host.energy":
                    energy[str(p.attributes[SOURCE])] = float(p.value)
                elif m.name == "hw.host.power":
                    power = (str(p.attributes[SOURCE]), float(p.value))
        return energy, power


class ByHand:
    """The reader without its thread: the test polls it (HostPowerReader)."""

    def __init__(self, reader: BmcPowerReader) -> None:
        self.reader = reader

    def power_w(self) -> float | None:
        return self.reader.power_w()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    with Bench(tmp_path, builtin_profile("intel-xeon-6530-2s-rapl"), node=NODE, tick_s=0.5) as b:
        b.load(cpu=0.6)
        b.advance(2)
        b.reconcile()
        yield b


def test_host_power_follows_the_bmc_down_to_the_labelled_sum_and_back(bench: Bench, tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="joulie_agent.telemetry.bmcpower")
    creds = BmcCredentials("joulie", PASSWORD)
    fleet = BmcFleet(bench.emu, creds, nodes=[NODE]).start()
    address = fleet.addresses[NODE]
    port = int(address.rsplit(":", 1)[1])
    secret = tmp_path / "bmc-secret"  # the Secret as the kubelet mounts it: a file per key
    secret.mkdir()
    for key, value in {"username": "joulie", "password": PASSWORD, f"{NODE}.address": address}.items():
        (secret / key).write_text(value)
    reader = BmcPowerReader(NODE, secret, interval_s=10.0, timeout_s=3.0, monotonic=bench.clock.monotonic)
    sink = Sink()
    ex = PowerExporter(sink, 10.0, monotonic=bench.clock.monotonic, host_power=lambda node: ByHand(reader))
    c = bench.agent.controllers[NODE]
    assert ex.set_node(NODE, c.paths, c.facts, lambda: None) is None
    steps: list[str] = []

    def step(what: str) -> tuple[dict[str, float], tuple[str, float] | None, float]:
        """Poll the BMC, export; what was exported and the emulator's host power."""
        watts = reader.poll_once()
        ex.export_once()
        energy, power = sink.host()
        truth_w = float(bench.truth()["host"]["powerW"])
        steps.append(f"{what}: BMC {watts!r} W, hw.host.power {power}, hw.host.energy {energy}, truth {truth_w:.1f} W"
                     f" [{caplog.records[-1].getMessage() if caplog.records else ''}]")
        print(steps[-1])
        return energy, power, truth_w

    try:
        e0, p0, truth0 = step("BMC up")
        assert p0 is not None and p0[0] == "bmc" and p0[1] == pytest.approx(truth0, abs=0.05)
        truth_j0 = float(bench.truth()["host"]["energyJ"])
        bench.advance(10)
        e1, p1, truth1 = step("BMC up, 10 s later")
        assert p1 is not None and p1[0] == "bmc"
        truth_j1 = float(bench.truth()["host"]["energyJ"])
        assert e1["bmc"] - e0["bmc"] == pytest.approx(truth_j1 - truth_j0, rel=0.02)  # the wall-side energy

        fleet.stop()  # the BMC is gone: connection refused
        bench.advance(10)
        e2, p2, truth2 = step("BMC down")
        assert p2 is not None and p2[0] == "sum-of-components"
        assert 0 < p2[1] < truth2  # packages and DRAM: the platform's other draw is not in the sum
        assert e2["bmc"] == e1["bmc"] and e2["sum-of-components"] > 0
        for _ in range(3):  # still down: no more log lines
            bench.advance(10)
            step("BMC still down")

        # The session the outage broke was abandoned: collecting it calls no BMC. (Were it live,
        # sushy's finalizer would try to end it from whichever thread collects it, e.g. the new
        # BMC's own server thread, and log a warning the check of the log lines below would see.)
        gc.collect()
        fleet = BmcFleet(bench.emu, creds, nodes=[NODE], ports={NODE: port}).start()
        assert fleet.addresses[NODE] == address
        e3, p3, _ = step("BMC back")
        assert p3 is not None and p3[0] == "bmc"
        bench.advance(10)
        e4, p4, truth4 = step("BMC back, 10 s later")
        assert p4 is not None and p4[0] == "bmc" and p4[1] == pytest.approx(truth4, abs=0.05)
        assert e4["sum-of-components"] == e3["sum-of-components"]  # frozen while the BMC answers
        assert e4["bmc"] - e3["bmc"] == pytest.approx(10 * truth4, rel=0.02)
    finally:
        reader.stop()  # ends its session while the BMC is there
        fleet.stop()

    # Every source's counter only grows (what Prometheus' rate() needs).
    history = [sink_host(d) for d in sink.sent]
    for src in ("bmc", "sum-of-components"):
        seq = [h[src] for h in history if src in h]
        assert seq == sorted(seq), (src, seq)
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert lines == [
        f"node {NODE}: host power from its BMC {address} (joulie.host.power.source=bmc)",
        f"node {NODE}: host power: BMC {address}: read the power failed: unreachable (connection refused); exporting the sum of "
        "the measured components (joulie.host.power.source=sum-of-components) until the BMC answers",
        f"node {NODE}: host power from its BMC {address} (joulie.host.power.source=bmc)",
    ], "\n".join(steps)
    assert PASSWORD not in caplog.text


def sink_host(data: MetricsData) -> dict[str, float]:
    (rm,) = data.resource_metrics
    out = {}
    for m in rm.scope_metrics[0].metrics:
        for p in m.data.data_points if m.name == "hw.host.energy" else ():
            assert isinstance(p, NumberDataPoint) and p.attributes is not None
            out[str(p.attributes[SOURCE])] = float(p.value)
    return out
