"""The command line as an operator uses it: bad specs are refused naming the file and field;
Node objects are printed; emulate runs a few ticks in files mode and leaves the trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joulie_simulator.cli import main


def test_an_unknown_profile_in_a_spec_is_refused_with_file_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("pools:\n  - {name: gpu, profile: cray-1, count: 2}\n")
    assert main(["nodes", "--spec", str(spec)]) == 2
    assert capsys.readouterr().err == f"joulie-simulator: {spec}: nodes[0].profile: no profile 'cray-1' (builtin or in --profiles-dir)\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes:\n  - {name: Bad_Name, profile: vm-no-powercap}\n", "nodes.0.name: String should match pattern"),
        ("pools:\n  - {name: p, profile: vm-no-powercap, count: 0}\n", "pools.0.count: Input should be greater than 0"),
        ("nodes:\n  - {name: a, profile: vm-no-powercap, gpus: 2}\n", "nodes.0.gpus: Extra inputs are not permitted"),
        ("nodes:\n  - {name: a, profile: vm-no-powercap}\n  - {name: a, profile: vm-no-powercap}\n", "nodes: 'a' is named twice"),
    ],
)
def test_a_bad_node_spec_is_refused_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    assert main(["nodes", "--spec", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"joulie-simulator: {spec}: ") and message in err


def test_the_simcluster_cluster_spec_is_accepted_with_its_name_and_harness_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: smoke\n"
        "pools:\n  - {name: h100-nvl, profile: nvidia-h100-nvl-8gpu, count: 1, labels: {joulie.io/managed: 'true'}}\n"
        "harness:\n  pools:\n    h100-nvl: {toolDelivery: mounted}\n"
    )
    assert main(["nodes", "--spec", str(spec)]) == 0
    assert [json.loads(line)["metadata"]["name"] for line in capsys.readouterr().out.splitlines()] == ["h100-nvl-0"]
    spec.write_text("name: smoke\nfacility: {}\npools: []\n")
    assert main(["nodes", "--spec", str(spec)]) == 2
    assert "facility: Extra inputs are not permitted" in capsys.readouterr().err


def test_nodes_prints_one_node_object_per_pool_member(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nodes", "--nodes", "mi*2=amd-instinct-mi300x-8gpu,vm-0=vm-no-powercap"]) == 0
    nodes = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [n["metadata"]["name"] for n in nodes] == ["vm-0", "mi-0", "mi-1"]
    assert nodes[1]["status"]["capacity"]["amd.com/gpu"] == "8"


def test_emulate_in_files_mode_renders_trees_and_steps_them(tmp_path: Path) -> None:
    rc = main(
        ["emulate", "--nodes", "x-0=intel-xeon-2s-rapl", "--root", str(tmp_path), "--mode", "files", "--tick", "0.01",
         "--ticks", "3", "--http", "", "--grpc", ""]
    )
    assert rc == 0
    ledger = json.loads((tmp_path / "x-0/state/emulator.json").read_text())
    assert ledger["tick"] == 3
    assert (tmp_path / "x-0/sys/class/powercap/intel-rapl:0/name").read_text() == "package-0\n"


def test_emulate_serves_pod_resources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # An NVIDIA node gets its kubelet socket under <root>/kubelet while it runs; a CPU node none; '' turns it off.
    args = ["emulate", "--nodes", "g-0=nvidia-h100-sxm-4gpu,c-0=intel-xeon-2s-rapl", "--root", str(tmp_path), "--mode",
            "files", "--tick", "0.01", "--ticks", "3", "--http", "", "--grpc", ""]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"pod-resources API for 1 NVIDIA nodes under {tmp_path / 'kubelet'}" in out
    assert not (tmp_path / "kubelet/g-0/pod-resources/kubelet.sock").exists()  # removed at exit
    assert main([*args, "--pod-resources-root", ""]) == 0
    assert "pod-resources API" not in capsys.readouterr().out
    # The boards' activity reached gpus.json (fakesmi's dcgmi reads it): an idle board reads 0, not N/A.
    gpus = json.loads((tmp_path / "g-0/state/gpus.json").read_text())["gpus"]
    assert [g["dram_active"] for g in gpus] == [0.0] * 4 and gpus[0]["sm_clock_mhz"] > 0


def test_profiles_lists_the_builtin_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles"]) == 0
    assert "intel-xeon-2s-rapl" in capsys.readouterr().out.split()


def test_emulate_with_bmcs_publishes_each_nodes_bmc_address(tmp_path: Path) -> None:
    creds = tmp_path / "bmc.yaml"
    creds.write_text("username: admin\npassword: emulated-pw\n")
    rc = main(
        ["emulate", "--nodes", "x*2=intel-xeon-2s-rapl", "--root", str(tmp_path / "root"), "--mode", "files", "--tick", "0.01",
         "--ticks", "2", "--http", "", "--grpc", "", "--bmc", "127.0.0.1", "--bmc-credentials", str(creds)]
    )
    assert rc == 0
    text = (tmp_path / "root/bmcs.json").read_text()
    doc = json.loads(text)
    assert [b["node"] for b in doc["bmcs"]] == ["x-0", "x-1"]
    assert all(b["address"].startswith("http://127.0.0.1:") and b["system"] == "/redfish/v1/Systems/1" for b in doc["bmcs"])
    assert "emulated-pw" not in text


@pytest.mark.parametrize(
    ("creds", "message"),
    [
        (None, "--bmc needs --bmc-credentials"),
        ("username: admin\n", "password: a non-empty string is required"),
        ("username: admin\npassword: p\nrole: x\n", "role: unknown key"),
    ],
)
def test_emulate_with_bmcs_refuses_missing_or_bad_credentials(tmp_path: Path, capsys: pytest.CaptureFixture[str], creds: str | None,
                                                              message: str) -> None:
    args = ["emulate", "--nodes", "x-0=vm-no-powercap", "--root", str(tmp_path), "--mode", "files", "--ticks", "1",
            "--http", "", "--grpc", "", "--bmc", "127.0.0.1"]
    if creds is not None:
        (tmp_path / "bmc.yaml").write_text(creds)
        args += ["--bmc-credentials", str(tmp_path / "bmc.yaml")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "p\n" not in err


def test_emulate_refuses_files_on_read_outside_files_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["emulate", "--nodes", "x-0=vm-no-powercap", "--root", str(tmp_path), "--mode", "fuse", "--files-on-read",
            "--ticks", "1", "--http", "", "--grpc", ""]
    assert main(args) == 2
    assert "--files-on-read goes with --mode files" in capsys.readouterr().err


def test_emulate_in_files_mode_on_read_says_where_its_counters_are_written(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["emulate", "--nodes", "x-0=intel-xeon-2s-rapl", "--root", str(tmp_path), "--mode", "files", "--files-on-read",
            "--ticks", "2", "--http", "", "--grpc", ""]
    assert main(args) == 0
    out = capsys.readouterr().out
    # Either the kernel took the counters or it said why not (tmpfs, an older kernel, no CAP_SYS_ADMIN).
    assert "4 counters written when read" in out or "counters written every tick: fanotify pre-content" in out
