"""The facility in a running simulator, as the simulated cluster's user meets it: the truth at
``/debug/emulate``, the ambient changed through the control API (HTTP and gRPC), the signals in the
OTLP export and ``/metrics`` under the names the controller's facility poller reads."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from joulie.sim.v1 import emulator_pb2 as _pb2
from joulie.sim.v1 import emulator_pb2_grpc as _pb2_grpc
from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.facility.live import FacilityLive
from joulie_simulator.physics.model import Load
from joulie_simulator.serving.grpc_api import serve
from joulie_simulator.serving.http_debug import DebugServer, metrics_text
from joulie_simulator.serving.otlp import metrics_data

# The SDK's data points are a union of kinds; these gauges' points are NumberDataPoints.
Point = Any

pb: Any = _pb2
pb_grpc: Any = _pb2_grpc

LABELS = {
    "sxm-0": {"joulie.io/rack": "rack-a", "joulie.io/cooling-zone": "hall-1"},
    "sxm-1": {"joulie.io/rack": "rack-a", "joulie.io/cooling-zone": "hall-1"},
    "xeon-0": {"joulie.io/rack": "rack-b", "joulie.io/cooling-zone": "hall-1"},
}


@pytest.fixture
def facility() -> FacilityLive:
    sxm, xeon = builtin_profile("nvidia-h100-sxm-4gpu"), builtin_profile("intel-xeon-6530-2s-rapl")
    emu = Emulator([("sxm-0", sxm), ("sxm-1", sxm), ("xeon-0", xeon)], tick_s=1.0, clock=lambda: 0.0)
    emu.frozen = True
    for n in ("sxm-0", "sxm-1"):
        emu.set_load(n, Load(cpu_util=0.5, gpu_util=(1.0,) * 4))
    emu.step(5)
    return FacilityLive(emu, LABELS)


def test_the_truth_has_ambient_it_cooling_pue_racks_and_hot_racks_breathe_warmer_air(facility: FacilityLive) -> None:
    doc = facility.document()
    hosts = sum(facility.emu.truth(n)["host"]["powerW"] for n in facility.emu.nodes)
    assert doc["itW"] == pytest.approx(hosts) and doc["coolingW"] > 0  # type: ignore[operator]
    assert doc["pue"] == pytest.approx((doc["itW"] + doc["coolingW"]) / doc["itW"])  # type: ignore[operator]
    racks: Any = doc["racks"]
    assert racks["rack-a"]["itW"] > 5000 and racks["rack-a"]["inletC"] > racks["rack-b"]["inletC"] > doc["ambientC"]
    assert 0 < racks["rack-a"]["psuLoad"] < 1
    assert doc["nodeInletC"] == {"sxm-0": racks["rack-a"]["inletC"], "sxm-1": racks["rack-a"]["inletC"],
                                 "xeon-0": racks["rack-b"]["inletC"]}
    assert doc["control"] == {"offsetC": 0.0, "fixedC": None}


def test_raising_the_ambient_raises_cooling_and_pue_and_clear_goes_back(facility: FacilityLive) -> None:
    before = facility.reading()
    facility.set_ambient(offset_c=10.0)
    hot = facility.reading()
    assert hot.ambient_c == pytest.approx(before.ambient_c + 10.0)
    assert hot.cooling_w > before.cooling_w and hot.pue is not None and before.pue is not None and hot.pue > before.pue
    assert hot.racks["rack-a"].inlet_c == pytest.approx(before.racks["rack-a"].inlet_c + 10.0)
    facility.set_ambient(fixed_c=35.0)
    assert facility.reading().ambient_c == 35.0
    facility.set_ambient(clear=True)
    assert facility.reading().ambient_c == pytest.approx(before.ambient_c)
    with pytest.raises(ValueError, match=r"fixed_c: 500.0 is not a temperature in -50..70 degC"):
        facility.set_ambient(fixed_c=500.0)


def test_debug_emulate_shows_the_facility_and_post_changes_the_ambient(facility: FacilityLive) -> None:
    server = DebugServer(facility.emu, facility=facility)
    server.start()

    def post(body: bytes) -> tuple[int, dict[str, Any]]:
        req = urllib.request.Request(f"{server.url}/debug/facility/ambient", data=body, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    try:
        doc = json.load(urllib.request.urlopen(f"{server.url}/debug/emulate", timeout=5))
        base = doc["facility"]["ambientC"]
        assert set(doc["facility"]) >= {"ambientC", "itW", "coolingW", "pue", "racks", "zones", "nodeInletC", "control"}
        code, answer = post(b'{"offsetC": 6}')
        assert code == 200 and answer["ambientC"] == pytest.approx(base + 6)
        after = json.load(urllib.request.urlopen(f"{server.url}/debug/emulate", timeout=5))["facility"]
        assert after["ambientC"] == pytest.approx(base + 6) and after["pue"] > doc["facility"]["pue"]
        assert post(b'{"fixedC": "hot"}') == (400, {"error": "fixedC: 'hot' is not a number (degC)"})
        assert post(b'{"offsetC": 1e9}')[1] == {"error": "offsetC: 1000000000.0 is not a temperature in -50..70 degC"}
        assert post(b'{"offsetC": 1, "clear": true}')[0] == 400
        assert post(b"nope")[0] == 400
        assert post(b'{"clear": true}')[1]["control"] == {"offsetC": 0.0, "fixedC": None}
    finally:
        server.stop()


@pytest.fixture
def stub(facility: FacilityLive) -> Iterator[Any]:
    server, port = serve(facility.emu, facility=facility)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield pb_grpc.EmulatorServiceStub(channel)
    finally:
        channel.close()
        server.stop(0)


def test_grpc_set_ambient_pins_shifts_and_refuses_a_bad_value(stub: Any, facility: FacilityLive) -> None:
    base = stub.GetFacility(pb.GetFacilityRequest())
    pinned = stub.SetAmbient(pb.SetAmbientRequest(fixed_c=38.0))
    assert pinned.ambient_c == 38.0 and pinned.HasField("fixed_c") and pinned.pue > base.pue
    assert pinned.cooling_power_w > base.cooling_power_w
    shifted = stub.SetAmbient(pb.SetAmbientRequest(offset_c=-4.0))
    assert shifted.ambient_c == pytest.approx(base.ambient_c - 4.0) and not shifted.HasField("fixed_c")
    with pytest.raises(grpc.RpcError) as bad:
        stub.SetAmbient(pb.SetAmbientRequest(fixed_c=99.0))
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "fixed_c" in (bad.value.details() or "")
    with pytest.raises(grpc.RpcError) as empty:
        stub.SetAmbient(pb.SetAmbientRequest())
    assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert stub.SetAmbient(pb.SetAmbientRequest(clear=True)).ambient_c == pytest.approx(base.ambient_c)


def test_grpc_without_a_facility_model_says_so() -> None:
    emu = Emulator([("a", builtin_profile("vm-no-powercap"))])
    server, port = serve(emu)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        with pytest.raises(grpc.RpcError) as e:
            pb_grpc.EmulatorServiceStub(channel).GetFacility(pb.GetFacilityRequest())
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        channel.close()
        server.stop(0)


def _attr(p: Point, key: str) -> str:
    return str(p.attributes[key])


def _value(p: Point) -> float:
    return float(p.value)


def test_the_otlp_export_carries_the_controllers_default_facility_names(facility: FacilityLive) -> None:
    data = metrics_data(facility.emu, 0, 1, facility)
    by_instance = {rm.resource.attributes.get("service.instance.id"): rm for rm in data.resource_metrics}
    fac = {m.name: m for m in by_instance["facility"].scope_metrics[0].metrics}
    # The controller's FACILITY_*_METRIC defaults (services/controller-manager settings.py).
    assert {"joulie.facility.ambient.temperature", "joulie.facility.it.power", "joulie.facility.cooling.power",
            "joulie.cooling_zone.ambient.temperature", "joulie.rack.power"} <= set(fac)
    assert {"joulie.facility.pue", "joulie.facility.power", "joulie.rack.psu.load", "joulie.rack.inlet.temperature"} <= set(fac)
    assert fac["joulie.facility.ambient.temperature"].unit == "Cel" and fac["joulie.rack.power"].unit == "W"
    racks = {_attr(p, "joulie.rack"): _value(p) for p in fac["joulie.rack.power"].data.data_points}
    truth = facility.reading()
    assert racks == {r: x.it_w for r, x in truth.racks.items()}
    zones = {_attr(p, "joulie.cooling_zone") for p in fac["joulie.cooling_zone.ambient.temperature"].data.data_points}
    assert zones == {"hall-1"}
    node = {m.name: m for m in by_instance["sxm-0"].scope_metrics[0].metrics}
    assert _value(node["hw.host.ambient_temperature"].data.data_points[0]) == truth.node_inlet_c["sxm-0"]
    # Without a facility, the export is the hardware only, as before.
    assert "facility" not in {rm.resource.attributes.get("service.instance.id") for rm in metrics_data(facility.emu, 0, 1).resource_metrics}


def test_metrics_text_serves_the_facility_as_prometheus_names_it(facility: FacilityLive) -> None:
    text = metrics_text(facility.emu, facility=facility).decode()
    for name in ("joulie_facility_ambient_temperature_celsius ", "joulie_facility_it_power_watts ",
                 "joulie_facility_cooling_power_watts ", "joulie_facility_pue_ratio ",
                 'joulie_rack_power_watts{joulie_cooling_zone="hall-1",joulie_rack="rack-a"}',
                 'joulie_cooling_zone_ambient_temperature_celsius{joulie_cooling_zone="hall-1"}',
                 'hw_host_ambient_temperature_celsius{host_name="sxm-0",k8s_node_name="sxm-0"}'):
        assert name in text, name
    assert "joulie_facility" not in metrics_text(facility.emu, host=False, facility=facility).decode()
