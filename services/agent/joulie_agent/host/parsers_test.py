"""Tool and /proc parsers: the formats real nodes produce, including the awkward ones."""

import json
from pathlib import Path

from joulie_agent.discovery import cpufreq, gputools
from joulie_agent.discovery.cpuinfo import normalize_vendor, parse_cpuinfo
from joulie_agent.host.hostread import gpu_inventory
from joulie_agent.host.sysfswrite import read_int
from joulie_agent.host.toolrun import Runner, ToolResult


def test_cpuinfo_sockets_are_distinct_physical_ids() -> None:
    text = "".join(f"processor\t: {k}\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon X\nphysical id\t: {k % 2}\n\n"
                   for k in range(8))
    info = parse_cpuinfo(text)
    assert (info.logical_cpus, info.sockets, info.model_name, info.vendor_id) == (8, 2, "Xeon X", "GenuineIntel")


def block(k: int, pkg: int, *, siblings: int | None = None, cores: int | None = None) -> str:
    text = f"processor\t: {k}\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\nphysical id\t: {pkg}\n"
    text += f"siblings\t: {siblings}\n" if siblings is not None else ""
    text += f"cpu cores\t: {cores}\n" if cores is not None else ""
    return text + "\n"


def test_trimmed_cpuinfo_counts_the_host_from_siblings_per_physical_id() -> None:
    # A container sees 4 of 2 x 192 logical CPUs; each block still states its package's siblings.
    info = parse_cpuinfo("".join(block(k, k % 2, siblings=192, cores=96) for k in range(4)))
    assert (info.logical_cpus, info.sockets, info.host_logical_cpus) == (4, 2, 384)


def test_cpu_cores_per_physical_id_counts_when_siblings_is_missing() -> None:
    info = parse_cpuinfo("".join(block(k, 0, cores=8) for k in range(2)))
    assert (info.logical_cpus, info.host_logical_cpus) == (2, 8)


def test_cpuinfo_without_package_fields_has_no_host_count() -> None:
    text = "processor\t: 0\nmodel name\t: X\nsiblings\t: 64\n\n"  # siblings without physical id: no package
    assert parse_cpuinfo(text).host_logical_cpus is None


def test_arm64_cpuinfo_names_the_core_from_implementer_and_part() -> None:
    text = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n\nprocessor\t: 1\nCPU implementer\t: 0x41\n"
    info = parse_cpuinfo(text)
    assert info.model_name == "ARM Neoverse-N1"
    assert info.vendor_id == "ARM"
    assert info.sockets is None and info.logical_cpus == 2


def test_empty_cpuinfo_warns() -> None:
    info = parse_cpuinfo("garbage\n\x00\x01")
    assert info.logical_cpus == 0 and info.warnings


def test_vendor_spellings_of_nfd_and_cpuid_agree() -> None:
    assert normalize_vendor("Intel") == normalize_vendor("GENUINEINTEL") == "GenuineIntel"
    assert normalize_vendor("AMD") == "AuthenticAMD"
    assert normalize_vendor("HiSilicon") == "HiSilicon"


def test_nvidia_csv_with_na_limits_is_unknown_not_zero() -> None:
    inv = gputools.parse_nvidia_csv("0, [N/A], [N/A], 70.00, 9.97, Tesla T4\n1, 60.00, 70.00, 70.00, 9.00, Tesla T4\n"
                                    "bad line\n")
    assert inv.devices[0].min_w is None and inv.devices[0].max_w is None and inv.devices[0].current_cap_w == 70.0
    assert inv.devices[1].max_w == 70.0 and inv.devices[1].name == "Tesla T4"
    assert any("expected 6 fields" in w for w in inv.warnings)


def test_amdsmi_71_and_72_limit_formats() -> None:
    v71 = [{"gpu": 0, "limit": {"max_power": {"value": 750, "unit": "W"}, "min_power": {"value": 0, "unit": "W"},
                                "socket_power": {"value": 600, "unit": "W"}}}]
    v72 = {"gpu_data": [{"gpu": 1, "limit": {"ppt0": {"max_power_limit": {"value": 750, "unit": "W"},
                                                      "min_power_limit": "N/A",
                                                      "socket_power_limit": {"value": 500000, "unit": "mW"}}}}]}
    a = gputools.parse_amdsmi_limits(json.dumps(v71, indent=4))
    b = gputools.parse_amdsmi_limits("some log line\n" + json.dumps(v72))
    assert (a.devices[0].max_w, a.devices[0].current_cap_w, a.amdsmi_ppt) == (750.0, 600.0, False)
    assert (b.devices[0].index, b.devices[0].min_w, b.devices[0].current_cap_w, b.amdsmi_ppt) == (1, None, 500.0, True)
    assert gputools.parse_amdsmi_limits("not json").warnings


def test_rocmsmi_model_is_card_series_and_secondary_die_power_is_unknown() -> None:
    doc = {"card0": {"Card Series": "AMD Instinct MI300X", "Card SKU": "X0000000",
                     "Max Graphics Package Power (W)": "750.0", "Average Graphics Package Power (W)": "N/A (Secondary die)"},
           "system": {"Driver version": "6.8"}}
    inv = gputools.parse_rocmsmi(json.dumps(doc))
    assert len(inv.devices) == 1
    assert inv.devices[0].name == "AMD Instinct MI300X" and inv.devices[0].max_w == 750.0
    assert inv.devices[0].draw_w is None
    assert gputools.rocmsmi_rejected_flag("rocm-smi: error: unrecognized arguments: --showpowercap")


def test_set_commands_are_the_exact_argv() -> None:
    assert gputools.nvidia_set_argv([3], 249.6) == ["nvidia-smi", "-i", "3", "-pl", "250"]
    assert gputools.nvidia_set_argv([0, 1, 7], 250.4) == ["nvidia-smi", "-i", "0,1,7", "-pl", "250"]
    assert gputools.amdsmi_set_argv([0, 2], 600, ppt=True) == ["amd-smi", "set", "-g", "0", "2", "-o", "ppt0", "600"]
    assert gputools.rocmsmi_set_argv(1, 500) == ["rocm-smi", "-d", "1", "--setpoweroverdrive", "500", "--autorespond", "y"]
    assert gputools.amdsmi_set_argv([2], 500, ppt=True) == ["amd-smi", "set", "-g", "2", "-o", "ppt0", "500"]
    assert gputools.amdsmi_set_argv([2], 500, ppt=False) == ["amd-smi", "set", "-g", "2", "-o", "500"]


def test_throttle_plan_holds_the_first_policies_at_the_floor_each_policy_once() -> None:
    pols = [cpufreq.Policy(f"policy{i}", i, cpuinfo_min_khz=1_000_000, cpuinfo_max_khz=3_000_000) for i in range(96)]
    plan = cpufreq.throttle_plan(pols, 15, 1_500_000)
    low = [p for p, khz in plan.items() if khz == 1_500_000]
    assert len(low) == 15  # ceil(96 * 0.15); the original reached 14 because it counted policies twice (D6)
    assert plan["policy0"] == 1_500_000 and plan["policy95"] == 3_000_000
    # The floor is clamped into the policy's own range.
    high_min = [cpufreq.Policy("policy0", 0, cpuinfo_min_khz=2_000_000, cpuinfo_max_khz=3_000_000)]
    assert cpufreq.throttle_plan(high_min, 100, 1_500_000) == {"policy0": 2_000_000}
    assert set(cpufreq.throttle_plan(pols, 0, 1_500_000).values()) == {3_000_000}


def test_a_refused_rocm_smi_set_is_explained_by_its_reason_not_its_banner() -> None:
    from joulie_agent.discovery.gputools import rocmsmi_failure_reason

    out = (
        "\n============================ ROCm System Management Interface ============================\n"
        "GPU[0]\t\t: Unable to set power to 800W: must be within 0W and 750W\n"
        "================================== End of ROCm SMI Log ===================================\n"
    )
    assert rocmsmi_failure_reason(out) == "GPU[0]\t\t: Unable to set power to 800W: must be within 0W and 750W".strip()
    assert rocmsmi_failure_reason("==== only banners ====\n") == "(rocm-smi printed no reason)"


def test_garbage_numbers_in_sysfs_and_cpuinfo_are_not_numbers(tmp_path: Path) -> None:
    # Found by the fuzz tests: 4301 digits overflow int()'s limit, and '²'.isdigit() is true.
    huge = tmp_path / "energy_uj"
    huge.write_text("9" * 4301)
    assert read_int(huge) is None
    huge.write_text("123456789\n")
    assert read_int(huge) == 123456789
    info = parse_cpuinfo("processor\t: ²\nphysical id\t: 0\nsiblings\t: ²\ncpu cores\t: 3\n")
    assert info.logical_cpus == 0 and info.host_logical_cpus == 3


def _runner(answers: dict[str, tuple[int, str]]) -> Runner:
    def run(argv: list[str]) -> ToolResult:
        code, out = answers.get(" ".join(argv), (2, "Invalid combination of input arguments."))
        return ToolResult(tuple(argv), code, out)
    return run


def test_nvidia_smi_inventory_reads_each_boards_default_limit() -> None:
    # An H100 NVL powers on at 310 W of its 400 W maximum; "uncapped" for the policies is 310 W.
    rows = "0, 200.00, 400.00, 310.00, 60.00, NVIDIA H100 NVL\n1, 200.00, 400.00, 250.00, 55.00, NVIDIA H100 NVL\n"
    answers = {" ".join(gputools.NVIDIA_QUERY): (0, rows),
               " ".join(gputools.NVIDIA_DEFAULT_QUERY): (0, "0, 310.00\n1, 310.00\n")}
    inv = gpu_inventory("nvidia", _runner(answers), None, defaults=True)
    assert inv is not None and [d.default_w for d in inv.devices] == [310.0, 310.0] and not inv.warnings
    # A driver that refuses the field: the default stays unknown, the inventory is still whole.
    del answers[" ".join(gputools.NVIDIA_DEFAULT_QUERY)]
    inv = gpu_inventory("nvidia", _runner(answers), None, defaults=True)
    assert inv is not None and [d.default_w for d in inv.devices] == [None, None] and len(inv.devices) == 2
    # Only discovery asks: the exporter's and the verifier's frequent re-reads run one query, not two.
    calls: list[str] = []
    answers[" ".join(gputools.NVIDIA_DEFAULT_QUERY)] = (0, "0, 310.00\n1, 310.00\n")
    run = _runner(answers)

    def counted(argv: list[str]) -> ToolResult:
        calls.append(" ".join(argv))
        return run(argv)

    gpu_inventory("nvidia", counted, None)
    assert calls == [" ".join(gputools.NVIDIA_QUERY)]
