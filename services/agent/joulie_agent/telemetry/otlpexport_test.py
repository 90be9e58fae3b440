"""The power export shell: files and GPU tools in, OTLP out (a fake exporter and a real HTTP sink)."""

import http.server
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData, NumberDataPoint

from joulie_agent.discovery.gputools import GPUDevice, Inventory
from joulie_agent.discovery.status import HostFacts
from joulie_agent.fixtures import testtrees
from joulie_agent.host import hostread
from joulie_agent.host.hostread import HostPaths
from joulie_agent.host.toolrun import make_runner
from joulie_agent.power.powerexport import NO_COUNTERS_REASON
from joulie_agent.telemetry.otlpexport import PowerExporter, otlp_exporter


class FakeExporter(MetricExporter):
    def __init__(self, result: MetricExportResult = MetricExportResult.SUCCESS) -> None:
        super().__init__()
        self.sent: list[MetricsData] = []
        self.result = result

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        self.sent.append(metrics_data)
        return self.result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        pass


def points(data: MetricsData) -> dict[tuple[str, str], float]:
    """(metric, hw.id or 'host') -> value, for the only resource."""
    (rm,) = data.resource_metrics
    out = {}
    for m in rm.scope_metrics[0].metrics:
        for p in m.data.data_points:
            assert isinstance(p, NumberDataPoint) and p.attributes is not None
            out[(m.name, str(p.attributes.get("hw.id", "host")))] = float(p.value)
    return out


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def set_energy(root: Path, zone_id: str, uj: int) -> None:
    testtrees.write(root / "sys/class/powercap" / zone_id / "energy_uj", f"{uj}\n")


def facts_of(root: Path, gpus: Inventory | None = None) -> HostFacts:
    # No GPU tool on this PATH: the inventory is what the test passes.
    facts = hostread.read_facts(HostPaths.under(root), {}, {}, make_runner(str(root / "no-bin"), 1.0), None)
    facts.gpu = gpus
    return facts


def test_rapl_and_gpu_power_are_exported_with_semconv_names(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path, sockets=2)
    gpus = Inventory("nvidia", "nvml", [GPUDevice(0, draw_w=300.0), GPUDevice(1, draw_w=100.0)])
    fake, clock = FakeExporter(), Clock()
    ex = PowerExporter(fake, 10.0, monotonic=clock)
    assert ex.set_node("n1", HostPaths.under(tmp_path), facts_of(tmp_path, gpus), lambda: gpus) is None
    ex.export_once()
    first = points(fake.sent[-1])
    assert first[("hw.host.energy", "host")] == 0.0 and ("hw.host.power", "host") not in first
    clock.t = 10.0
    set_energy(tmp_path, "intel-rapl:0", 1_000_000_000)   # 100 W
    set_energy(tmp_path, "intel-rapl:1", 500_000_000)     # 50 W
    set_energy(tmp_path, "intel-rapl:0:0", 100_000_000)   # 10 W
    ex.export_once()
    p = points(fake.sent[-1])
    assert p[("hw.power", "package-0")] == pytest.approx(100.0) and p[("hw.power", "dram-0")] == pytest.approx(10.0)
    assert p[("hw.energy", "gpu-0")] == pytest.approx(3000.0)
    assert p[("hw.host.power", "host")] == pytest.approx(100 + 50 + 10 + 300 + 100)
    assert p[("hw.host.energy", "host")] == pytest.approx(1000 + 500 + 100 + 3000 + 1000)
    (rm,) = fake.sent[-1].resource_metrics
    assert rm.resource.attributes["k8s.node.name"] == "n1" and rm.resource.attributes["service.instance.id"] == "n1"
    host = next(m for m in rm.scope_metrics[0].metrics if m.name == "hw.host.energy").data.data_points[0]
    assert host.attributes == {"joulie.host.power.source": "sum-of-components"}


def test_amd_energy_hwmon_is_read_when_there_is_no_rapl(tmp_path: Path) -> None:
    hw = tmp_path / "sys/class/hwmon/hwmon3"
    testtrees.write(hw / "name", "amd_energy\n")
    testtrees.write(hw / "energy1_label", "Ecore000\n")
    testtrees.write(hw / "energy1_input", "5\n")
    testtrees.write(hw / "energy65_label", "Esocket0\n")
    testtrees.write(hw / "energy65_input", "1000000\n")
    fake, clock = FakeExporter(), Clock()
    ex = PowerExporter(fake, 10.0, monotonic=clock)
    assert ex.set_node("epyc", HostPaths.under(tmp_path), facts_of(tmp_path), lambda: None) is None
    ex.export_once()
    clock.t = 10.0
    testtrees.write(hw / "energy65_input", "2001000000\n")
    ex.export_once()
    p = points(fake.sent[-1])
    assert p[("hw.power", "package-0")] == pytest.approx(200.0) and ("hw.power", "package-1") not in p


def test_a_node_without_counters_exports_nothing_and_says_why(tmp_path: Path) -> None:
    fake = FakeExporter()
    ex = PowerExporter(fake, 10.0)
    assert ex.set_node("vm", HostPaths.under(tmp_path), facts_of(tmp_path), lambda: None) == NO_COUNTERS_REASON
    assert ex.export_once() and fake.sent == []


def test_failed_exports_are_counted_and_never_retried_in_a_loop(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path, sockets=1)
    results: list[bool] = []
    fake = FakeExporter(MetricExportResult.FAILURE)
    ex = PowerExporter(fake, 10.0, on_result=results.append)
    ex.set_node("n1", HostPaths.under(tmp_path), facts_of(tmp_path), lambda: None)
    assert not ex.export_once() and not ex.export_once()
    assert results == [False, False] and len(fake.sent) == 2


class _Sink(http.server.BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:  # (http.server's name)
        self.bodies.append(self.rfile.read(int(self.headers["content-length"])))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Sequence[object]) -> None:
        pass


@pytest.fixture
def sink() -> Iterator[str]:
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1/metrics"
    finally:
        srv.shutdown()


def test_the_sdk_exporter_posts_otlp_protobuf(tmp_path: Path, sink: str) -> None:
    # opentelemetry-proto comes with the OTLP exporter.
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (  # pants: no-infer-dep
        ExportMetricsServiceRequest,
    )

    testtrees.rapl_node(tmp_path, sockets=1)
    _Sink.bodies = []
    ex = PowerExporter(otlp_exporter(sink, timeout_s=2), 10.0)
    ex.set_node("n1", HostPaths.under(tmp_path), facts_of(tmp_path), lambda: None)
    assert ex.export_once()
    req = ExportMetricsServiceRequest.FromString(_Sink.bodies[-1])
    names = {m.name for m in req.resource_metrics[0].scope_metrics[0].metrics}
    assert {"hw.host.energy", "hw.energy"} <= names
    ex.stop()


def test_amd_gpu_power_is_read_from_the_amdgpu_hwmon_in_pci_order(tmp_path: Path) -> None:
    for hw, bus, uw in (("hwmon7", "0000:c1:00.0", 500_000_000), ("hwmon6", "0000:41:00.0", 300_000_000)):
        dev = tmp_path / "sys/devices/pci" / bus / "hwmon" / hw
        testtrees.write(dev / "name", "amdgpu\n")
        testtrees.write(dev / "power1_input", f"{uw}\n")
        link = tmp_path / "sys/class/hwmon" / hw
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(dev)
    gpus = Inventory("amd", "amd-smi", [GPUDevice(0), GPUDevice(1)])  # no draw from the tools
    fake, clock = FakeExporter(), Clock()
    ex = PowerExporter(fake, 10.0, monotonic=clock)
    assert ex.set_node("mi300x", HostPaths.under(tmp_path), facts_of(tmp_path, gpus), lambda: None) is None
    ex.export_once()
    clock.t = 10.0
    ex.export_once()
    p = points(fake.sent[-1])
    assert (p[("hw.power", "gpu-0")], p[("hw.power", "gpu-1")]) == (300.0, 500.0)
    assert p[("hw.energy", "gpu-1")] == pytest.approx(5000.0)


def test_gpus_the_tools_missed_at_discovery_are_read_once_they_answer(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path, sockets=1)
    facts = facts_of(tmp_path, Inventory("nvidia", "none", [], ["nvidia-smi: timed out"]))
    facts.allocatable = {"nvidia.com/gpu": "2"}
    answers: list[Inventory | None] = [None, Inventory("nvidia", "nvidia-smi", [GPUDevice(0, draw_w=250.0)])]
    # A failed read waits TOOL_READ_MIN_S like a good one; an answer keeps being used in between.
    fake, clock = FakeExporter(), Clock()
    ex = PowerExporter(fake, 2.0, monotonic=clock)
    assert ex.set_node("gpu-node", HostPaths.under(tmp_path), facts, lambda: answers.pop(0) if answers else None) is None
    ex.export_once()                      # the tool still does not answer
    clock.t = 2.0
    ex.export_once()                      # within TOOL_READ_MIN_S: not asked again
    assert len(answers) == 1
    clock.t = 10.0
    ex.export_once()
    assert points(fake.sent[-1])[("hw.power", "gpu-0")] == 250.0


def gpu_points(data: MetricsData) -> dict[tuple[str, str], tuple[float, dict[str, Any]]]:
    """(metric, hw.id) -> (value, attributes) of the GPU_METRICS series."""
    (rm,) = data.resource_metrics
    out = {}
    for m in rm.scope_metrics[0].metrics:
        if m.name.startswith("hw.gpu."):
            for p in m.data.data_points:
                assert isinstance(p, NumberDataPoint) and p.attributes is not None
                out[(m.name, str(p.attributes["hw.id"]))] = (float(p.value), dict(p.attributes))
    return out


def test_gpu_signals_and_the_board_holder_are_exported_per_board(tmp_path: Path) -> None:
    from joulie_agent.discovery.gpuactivity import ActivityReport, BoardActivity, DeviceHolder
    from joulie_telemetry.vocabulary import GPU_METRICS

    gpus = Inventory("nvidia", "nvml", [GPUDevice(0, draw_w=300.0), GPUDevice(1, draw_w=90.0)])
    report = ActivityReport([BoardActivity(0, "GPU-aaaa", 0.97, 1410.0, 1980.0, 0.81, 0.3, 0.42),
                             BoardActivity(1, "GPU-bbbb", 0.0, 345.0, 1980.0)])  # board 1: no DCGM answer
    devices: list[DeviceHolder] | None = [DeviceHolder("ml", "train-0", "main", "nvidia.com/gpu", ("GPU-aaaa",))]
    reads = []

    def read_activity() -> ActivityReport:
        reads.append(1)
        return report

    fake, clock = FakeExporter(), Clock()
    ex = PowerExporter(fake, 10.0, monotonic=clock)
    ex.set_node("n1", HostPaths.under(tmp_path), facts_of(tmp_path, gpus), lambda: gpus, read_activity, lambda: devices)
    ex.export_once()
    got = gpu_points(fake.sent[-1])
    assert {name for name, _ in got} == {m.name for m in GPU_METRICS}
    board0 = {"hw.type": "gpu", "hw.id": "gpu-0"}
    assert got[("hw.gpu.utilization", "gpu-0")] == (0.97, {**board0, "hw.gpu.task": "general"})
    assert got[("hw.gpu.speed", "gpu-0")] == (1410e6, board0)
    assert got[("hw.gpu.speed.limit", "gpu-1")][0] == 1980e6
    assert got[("hw.gpu.speed.limit", "gpu-1")][1]["hw.limit_type"] == "max"
    assert got[("hw.gpu.dram.active", "gpu-0")] == (0.42, board0)
    # A board DCGM said nothing of has no activity series at all, not zeros; utilisation 0 is a reading.
    assert ("hw.gpu.dram.active", "gpu-1") not in got and ("hw.gpu.sm.active", "gpu-1") not in got
    assert got[("hw.gpu.utilization", "gpu-1")][0] == 0.0
    assert got[("hw.gpu.allocation", "gpu-0")] == (1.0, {**board0, "k8s.namespace.name": "ml",
                                                         "k8s.pod.name": "train-0", "k8s.container.name": "main"})
    assert ("hw.gpu.allocation", "gpu-1") not in got  # nobody holds it

    # The Pod leaves: its allocation point goes at the next interval; the tool is read at most every 10 s.
    devices = []
    clock.t = 5.0
    ex.export_once()
    got = gpu_points(fake.sent[-1])
    assert not any(name == "hw.gpu.allocation" for name, _ in got) and len(reads) == 1
    # A kubelet that does not answer: no allocation points (never the last ones), the signals stay.
    devices = None
    clock.t = 10.0
    ex.export_once()
    got = gpu_points(fake.sent[-1])
    assert ("hw.gpu.dram.active", "gpu-0") in got and len(reads) == 2
    assert not any(name == "hw.gpu.allocation" for name, _ in got)


def test_gpu_signals_older_than_two_tool_reads_are_not_exported(tmp_path: Path) -> None:
    from joulie_agent.discovery.gpuactivity import ActivityReport, BoardActivity

    gpus = Inventory("nvidia", "nvml", [GPUDevice(0, draw_w=300.0)])
    answers: list[ActivityReport | None] = [ActivityReport([BoardActivity(0, "GPU-a", 0.5, 900.0, 1980.0)])]
    fake, clock = FakeExporter(), Clock()
    ex = PowerExporter(fake, 10.0, monotonic=clock)
    ex.set_node("n1", HostPaths.under(tmp_path), facts_of(tmp_path, gpus), lambda: gpus,
                lambda: answers[-1], lambda: [])
    ex.export_once()
    assert ("hw.gpu.utilization", "gpu-0") in gpu_points(fake.sent[-1])
    answers.append(None)  # the tool stays busy
    clock.t = 25.0
    ex.export_once()
    assert gpu_points(fake.sent[-1]) == {}


def test_gpu_only_export_sends_the_gpu_series_and_no_power(tmp_path: Path) -> None:
    from joulie_agent.discovery.gpuactivity import ActivityReport, BoardActivity, DeviceHolder

    testtrees.rapl_node(tmp_path, sockets=1)
    gpus = Inventory("nvidia", "nvml", [GPUDevice(0, draw_w=300.0)])
    report = ActivityReport([BoardActivity(0, "GPU-a", 0.9, 1700.0, 1980.0, 0.7, 0.2, 0.5)])
    fake = FakeExporter()
    ex = PowerExporter(fake, 10.0, monotonic=Clock(), gpu_only=True)
    assert ex.set_node("g", HostPaths.under(tmp_path), facts_of(tmp_path, gpus), lambda: gpus, lambda: report,
                       lambda: [DeviceHolder("ml", "p", "work", "nvidia.com/gpu", ("GPU-a",))]) is None
    # A node without NVIDIA boards has nothing to export in this mode.
    assert ex.set_node("c", HostPaths.under(tmp_path), facts_of(tmp_path), lambda: None) is None
    ex.export_once()
    (rm,) = fake.sent[-1].resource_metrics
    names = {m.name for m in rm.scope_metrics[0].metrics}
    assert names and all(n.startswith("hw.gpu.") for n in names) and "hw.gpu.allocation" in names


def test_the_reconcile_time_is_pushed_per_node_and_pushed_says_while_it_succeeds(tmp_path: Path) -> None:
    # Issue 39: the agent's heartbeat travels with its power; its Lease is renewed rarely only
    # while this export succeeds for the node (kube.heartbeat).
    testtrees.rapl_node(tmp_path, sockets=1)
    clock = Clock()
    fake = FakeExporter()
    ex = PowerExporter(fake, 10.0, monotonic=clock)
    ex.set_node("n1", HostPaths.under(tmp_path), facts_of(tmp_path), lambda: None)
    assert ex.export_once() and ("joulie.agent.reconcile.time", "host") not in points(fake.sent[-1])
    assert not ex.pushed("n1")  # no reconcile yet: nothing said about the agent
    ex.reconciled("n1", 1796299200.0)
    assert ex.export_once() and points(fake.sent[-1])[("joulie.agent.reconcile.time", "host")] == 1796299200.0
    assert ex.pushed("n1") and not ex.pushed("other")
    clock.t = 26.0  # two intervals and more without a successful export: no longer pushed
    assert not ex.pushed("n1")
    assert ex.export_once() and ex.pushed("n1")
    fake.result = MetricExportResult.FAILURE
    assert not ex.export_once() and not ex.pushed("n1")  # a failed export ends it at once


def test_a_node_with_nothing_else_to_export_still_pushes_its_reconcile_time(tmp_path: Path) -> None:
    # A CPU node under POWER_EXPORT_METRICS=gpu, or one without counters: its heartbeat is pushed all the same.
    fake = FakeExporter()
    ex = PowerExporter(fake, 10.0, gpu_only=True)
    assert ex.set_node("cpu-node", HostPaths.under(tmp_path), facts_of(tmp_path), lambda: None) is None
    ex.reconciled("cpu-node", 1796299200.0)
    assert ex.export_once() and points(fake.sent[-1]) == {("joulie.agent.reconcile.time", "host"): 1796299200.0}
    assert ex.pushed("cpu-node")
    ex.remove_node("cpu-node")
    assert ex.export_once() and not ex.pushed("cpu-node")
