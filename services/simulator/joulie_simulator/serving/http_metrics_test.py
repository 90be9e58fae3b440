"""/metrics: the hardware metrics in the Prometheus text format, for a scraping Prometheus."""

from __future__ import annotations

import re
import urllib.request

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.physics.model import Load
from joulie_simulator.serving.http_debug import DebugServer


def _sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        m = re.match(rf"^{name}\{{(.*)\}} (\S+)$", line)
        if m and all(f'{k}="{v}"' in m.group(1) for k, v in labels.items()):
            return float(m.group(2))
    raise AssertionError(f"no {name}{labels} in:\n{text[:2000]}")


def _loaded(cpu_util: float, *nodes: tuple[str, str]) -> Emulator:
    """An emulator whose node gpu-0 (if any) runs every GPU flat out, a few ticks in."""
    emu = Emulator([(name, builtin_profile(profile)) for name, profile in nodes], tick_s=0.5)
    emu.set_load("gpu-0", Load(cpu_util=cpu_util, gpu_util=(1.0,) * 8))
    for _ in range(4):
        emu.tick()
    return emu


def _get(emu: Emulator, path: str) -> str:
    server = DebugServer(emu)
    server.start()
    try:
        with urllib.request.urlopen(f"{server.url}{path}", timeout=5) as resp:
            assert resp.headers["Content-Type"].startswith("text/plain")
            return str(resp.read().decode())
    finally:
        server.stop()


def test_metrics_carry_the_otlp_names_and_labels_and_the_truth() -> None:
    emu = _loaded(0.5, ("cpu-0", "intel-xeon-2s-rapl"), ("gpu-0", "nvidia-h100-nvl-8gpu"))
    text = _get(emu, "/metrics")
    truth = emu.truth("gpu-0")
    assert _sample(text, "hw_host_energy_joules_total", k8s_node_name="gpu-0", host_name="gpu-0") == truth["host"]["energyJ"]
    assert _sample(text, "hw_host_power_watts", k8s_node_name="gpu-0") == truth["host"]["powerW"]
    assert _sample(text, "hw_power_watts", k8s_node_name="gpu-0", hw_type="gpu", hw_id="gpu-7") == truth["gpus"][7]["powerW"]
    assert _sample(text, "hw_energy_joules_total", k8s_node_name="cpu-0", hw_type="cpu", hw_id="package-1") > 0


def test_components_route_serves_no_whole_host_power() -> None:
    emu = _loaded(1.0, ("gpu-0", "nvidia-h100-nvl-8gpu"))
    text = _get(emu, "/metrics/components")
    assert "hw_host_" not in text
    truth = emu.truth("gpu-0")
    watts = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("hw_power_watts{"))
    # CPU packages, DRAM and the eight boards: the host without the rest of the platform.
    other = builtin_profile("nvidia-h100-nvl-8gpu").physics.platform_other_w
    assert watts == pytest.approx(truth["host"]["powerW"] - other, rel=1e-6)
    assert watts > 8 * 300
    assert _sample(text, "hw_power_watts", k8s_node_name="gpu-0", hw_type="gpu", hw_id="gpu-0") == truth["gpus"][0]["powerW"]


def test_a_client_that_went_away_leaves_no_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    server = DebugServer(Emulator([("n1", builtin_profile("intel-xeon-2s-rapl"))]))
    try:
        for err in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "Connection reset by peer"),
                    ValueError("a real bug")):
            try:
                raise err
            except Exception:
                server.httpd.handle_error(None, ("127.0.0.1", 40000))
    finally:
        server.httpd.server_close()
    logged = capsys.readouterr().err
    assert "ValueError: a real bug" in logged
    assert "BrokenPipeError" not in logged and "ConnectionResetError" not in logged
