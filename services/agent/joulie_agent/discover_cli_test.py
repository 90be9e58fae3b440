"""`joulie-agent discover`: the JSON a user gets for a node root, and bad input handling."""

import json
from pathlib import Path

import pytest

from joulie_agent.cli import main
from joulie_agent.fixtures import testtrees


def discover(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["discover", "--no-nvml", *args]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert isinstance(doc, dict)
    return doc


def test_discover_prints_the_status_with_crd_field_names(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    testtrees.rapl_node(tmp_path)
    testtrees.cpufreq_node(tmp_path, policies=2, driver="intel_pstate")
    testtrees.write(tmp_path / "dev" / "nvidiactl", "")
    gpus = testtrees.fake_nvidia_smi(tmp_path, n=2)
    monkeypatch.setenv("PATH", str(gpus.bin_dir))
    labels = testtrees.write(tmp_path / "labels.json", json.dumps({"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel"}))
    alloc = testtrees.write(tmp_path / "alloc.json", json.dumps({"cpu": "7", "nvidia.com/gpu": "2"}))
    doc = discover(capsys, "--root", str(tmp_path), "--node-labels", str(labels), "--allocatable", str(alloc))
    assert "updatedAt" not in doc
    cpu, gpu = doc["cpu"], doc["gpu"]
    assert isinstance(cpu, dict) and isinstance(gpu, dict)
    assert cpu["capRange"] == {"type": "package", "minWattsPerSocket": 0.0, "maxWattsPerSocket": 165.0}
    assert (cpu["vendor"], cpu["sockets"], cpu["driverFamily"], cpu["model"]) == (
        "GenuineIntel", 2, "intel_pstate", "INTEL_XEON_PLATINUM_8260")
    assert cpu["landmarks"] == {"minFreqMHz": 1000.0, "maxBoostMHz": 3000.0}
    assert (gpu["vendor"], gpu["count"], gpu["model"], gpu["currentCapWatts"]) == ("nvidia", 2, "NVIDIA_H100_SXM", 700.0)
    assert doc["quality"] == {"overall": "exact", "warnings": []}


def test_garbage_and_missing_files_become_warnings_not_a_crash(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    testtrees.zone(tmp_path, "intel-rapl:0", "package-0")
    testtrees.write(tmp_path / "sys/class/powercap/intel-rapl:0/constraint_0_max_power_uw", "lots\n")
    testtrees.write(tmp_path / "sys/class/powercap/intel-rapl:1/name", "")
    doc = discover(capsys, "--root", str(tmp_path))
    warnings = doc["quality"]["warnings"]  # type: ignore[index]
    assert any("cpuinfo" in w for w in warnings)
    assert any("constraint_0_max_power_uw" in w and "lots" in w for w in warnings)
    assert any("intel-rapl:1/name" in w for w in warnings)
    assert doc["quality"]["overall"] == "unavailable"  # type: ignore[index]


def test_bad_labels_file_exits_2_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = testtrees.write(tmp_path / "labels.json", '{"a": {"nested": 1}}')
    assert main(["discover", "--root", str(tmp_path), "--node-labels", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "a: expected a string" in err


def test_node_object_json_is_accepted_for_labels_and_allocatable(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    testtrees.cpuinfo(tmp_path)
    node = testtrees.write(tmp_path / "node.json", json.dumps({
        "kind": "Node", "metadata": {"labels": {"feature.node.kubernetes.io/cpu-sockets": "4"}},
        "status": {"allocatable": {"amd.com/gpu": "4"}}}))
    doc = discover(capsys, "--root", str(tmp_path), "--node-labels", str(node), "--allocatable", str(node))
    assert doc["cpu"]["sockets"] == 4  # type: ignore[index]
    assert (doc["gpu"]["count"], doc["gpu"]["vendor"]) == (4, "amd")  # type: ignore[index]


def test_a_corpus_machine_directory_discovers_to_its_golden(capsys: pytest.CaptureFixture[str]) -> None:
    machine = Path("services/agent/testdata/hardware/nvidia-h100-sxm-8gpu")
    assert main(["discover", "--root", str(machine)]) == 0
    assert capsys.readouterr().out == (machine / "expected.json").read_text()


def test_a_node_objects_capacity_corrects_a_partial_cpuinfo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    testtrees.write(tmp_path / "proc/cpuinfo", "processor\t: 0\nmodel name\t: X\nphysical id\t: 0\n\n"
                                               "processor\t: 1\nmodel name\t: X\nphysical id\t: 0\n\n")
    node = testtrees.write(tmp_path / "node.json", json.dumps({
        "kind": "Node", "status": {"capacity": {"cpu": "48"}, "allocatable": {"cpu": "46"}}}))
    doc = discover(capsys, "--root", str(tmp_path), "--allocatable", str(node))
    assert (doc["cpu"]["totalCores"], doc["cpu"]["coresPerSocket"]) == (48, 48)  # type: ignore[index]
