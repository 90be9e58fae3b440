"""fakesmi answers as the real tools do, from an emulated node's GPU state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joulie_fakesmi.cli import main, run_tool
from joulie_fakesmi.node import NodeView
from joulie_simhw.gpustate import GpuDevice, GpuState, ToolsManifest, nvml_limit_file, write_atomic

NVML = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"


def _nvidia(tmp: Path, gpus: list[GpuDevice], persistence: bool = True, requires: tuple[str, ...] = ()) -> NodeView:
    state, sys_root, host = tmp / "state", tmp / "sys", tmp / "host"
    for p in (state, sys_root, host):
        p.mkdir(parents=True, exist_ok=True)
    write_atomic(state / "gpus.json", GpuState("nvidia", "590.48.01", persistence, tuple(gpus)).to_json())
    write_atomic(state / "tools.json", ToolsManifest({"nvidia-smi": "default"}, {"nvidia-smi": requires}).to_json())
    for g in gpus:
        (state / nvml_limit_file(g.index)).parent.mkdir(parents=True, exist_ok=True)
        (state / nvml_limit_file(g.index)).write_text(f"{round(g.limit_w * 1000)}\n")
    return NodeView(state, sys_root, host)


def t4(index: int = 0) -> GpuDevice:
    return GpuDevice(
        index=index, name="Tesla T4", uuid=f"GPU-0000000{index}-aaaa-bbbb-cccc-dddddddddddd", pci_bus_id=f"00000000:{0x10 + index:02X}:00.0",
        min_limit_w=60, max_limit_w=70, default_limit_w=70, limit_w=70, enforced_limit_w=70, draw_w=9.97, util_pct=0, energy_mj=0,
    )


QUERY = ["--query-gpu=index,power.min_limit,power.max_limit,power.limit,power.draw,name", "--format=csv,noheader,nounits"]


def test_the_agent_inventory_query_is_byte_compatible_with_a_real_t4(tmp_path: Path) -> None:
    r = run_tool("nvidia-smi", QUERY, _nvidia(tmp_path, [t4()]))
    assert (r.code, r.stdout, r.stderr) == (0, "0, 60.00, 70.00, 70.00, 9.97, Tesla T4\n", "")


def test_a_query_with_header_and_units(tmp_path: Path) -> None:
    r = run_tool("nvidia-smi", ["--query-gpu=index,power.draw,utilization.gpu", "--format=csv"], _nvidia(tmp_path, [t4()]))
    assert r.stdout == "index, power.draw [W], utilization.gpu [%]\n0, 9.97 W, 0 %\n"


def test_list_gpus(tmp_path: Path) -> None:
    r = run_tool("nvidia-smi", ["-L"], _nvidia(tmp_path, [t4(0), t4(1)]))
    assert r.stdout == (
        "GPU 0: Tesla T4 (UUID: GPU-00000000-aaaa-bbbb-cccc-dddddddddddd)\n"
        "GPU 1: Tesla T4 (UUID: GPU-00000001-aaaa-bbbb-cccc-dddddddddddd)\n"
    )


def test_setting_a_power_limit_writes_the_node_state_and_reports_it(tmp_path: Path) -> None:
    node = _nvidia(tmp_path, [t4(0), t4(1)])
    r = run_tool("nvidia-smi", ["-i", "1", "-pl", "65"], node)
    assert (r.code, r.stdout) == (0, "Power limit for GPU 00000000:11:00.0 was set to 65.00 W from 70.00 W.\nAll done.\n")
    assert (Path(node.state_root) / nvml_limit_file(1)).read_text() == "65000\n"
    assert (Path(node.state_root) / nvml_limit_file(0)).read_text() == "70000\n"
    after = run_tool("nvidia-smi", ["-i", "1", *QUERY], node)
    assert after.stdout == "1, 60.00, 70.00, 65.00, 9.97, Tesla T4\n"


def test_persistence_mode_off_warns_after_a_limit_change(tmp_path: Path) -> None:
    r = run_tool("nvidia-smi", ["-i", "0", "-pl", "60"], _nvidia(tmp_path, [t4()], persistence=False))
    assert "Warning: persistence mode is disabled on device 00000000:10:00.0." in r.stdout and r.stdout.endswith("All done.\n")


@pytest.mark.parametrize(
    ("args", "code", "stdout", "stderr"),
    [
        (["-i", "0", "-pl", "80"], 2,
         "Provided power limit 80.00 W is not a valid power limit which should be between 60.00 W and 70.00 W for GPU 00000000:10:00.0\n"
         "Terminating early due to previous errors.\n", ""),
        (["-i", "7", "-L"], 6, "No devices were found\n", ""),
        (["--query-gpu=index,clocks.foo", "--format=csv"], 2, 'Field "clocks.foo" is not a valid field to query.\n\n', ""),
        (["--query-gpu=index"], 2, "", "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
        (["--bogus"], 2, "", "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
    ],
)
def test_nvidia_smi_errors_have_the_real_messages_and_exit_codes(tmp_path: Path, args: list[str], code: int, stdout: str, stderr: str) -> None:
    r = run_tool("nvidia-smi", args, _nvidia(tmp_path, [t4()]))
    assert (r.code, r.stdout, r.stderr) == (code, stdout, stderr)


def test_an_unreadable_limit_token_is_printed_verbatim_and_limits_are_unsupported(tmp_path: Path) -> None:
    g = GpuDevice(**{**t4().__dict__, "field_tokens": {"power.min_limit": "[N/A]", "power.max_limit": "[N/A]"}})
    node = _nvidia(tmp_path, [g])
    assert run_tool("nvidia-smi", QUERY, node).stdout == "0, [N/A], [N/A], 70.00, 9.97, Tesla T4\n"
    r = run_tool("nvidia-smi", ["-pl", "65"], node)
    assert (r.code, r.stdout) == (3, "Changing power management limit is not supported for GPU: 00000000:10:00.0.\n")


def test_without_driver_state_nvidia_smi_cannot_talk_to_the_driver(tmp_path: Path) -> None:
    node = _nvidia(tmp_path, [t4()])
    (Path(node.state_root) / "gpus.json").unlink()
    r = run_tool("nvidia-smi", ["-L"], node)
    assert r.code == 9 and r.stdout.startswith("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")


def test_requirements_decide_whether_the_tool_runs(tmp_path: Path) -> None:
    node = _nvidia(tmp_path, [t4()], requires=("/lib64/ld-linux-x86-64.so.2", NVML))
    r = run_tool("nvidia-smi", ["-L"], node)
    assert (r.code, r.stderr) == (127, "nvidia-smi: cannot execute: required file not found\n")
    (Path(node.host_root) / "lib64").mkdir()
    (Path(node.host_root) / "lib64/ld-linux-x86-64.so.2").write_bytes(b"")
    r = run_tool("nvidia-smi", ["-L"], node)
    assert r.code == 12 and "couldn't find libnvidia-ml.so" in r.stdout
    lib = Path(node.host_root) / NVML.lstrip("/")
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    assert run_tool("nvidia-smi", ["-L"], node).code == 0


def test_a_tool_the_node_lacks_is_not_found(tmp_path: Path) -> None:
    r = run_tool("rocm-smi", ["--showproductname"], _nvidia(tmp_path, [t4()]))
    assert (r.code, r.stderr) == (127, "fakesmi: rocm-smi is not installed on this emulated node\n")


def _amd(tmp: Path, variant: str, amd_smi: str = "7.2") -> NodeView:
    state, sys_root = tmp / "state", tmp / "sys"
    gpus = []
    for i in range(2):
        hw = f"devices/pci0000:{0x10 + i:02x}/0000:{0x10 + i:02x}:00.0/hwmon/hwmon{1 + i}"
        (sys_root / hw).mkdir(parents=True)
        (sys_root / hw / "power1_cap").write_text("750000000\n")
        (sys_root / hw / "power1_input").write_text("120000000\n")
        gpus.append(GpuDevice(
            index=i, name="AMD Instinct MI300X", uuid="", pci_bus_id=f"0000:{0x10 + i:02x}:00.0", min_limit_w=0, max_limit_w=750,
            default_limit_w=750, limit_w=750, enforced_limit_w=750, draw_w=120, util_pct=0, energy_mj=0, hwmon=hw,
            vbios_version="113-X0000000-102", gfx_version="gfx942",
        ))
    write_atomic(state / "gpus.json", GpuState("amd", "", True, tuple(gpus)).to_json())
    write_atomic(state / "tools.json", ToolsManifest({"rocm-smi": variant, "amd-smi": amd_smi}).to_json())
    return NodeView(state, sys_root, tmp)


def test_current_rocm_smi_refuses_showpowercap_like_argparse(tmp_path: Path) -> None:
    r = run_tool("rocm-smi", ["--showpowercap", "--showproductname", "--json"], _amd(tmp_path, "current"))
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.startswith("usage: rocm-smi") and r.stderr.endswith("rocm-smi: error: unrecognized arguments: --showpowercap\n")


def test_legacy_rocm_smi_inventory_json_is_what_the_agent_parses(tmp_path: Path) -> None:
    r = run_tool("rocm-smi", ["--showpowercap", "--showproductname", "--json"], _amd(tmp_path, "legacy-agent-contract"))
    data = json.loads(r.stdout)
    assert sorted(data) == ["card0", "card1"]
    card = data["card0"]
    assert card["Card Series"] == "AMD Instinct MI300X" and card["Card SKU"] == "X0000000"
    assert (card["Max Graphics Package Power (W)"], card["Min Graphics Package Power (W)"], card["Current Power Cap (W)"]) == ("750.0", "0.0", "750.0")
    assert card["Average Graphics Package Power (W)"] == "120.0"


def test_rocm_smi_text_output_has_the_spacer_lines(tmp_path: Path) -> None:
    r = run_tool("rocm-smi", ["--showproductname", "-d", "1"], _amd(tmp_path, "current"))
    lines = r.stdout.splitlines()
    assert lines[2] == "============================ ROCm System Management Interface ============================"
    assert all(len(line) == 90 for line in lines if line.startswith("="))
    assert "GPU[1]\t\t: Card Series: AMD Instinct MI300X" in lines
    assert lines[-1] == "================================== End of ROCm SMI Log ==================================="[:90]


def test_rocm_smi_sets_the_overdrive_cap_through_hwmon(tmp_path: Path) -> None:
    node = _amd(tmp_path, "current")
    r = run_tool("rocm-smi", ["-d", "0", "--setpoweroverdrive", "500", "--autorespond", "yes"], node)
    assert r.code == 0 and "GPU[0]\t\t: Successfully set power to: 500W" in r.stdout
    assert node.read_sys("devices/pci0000:10/0000:10:00.0/hwmon/hwmon1/power1_cap") == "500000000"
    assert node.read_sys("devices/pci0000:11/0000:11:00.0/hwmon/hwmon2/power1_cap") == "750000000"


HEADER = "============================ ROCm System Management Interface ============================"
FOOTER = "================================== End of ROCm SMI Log ==================================="
CLOSE = "=" * 90


def test_rocm_smi_resetpoweroverdrive_is_byte_compatible_with_rocm_smi_py(tmp_path: Path) -> None:
    node = _amd(tmp_path, "current")
    cap = "devices/pci0000:10/0000:10:00.0/hwmon/hwmon1/power1_cap"
    node.write_sys(cap, "500000000\n")
    r = run_tool("rocm-smi", ["-d", "0", "--resetpoweroverdrive"], node)
    assert (r.code, r.stderr) == (0, "")
    assert r.stdout == (
        "\n\n" + HEADER + "\n"
        "=============================== Reset GPU Power OverDrive ================================\n"
        "GPU[0]\t\t: Successfully reset Power OverDrive to: 750W\n" + CLOSE + "\n" + FOOTER + "\n"
    )
    assert node.read_sys(cap) == "750000000"
    # Already at the default: rocm_smi.py says so (a float), then resets all the same.
    again = run_tool("rocm-smi", ["-d", "0", "--resetpoweroverdrive"], node)
    assert again.stdout.splitlines()[4:6] == ["GPU[0]\t\t: Max power was already at: 750.0W", "GPU[0]\t\t: Successfully reset Power OverDrive to: 750W"]


def test_rocm_smi_setpoweroverdrive_is_byte_compatible_with_rocm_smi_py(tmp_path: Path) -> None:
    r = run_tool("rocm-smi", ["-d", "1", "--setpoweroverdrive", "500", "--autorespond", "y"], _amd(tmp_path, "current"))
    assert (r.code, r.stderr) == (0, "")
    assert r.stdout == (
        "\n\n" + HEADER + "\n"
        "================================ Set GPU Power OverDrive =================================\n"
        "GPU[1]\t\t: Successfully set power to: 500W\n" + CLOSE + "\n" + FOOTER + "\n"
    )


def test_rocm_smi_overdrive_refusals_log_on_stderr_and_exit_zero(tmp_path: Path) -> None:
    node = _amd(tmp_path, "current")
    high = run_tool("rocm-smi", ["-d", "0", "--setpoweroverdrive", "800"], node)
    assert high.code == 0 and high.stdout.splitlines()[3:5] == ["================================ Set GPU Power OverDrive =================================", CLOSE]
    assert high.stderr == "ERROR: GPU[0]\t: Unable to set Power OverDrive\nERROR: GPU[0]\t\t: Value cannot be greater than: 750W \n"
    # Not an integer: no section at all; --loglevel error keeps RETCODE, so the exit status is 1.
    bad = run_tool("rocm-smi", ["-d", "0", "--setpoweroverdrive", "500.5", "--loglevel", "error"], node)
    assert bad.code == 1 and bad.stdout == "\n\n" + HEADER + "\nUnable to set Power OverDrive\n" + FOOTER + "\n"
    assert bad.stderr.startswith("ERROR: 500.5 is not an integer\nTraceback (most recent call last):\n")
    # JSON: nothing to report for a set, said on stderr; no spacer lines.
    js = run_tool("rocm-smi", ["-d", "0", "--setpoweroverdrive", "400", "--json"], node)
    assert (js.code, js.stdout, js.stderr) == (0, "", "WARNING: No JSON data to report\n")
    assert node.read_sys("devices/pci0000:10/0000:10:00.0/hwmon/hwmon1/power1_cap") == "400000000"
    missing = run_tool("rocm-smi", ["-d", "7", "--resetpoweroverdrive"], node)
    assert (missing.code, missing.stdout, missing.stderr) == (0, "", "WARNING: No such device card7\n")


def test_rocm_smi_closes_each_section_with_a_spacer(tmp_path: Path) -> None:
    r = run_tool("rocm-smi", ["-M", "-P"], _amd(tmp_path, "current"))
    assert r.stdout.splitlines()[2:] == [
        HEADER,
        "=" * 39 + " Power Cap =" + "=" * 39,
        "GPU[0]\t\t: Max Graphics Package Power (W): 750.0",
        "GPU[1]\t\t: Max Graphics Package Power (W): 750.0",
        CLOSE,
        "=" * 35 + " Power Consumption =" + "=" * 35,
        "GPU[0]\t\t: Current Socket Graphics Package Power (W): 120.0",
        "GPU[1]\t\t: Current Socket Graphics Package Power (W): 120.0",
        CLOSE,
        FOOTER,
    ]


def test_rocm_smi_without_amdgpu_logs_and_exits_zero(tmp_path: Path) -> None:
    node = _amd(tmp_path, "current")
    (Path(node.state_root) / "gpus.json").unlink()
    r = run_tool("rocm-smi", ["--showproductname"], node)
    assert (r.code, r.stderr) == (0, "ERROR:root:Driver not initialized (amdgpu not found in modules)\n")


def test_amd_smi_limits_and_power_as_json(tmp_path: Path) -> None:
    node = _amd(tmp_path, "current")
    limits = json.loads(run_tool("amd-smi", ["static", "--limit", "--json"], node).stdout)["gpu_data"]
    assert limits[0]["limit"]["ppt0"]["socket_power_limit"] == {"value": 750, "unit": "W"}
    power = json.loads(run_tool("amd-smi", ["metric", "--power", "--json", "-g", "1"], node).stdout)["gpu_data"]
    assert [p["gpu"] for p in power] == [1] and power[0]["power"]["socket_power"] == {"value": 120, "unit": "W"}
    r = run_tool("amd-smi", ["set", "-g", "0", "-o", "ppt0", "600"], node)
    assert r.code == 0 and "Successfully set power cap to 600 W" in r.stdout
    assert node.read_sys("devices/pci0000:10/0000:10:00.0/hwmon/hwmon1/power1_cap") == "600000000"
    bad = run_tool("amd-smi", ["frobnicate"], node)
    assert bad.code == 1 and "Error code: -10" in bad.stdout


def test_the_tool_is_chosen_by_the_name_it_is_called_by(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    node = _nvidia(tmp_path, [t4()])
    monkeypatch.setenv("HWEMU_STATE_ROOT", str(node.state_root))
    monkeypatch.setenv("HWEMU_SYS_ROOT", str(node.sys_root))
    assert main(QUERY, prog="/emu/bin/nvidia-smi") == 0
    assert capsys.readouterr().out == "0, 60.00, 70.00, 70.00, 9.97, Tesla T4\n"
    assert main(["nvidia-smi", *QUERY], prog="fakesmi") == 0
    assert capsys.readouterr().out == "0, 60.00, 70.00, 70.00, 9.97, Tesla T4\n"
    assert main(["cuda-smi"], prog="fakesmi") == 2
    assert capsys.readouterr().err == "usage: fakesmi nvidia-smi|rocm-smi|amd-smi|dcgmi [ARG ...]\n"


def test_an_injected_gpu_tool_failure_makes_the_tools_fail(tmp_path: Path) -> None:
    from joulie_simhw.gpustate import faults_json

    node = _nvidia(tmp_path, [t4()])
    (Path(node.state_root) / "faults.json").write_text(faults_json(("gpu_tool_failure",)))
    r = run_tool("nvidia-smi", QUERY, node)
    assert (r.code, r.stdout) == (255, "Unable to determine the device handle for GPU 00000000:10:00.0: Unknown Error\n")
    (Path(node.state_root) / "faults.json").write_text(faults_json(()))
    assert run_tool("nvidia-smi", QUERY, node).code == 0


def test_an_injected_gpu_tool_hang_blocks_until_the_fault_is_cleared(tmp_path: Path) -> None:
    from joulie_simhw.gpustate import faults_json

    node = _nvidia(tmp_path, [t4()])
    (Path(node.state_root) / "faults.json").write_text(faults_json(("gpu_tool_hang",)))
    slept: list[float] = []

    def sleep(s: float) -> None:  # the fake clock: the harness clears the fault after the third poll
        slept.append(s)
        if len(slept) == 3:
            (Path(node.state_root) / "faults.json").write_text(faults_json(()))

    r = run_tool("nvidia-smi", QUERY, node, sleep=sleep)
    assert r.code == 0 and len(slept) == 3, "answers as usual once the hang is cleared"
    (Path(node.state_root) / "faults.json").write_text(faults_json(("gpu_tool_hang",)))
    slept.clear()
    run_tool("nvidia-smi", QUERY, node, sleep=slept.append)
    assert sum(slept) >= 600.0, "a hang nobody clears still ends (HANG_MAX_S)"
