"""Sample objects round-trip through the generated types, and bad objects are refused by field."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from joulie_api.kube import NODE_HARDWARE, NODE_TWIN, ObjectDecodeError, Resource, decode

SAMPLES = sorted(Path("libs/api/samples").glob("*.yaml"))


def _resource(obj: dict[str, Any]) -> Resource[Any]:
    resources: dict[str, Resource[Any]] = {"NodeHardware": NODE_HARDWARE, "NodeTwin": NODE_TWIN}
    return resources[obj["kind"]]


def test_there_are_samples_of_both_kinds() -> None:
    kinds = {yaml.safe_load(p.read_text())["kind"] for p in SAMPLES}
    assert kinds == {"NodeHardware", "NodeTwin"}


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_round_trips_unchanged(path: Path) -> None:
    original = yaml.safe_load(path.read_text())
    model = decode(_resource(original), original)
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    # The API server returns whole numbers as int; our dump gives floats for `number` fields.
    # Equal as numbers is what matters, so compare through JSON-number semantics.
    assert dumped == original


def test_whole_numbers_from_the_api_server_are_accepted_as_floats() -> None:
    obj = yaml.safe_load((Path("libs/api/samples") / "nodetwin-eco.yaml").read_text())
    obj["status"]["powerMeasurement"]["measuredNodePowerW"] = 2150  # int, as the server sends it
    twin = decode(NODE_TWIN, obj)
    assert twin.status is not None and twin.status.power_measurement is not None
    assert twin.status.power_measurement.measured_node_power_w == 2150.0


def test_an_unknown_profile_is_refused_naming_the_field() -> None:
    obj = yaml.safe_load((Path("libs/api/samples") / "nodetwin-eco.yaml").read_text())
    obj["spec"]["profile"] = "turbo"
    with pytest.raises(ObjectDecodeError, match=r"NodeTwin/gpu-node-0 .*spec\.profile.*'turbo'"):
        decode(NODE_TWIN, obj)


def test_a_cap_above_100_percent_is_refused() -> None:
    obj = yaml.safe_load((Path("libs/api/samples") / "nodetwin-eco.yaml").read_text())
    obj["spec"]["cpu"]["packagePowerCapPctOfMax"] = 120
    with pytest.raises(ObjectDecodeError, match=r"spec\.cpu\.packagePowerCapPctOfMax"):
        decode(NODE_TWIN, obj)


@pytest.mark.parametrize(("section", "field", "value"), [
    ("cpu", "packagePowerCapPctOfMax", 0.001), ("cpu", "packagePowerCapPctOfMax", 9.9),
    ("cpu", "packagePowerCapWatts", 2.5),
])
def test_a_cpu_cap_below_what_hardware_accepts_is_refused_naming_the_field(section: str, field: str,
                                                                         value: float) -> None:
    # Issue 23 (defect 6a): 0.001 % was accepted and the agent applied a 0.0 W package cap.
    obj = yaml.safe_load((Path("libs/api/samples") / "nodetwin-eco.yaml").read_text())
    obj["spec"][section] = {field: value}
    with pytest.raises(ObjectDecodeError, match=rf"spec\.{section}\.{field}"):
        decode(NODE_TWIN, obj)


@pytest.mark.parametrize(("field", "value"), [("capPctOfMax", 0.001), ("capWattsPerGpu", 1)])
def test_a_gpu_cap_below_what_hardware_accepts_is_refused_naming_the_field(field: str, value: float) -> None:
    obj = yaml.safe_load((Path("libs/api/samples") / "nodetwin-eco.yaml").read_text())
    obj["spec"]["gpu"] = {"powerCap": {"scope": "perGpu", field: value}}
    with pytest.raises(ObjectDecodeError, match=rf"spec\.gpu\.powerCap\.{field}"):
        decode(NODE_TWIN, obj)


def test_the_lowest_accepted_caps_decode() -> None:
    obj = yaml.safe_load((Path("libs/api/samples") / "nodetwin-eco.yaml").read_text())
    obj["spec"]["cpu"] = {"packagePowerCapPctOfMax": 10}
    obj["spec"]["gpu"] = {"powerCap": {"scope": "perGpu", "capWattsPerGpu": 10}}
    twin = decode(NODE_TWIN, obj)
    assert twin.spec.cpu is not None and twin.spec.cpu.package_power_cap_pct_of_max == 10
