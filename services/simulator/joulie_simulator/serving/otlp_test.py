"""Component test: the emulator's truth pushed over OTLP/HTTP into a real Prometheus 3 and read
back with PromQL, within 3 % of the truth (the seed's tolerance)."""

from __future__ import annotations

import time

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_localcluster.prometheus import Prometheus
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.physics.model import Load
from joulie_simulator.serving.otlp import OtlpPusher

pytest_plugins = ["joulie_testinfra.fixtures"]


def _value(prometheus: Prometheus, promql: str) -> float:
    deadline = time.monotonic() + 20
    while True:
        result = prometheus.query(promql)
        if result:
            value = result[0]["value"]
            assert isinstance(value, list)
            return float(value[1])
        assert time.monotonic() < deadline, f"no samples for {promql}"
        time.sleep(0.5)


def test_hw_semconv_metrics_reach_prometheus_within_3_percent_of_truth(prometheus: Prometheus) -> None:
    t = [0.0]
    emu = Emulator(
        [("xeon-0", builtin_profile("intel-xeon-2s-rapl")), ("nvl-0", builtin_profile("nvidia-h100-nvl-8gpu"))],
        clock=lambda: t[0],
    )
    emu.set_load("xeon-0", Load(cpu_util=0.8))
    emu.set_load("nvl-0", Load(cpu_util=0.3, gpu_util=(1.0, 0.5)))
    emu.write("nvl-0", "state/nvml/gpu0/power_limit_mw", b"250000")
    pusher = OtlpPusher(emu, prometheus.otlp_metrics_url)
    try:
        for _ in range(3):
            for _ in range(5):
                t[0] += 1.0
                emu.tick()
            assert pusher.push()
    finally:
        pusher.stop()
    for node in ("xeon-0", "nvl-0"):
        truth = emu.truth(node)
        sel = f'k8s_node_name="{node}"'
        assert _value(prometheus, f"hw_host_power_watts{{{sel}}}") == pytest.approx(truth["host"]["powerW"], rel=0.03)
        assert _value(prometheus, f"hw_host_energy_joules_total{{{sel}}}") == pytest.approx(truth["host"]["energyJ"], rel=0.03)
        cpu = sum(p["powerW"] for p in truth["packages"])
        assert _value(prometheus, f'sum(hw_power_watts{{{sel},hw_type="cpu"}})') == pytest.approx(cpu, rel=0.03)
    nvl = emu.truth("nvl-0")
    gpu0 = _value(prometheus, 'hw_power_watts{k8s_node_name="nvl-0",hw_type="gpu",hw_id="gpu-0",host_name="nvl-0"}')
    assert gpu0 == pytest.approx(nvl["gpus"][0]["powerW"], rel=0.03) and gpu0 <= 250 * 1.01
    gpus = _value(prometheus, 'sum(hw_energy_joules_total{k8s_node_name="nvl-0",hw_type="gpu"})')
    assert gpus == pytest.approx(sum(g["energyJ"] for g in nvl["gpus"]), rel=0.03)


def test_every_node_is_its_own_service_instance() -> None:
    # Without promoted attributes, (job, instance) is all that tells nodes apart in Prometheus.
    from joulie_simulator.serving.otlp import metrics_data

    emu = Emulator([("a", builtin_profile("intel-xeon-2s-rapl")), ("b", builtin_profile("intel-xeon-2s-rapl"))], tick_s=0.5)
    data = metrics_data(emu, 0, 1)
    ids = [rm.resource.attributes.get("service.instance.id") for rm in data.resource_metrics]
    assert ids == ["a", "b"]


def test_each_node_is_stamped_with_the_time_of_the_tick_its_values_are_from() -> None:
    """A push at 13 s whose last tick was at 10 s says 10 s: the energy it sends is that tick's. Stamped
    with the push's own time, the late ticks of a busy emulator read as power that changes (the
    1000-Node files run's twins were up to 20 % low, by groups of Nodes in the order they were read)."""
    from opentelemetry.sdk.metrics.export import NumberDataPoint

    from joulie_simulator.serving.otlp import metrics_data

    now = [10.0]
    emu = Emulator([("a", builtin_profile("intel-xeon-2s-rapl"))], tick_s=1.0, clock=lambda: now[0])
    emu.set_load("a", Load(cpu_util=1.0))
    emu.tick()  # at 10 s
    now[0] = 13.0
    push_ns = 50_000_000_000
    data = metrics_data(emu, 1_000_000_000, push_ns)
    points = {m.name: m.data.data_points[0] for m in data.resource_metrics[0].scope_metrics[0].metrics}
    host = points["hw.host.energy"]
    assert isinstance(host, NumberDataPoint)
    assert host.time_unix_nano == push_ns - 3_000_000_000
    assert host.value == emu.truth("a")["host"]["energyJ"]
    assert {p.time_unix_nano for p in points.values()} == {push_ns - 3_000_000_000}
