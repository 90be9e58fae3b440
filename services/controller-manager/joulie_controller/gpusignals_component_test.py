"""Per-GPU signals and the board-to-Pod map, pushed over OTLP into a real Prometheus 3 as the node side
exports them (libs/telemetry vocabulary), read back as each Pod's ``GpuSample``s."""

from __future__ import annotations

import time

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from joulie_controller.prometheus_component_test import wait_for
from joulie_controller.settings import PrometheusSettings, Settings
from joulie_controller.telemetry.prometheus import GpuSignalReader
from joulie_localcluster.prometheus import Prometheus
from joulie_telemetry.vocabulary import (
    COMPONENT_POWER,
    GPU_ALLOCATION,
    GPU_DRAM_ACTIVE,
    GPU_SM_ACTIVE,
    GPU_SM_CLOCK,
    GPU_SM_CLOCK_MAX,
    GPU_TENSOR_ACTIVE,
    GPU_UTILIZATION,
)

pytest_plugins = ["joulie_testinfra.fixtures"]


def push_gpus(url: str, node: str, boards: dict[int, dict[str, float]], holders: dict[int, tuple[str, str]]) -> None:
    """One export of a node's per-GPU series (``boards``: index -> signal values) and its allocation."""
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=url, timeout=5), export_interval_millis=60_000)
    provider = MeterProvider(
        resource=Resource.create(
            {"service.name": "joulie-agent", "service.instance.id": node, "k8s.node.name": node, "host.name": node}
        ),
        metric_readers=[reader],
    )
    meter = provider.get_meter("joulie-test")

    def gauge(name: str, unit: str, key: str, extra: dict[str, str]) -> None:
        points = [
            Observation(v[key], {"hw.id": f"gpu-{i}", "hw.type": "gpu", **extra}) for i, v in boards.items() if key in v
        ]

        def cb(_: CallbackOptions) -> list[Observation]:
            return points

        meter.create_observable_gauge(name, callbacks=[cb], unit=unit)

    gauge(COMPONENT_POWER.name, "W", "power", {})
    gauge(GPU_SM_CLOCK.name, "Hz", "clock", {})
    gauge(GPU_SM_CLOCK_MAX.name, "Hz", "clock_max", {"hw.limit_type": "max"})
    gauge(GPU_UTILIZATION.name, "1", "util", {"hw.gpu.task": "general"})
    gauge(GPU_SM_ACTIVE.name, "1", "sm", {})
    gauge(GPU_TENSOR_ACTIVE.name, "1", "tensor", {})
    gauge(GPU_DRAM_ACTIVE.name, "1", "dram", {})
    held = [
        Observation(
            1,
            {
                "hw.id": f"gpu-{i}",
                "hw.type": "gpu",
                "k8s.namespace.name": ns,
                "k8s.pod.name": pod,
                "k8s.pod.uid": f"uid-{pod}",
                "k8s.container.name": "main",
            },
        )
        for i, (ns, pod) in holders.items()
    ]
    meter.create_observable_gauge(GPU_ALLOCATION.name, callbacks=[lambda _: held], unit="1")
    try:
        assert reader.force_flush(timeout_millis=5000)
    finally:
        provider.shutdown()


def test_each_pod_gets_the_signals_of_the_boards_it_holds(prometheus: Prometheus) -> None:
    node, other = "gpu-node-a", "gpu-node-b"
    busy = {"power": 420.0, "clock": 1.26e9, "clock_max": 1.98e9, "util": 0.97, "sm": 0.9, "tensor": 0.5, "dram": 0.3}
    push_gpus(
        prometheus.otlp_metrics_url,
        node,
        {0: busy, 1: {**busy, "power": 400.0}, 2: {"power": 60.0}},
        {0: ("ml", "train"), 1: ("ml", "train")},
    )
    push_gpus(prometheus.otlp_metrics_url, other, {0: {**busy, "dram": 0.7}}, {0: ("serve", "decode")})
    wait_for(prometheus, f'hw_gpu_allocation_ratio{{k8s_node_name="{other}"}}')
    reader = GpuSignalReader(Settings(prometheus=PrometheusSettings(url=prometheus.url)))
    got = reader.read()
    assert sorted(got) == ["ml/train", "serve/decode"]  # gpu-2 of node a is nobody's: no sample
    train = got["ml/train"]
    assert sorted(s.power_w or 0 for s in train) == [400.0, 420.0]
    for s in train:
        assert s.clock_ratio == pytest.approx(1.26 / 1.98)
        assert (s.utilization, s.sm_active, s.tensor_active, s.dram_active) == (0.97, 0.9, 0.5, 0.3)
        assert 0 <= s.age_s < 30  # the samples' own time, seconds old
    assert got["serve/decode"][0].dram_active == 0.7

    # Read as if 4 minutes later: every sample is older than the staleness limit, so nothing (never the
    # last value carried on).
    later = GpuSignalReader(Settings(prometheus=PrometheusSettings(url=prometheus.url)), wall=lambda: time.time() + 240)
    assert later.read() == {}


def test_prometheus_down_means_no_samples_not_a_crash() -> None:
    reader = GpuSignalReader(
        Settings(prometheus=PrometheusSettings(url="http://127.0.0.1:9")), client=httpx.Client(timeout=1)
    )
    assert reader.read() == {}
    assert reader.health.down
