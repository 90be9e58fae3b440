"""Host power from the BMC: read from the mounted Secret, fresh or forgotten, one log line per change
between BMC and fallback, and a BMC that never answers holding up no export. (Against the
simulator's emulated BMC, down and back: acceptance/joulie_acceptance/agent_bmc_power_test.py.)"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics.export import NumberDataPoint

from joulie_agent.fixtures import testtrees
from joulie_agent.host.hostread import HostPaths
from joulie_agent.telemetry.bmcpower import BmcPowerReader, BmcSession
from joulie_agent.telemetry.otlpexport import PowerExporter
from joulie_agent.telemetry.otlpexport_test import Clock, FakeExporter, facts_of, points, set_energy
from joulie_redfish.directory import BmcEntry
from joulie_redfish.errors import RedfishError

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def secret_dir(tmp_path: Path, address: str, ca: bool = False) -> Path:
    d = tmp_path / "bmc-secret"
    d.mkdir(exist_ok=True)
    keys = {"username": "joulie", "password": "pool-pw", "node-a.address": address}
    if ca:
        keys["ca.crt"] = PEM
    for k, v in keys.items():
        (d / k).write_text(v)
    return d


class FakeBmc:
    """Stands in for the Redfish session: `watts` to answer, or `error` to raise."""

    def __init__(self) -> None:
        self.watts: float | None = 412.0
        self.error: RedfishError | None = None
        self.connects: list[tuple[BmcEntry, Path | None, float]] = []
        self.closed = 0
        self.abandoned = 0

    def connect(self, entry: BmcEntry, ca: Path | None, timeout_s: float) -> BmcSession:
        self.connects.append((entry, ca, timeout_s))
        if self.error is not None:
            raise self.error
        return self

    def power_watts(self) -> float | None:
        if self.error is not None:
            raise self.error
        return self.watts

    def close(self) -> None:
        self.closed += 1

    def abandon(self) -> None:
        self.abandoned += 1


class ByHand:
    """The reader without its thread: the test polls it."""

    def __init__(self, reader: BmcPowerReader) -> None:
        self.reader = reader

    def power_w(self) -> float | None:
        return self.reader.power_w()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


DOWN = RedfishError("https://10.0.0.9", "unreachable", "read the power failed: unreachable (connection refused)")


def test_the_reader_connects_with_the_nodes_entry_and_the_mounted_ca(tmp_path: Path) -> None:
    bmc, clock = FakeBmc(), Clock()
    d = secret_dir(tmp_path, "10.0.0.9", ca=True)
    r = BmcPowerReader("node-a", d, interval_s=10.0, timeout_s=3.0, monotonic=clock, connect=bmc.connect)
    assert r.power_w() is None
    assert r.poll_once() == 412.0 and r.power_w() == 412.0
    ((entry, ca, timeout_s),) = bmc.connects
    assert (entry.address, entry.credentials.username, ca, timeout_s) == ("https://10.0.0.9", "joulie", d / "ca.crt", 3.0)
    bmc.watts = 430.0
    assert r.poll_once() == 430.0 and len(bmc.connects) == 1  # the session is kept


def test_a_reading_goes_stale_after_two_intervals_and_the_timeout(tmp_path: Path) -> None:
    bmc, clock = FakeBmc(), Clock()
    r = BmcPowerReader("node-a", secret_dir(tmp_path, "10.0.0.9"), 10.0, 3.0, monotonic=clock, connect=bmc.connect)
    r.poll_once()
    clock.t = 23.0
    assert r.power_w() == 412.0
    clock.t = 23.5  # a poll hung past its timeout: no fresh reading
    assert r.power_w() is None


def test_failures_forget_the_reading_at_once_and_log_once_per_change(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="joulie_agent.telemetry.bmcpower")
    bmc, clock = FakeBmc(), Clock()
    r = BmcPowerReader("node-a", secret_dir(tmp_path, "10.0.0.9"), 10.0, 3.0, monotonic=clock, connect=bmc.connect)
    r.poll_once()
    bmc.error = DOWN
    for _ in range(5):
        assert r.poll_once() is None and r.power_w() is None
    # The session is abandoned (an unreachable BMC cannot end it), a new login tried each poll.
    assert (bmc.closed, bmc.abandoned) == (0, 1) and len(bmc.connects) == 5
    bmc.error = None
    for _ in range(3):
        assert r.poll_once() == 412.0
    lines = [rec.getMessage() for rec in caplog.records]
    assert lines == [
        "node node-a: host power from its BMC https://10.0.0.9 (joulie.host.power.source=bmc)",
        "node node-a: host power: BMC https://10.0.0.9: read the power failed: unreachable (connection refused); exporting "
        "the sum of the measured components (joulie.host.power.source=sum-of-components) until the BMC answers",
        "node node-a: host power from its BMC https://10.0.0.9 (joulie.host.power.source=bmc)",
    ]
    assert "pool-pw" not in caplog.text


def test_a_bmc_that_answers_an_error_gets_its_session_ended(tmp_path: Path) -> None:
    bmc, clock = FakeBmc(), Clock()
    r = BmcPowerReader("node-a", secret_dir(tmp_path, "10.0.0.9"), 10.0, 3.0, monotonic=clock, connect=bmc.connect)
    r.poll_once()
    bmc.error = RedfishError("https://10.0.0.9", "protocol", "read the power failed: the BMC answered an error (HTTP 500)", 500)
    assert r.poll_once() is None and bmc.closed == 1  # a session slot is freed on the BMC


def test_a_node_missing_from_the_secret_and_a_bmc_without_a_reading_say_why(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    bmc, clock = FakeBmc(), Clock()
    d = secret_dir(tmp_path, "10.0.0.9")
    other = BmcPowerReader("node-b", d, 10.0, 3.0, monotonic=clock, connect=bmc.connect)
    assert other.poll_once() is None and not bmc.connects
    assert f"node node-b: host power: no 'node-b.address' in the BMC Secret mounted at {d};" in caplog.text
    bmc.watts = None
    r = BmcPowerReader("node-a", d, 10.0, 3.0, monotonic=clock, connect=bmc.connect)
    assert r.poll_once() is None
    assert "BMC https://10.0.0.9: no power reading (neither Chassis Power PowerControl nor a Power sensor)" in caplog.text


def test_the_export_carries_the_bmc_reading_as_host_power_and_falls_back_to_the_labelled_sum(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path, sockets=1)
    bmc, clock, fake = FakeBmc(), Clock(), FakeExporter()
    reader = BmcPowerReader("node-a", secret_dir(tmp_path, "10.0.0.9"), 10.0, 3.0, monotonic=clock, connect=bmc.connect)
    ex = PowerExporter(fake, 10.0, monotonic=clock, host_power=lambda node: ByHand(reader) if node == "node-a" else None)
    assert ex.set_node("node-a", HostPaths.under(tmp_path), facts_of(tmp_path), lambda: None) is None
    reader.poll_once()
    ex.export_once()
    clock.t = 10.0
    set_energy(tmp_path, "intel-rapl:0", 1_500_000_000)  # the package: 150 W
    reader.poll_once()
    ex.export_once()
    p = points(fake.sent[-1])
    assert p[("hw.host.power", "host")] == 412.0 and p[("hw.host.energy", "host")] == pytest.approx(4120.0)
    assert p[("hw.power", "package-0")] == pytest.approx(150.0)
    assert host_sources(fake) == {"hw.host.energy": ["bmc"], "hw.host.power": ["bmc"]}
    bmc.error = DOWN
    reader.poll_once()
    clock.t = 20.0
    set_energy(tmp_path, "intel-rapl:0", 3_000_000_000)
    ex.export_once()
    assert host_sources(fake) == {"hw.host.energy": ["bmc", "sum-of-components"], "hw.host.power": ["sum-of-components"]}
    p = points(fake.sent[-1])
    assert p[("hw.host.power", "host")] == pytest.approx(150.0 + 0.0)  # the package; its DRAM zone reads 0 W here
    energies = host_energies(fake)
    assert energies == {"bmc": pytest.approx(4120.0), "sum-of-components": pytest.approx(1500.0)}


def host_energies(fake: FakeExporter) -> dict[str, float]:
    """The last export's hw.host.energy per joulie.host.power.source."""
    (rm,) = fake.sent[-1].resource_metrics
    out = {}
    for m in rm.scope_metrics[0].metrics:
        for dp in m.data.data_points if m.name == "hw.host.energy" else ():
            assert isinstance(dp, NumberDataPoint) and dp.attributes is not None
            out[str(dp.attributes["joulie.host.power.source"])] = float(dp.value)
    return out


def host_sources(fake: FakeExporter) -> dict[str, list[str]]:
    (rm,) = fake.sent[-1].resource_metrics
    out: dict[str, list[str]] = {}
    for m in rm.scope_metrics[0].metrics:
        for dp in m.data.data_points if m.name.startswith("hw.host.") else ():
            assert isinstance(dp, NumberDataPoint) and dp.attributes is not None
            out.setdefault(m.name, []).append(str(dp.attributes["joulie.host.power.source"]))
    return {k: sorted(v) for k, v in out.items()}


@pytest.fixture
def silent_bmc() -> Iterator[int]:
    """Accepts connections and never answers (a hung BMC)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield int(s.getsockname()[1])
    s.close()


def test_a_bmc_that_never_answers_holds_up_no_export(tmp_path: Path, silent_bmc: int, caplog: pytest.LogCaptureFixture) -> None:
    testtrees.rapl_node(tmp_path, sockets=1)
    fake = FakeExporter()
    d = secret_dir(tmp_path, f"http://127.0.0.1:{silent_bmc}")
    ex = PowerExporter(fake, 10.0, host_power=lambda node: BmcPowerReader(node, d, interval_s=1.0, timeout_s=1.0))
    assert ex.set_node("node-a", HostPaths.under(tmp_path), facts_of(tmp_path), lambda: None) is None  # the reader starts
    try:
        for _ in range(3):
            start = time.monotonic()
            assert ex.export_once()
            assert time.monotonic() - start < 0.5  # the login hangs in the reader's thread, not here
            assert host_sources(fake)["hw.host.energy"] == ["sum-of-components"]
            time.sleep(0.2)
        deadline = time.monotonic() + 10
        while "host power: BMC" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "timed out" in caplog.text
    finally:
        start = time.monotonic()
        ex.stop()
        assert time.monotonic() - start < 5


def test_a_node_without_counters_but_with_a_bmc_exports_the_host_alone_and_nothing_while_it_is_down(tmp_path: Path) -> None:
    from joulie_agent.power.powerexport import BMC_ONLY_REASON

    bmc, clock, fake = FakeBmc(), Clock(), FakeExporter()
    reader = BmcPowerReader("node-a", secret_dir(tmp_path, "10.0.0.9"), 10.0, 3.0, monotonic=clock, connect=bmc.connect)
    ex = PowerExporter(fake, 10.0, monotonic=clock, host_power=lambda node: ByHand(reader))
    assert ex.set_node("node-a", HostPaths.under(tmp_path / "vm"), facts_of(tmp_path / "vm"), lambda: None) == BMC_ONLY_REASON
    reader.poll_once()
    ex.export_once()
    (rm,) = fake.sent[-1].resource_metrics
    assert sorted(m.name for m in rm.scope_metrics[0].metrics) == ["hw.host.energy", "hw.host.power"]
    bmc.error = DOWN
    reader.poll_once()
    clock.t = 10.0
    sent = len(fake.sent)
    ex.export_once()
    assert len(fake.sent) == sent  # nothing measured: nothing sent (no 0 W that would look healthy)
