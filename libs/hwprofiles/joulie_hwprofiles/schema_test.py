from pathlib import Path

import pytest

from joulie_hwprofiles.schema import ProfileError, builtin_profile, builtin_profile_names, load_profile

NINE = {
    "intel-xeon-2s-rapl", "amd-epyc-2s-energy-only", "amd-epyc-2s-hsmp", "nvidia-h100-nvl-8gpu",
    "nvidia-h100-sxm-8gpu", "amd-instinct-mi300x-8gpu", "vm-no-powercap", "intel-managed", "arm64-managed",
}


def test_the_nine_kinds_of_the_smoke_spec_are_builtin_and_valid() -> None:
    assert set(builtin_profile_names()) >= NINE
    for name in NINE:
        assert builtin_profile(name).name == name


def test_the_four_seed_profiles_are_builtin_with_their_datasheet_limits() -> None:
    """Issue 22: Xeon Gold 6530 (TDP 270 W, 32 cores), EPYC 9534 (64 cores, energy counters only),
    H100 SXM x4 (200-700 W), L40S x4 (100-350 W), each on the host profile it extends."""
    xeon = builtin_profile("intel-xeon-6530-2s-rapl")
    assert xeon.powercap is not None and xeon.cpu.cores_per_socket == 32 and xeon.node.cpu == 128
    assert xeon.powercap.package.constraints[0].power_limit_uw == 270_000_000
    assert xeon.powercap.dram is not None  # inherited from the 8260 host
    epyc = builtin_profile("amd-epyc-9534-2s-energy-only")
    assert epyc.powercap is not None and epyc.powercap.package.constraints == []
    assert epyc.amd_energy is not None and epyc.cpu.cores_per_socket == 64 and epyc.physics.cpu.max_pkg_w == 280
    sxm = builtin_profile("nvidia-h100-sxm-4gpu")
    assert sxm.gpus is not None and (sxm.gpus.count, sxm.gpus.min_w, sxm.gpus.max_w) == (4, 200, 700)
    assert sxm.cpu.model_name == "INTEL(R) XEON(R) GOLD 6530"
    l40s = builtin_profile("nvidia-l40s-4gpu")
    assert l40s.gpus is not None and (l40s.gpus.count, l40s.gpus.min_w, l40s.gpus.max_w) == (4, 100, 350)
    assert l40s.powercap is not None and l40s.powercap.package.constraints == [] and l40s.cpu.cores_per_socket == 64


def test_extends_merges_maps_and_replaces_values() -> None:
    sxm = builtin_profile("nvidia-h100-sxm-8gpu")
    assert sxm.gpus is not None and sxm.gpus.max_w == 700 and not sxm.gpus.persistence_mode
    assert sxm.gpus.tools[0].name == "nvidia-smi"  # inherited from the NVL profile
    assert sxm.cpu.model_name.startswith("Intel(R) Xeon(R) Platinum 8260")  # from the Xeon host


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(text)
    return p


def _with(tmp_path: Path, old: str, new: str) -> Path:
    text = (Path(__file__).parent / "data" / "intel-xeon-2s-rapl.yaml").read_text()
    assert old in text
    return _write(tmp_path, "intel-xeon-2s-rapl", text.replace(old, new))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("  cpu: 96\n", "  cpu: 95\n", r"intel-xeon-2s-rapl.yaml: \(top level\)|node.cpu 95 differs"),
        ("min_khz: 1000000", "min_khz: 4000000", r"cpufreq: .*min_khz 4000000 is above max_khz 3900000"),
        ("source: published:ark-8260\n  vendor_id", "source: published:ark-9999\n  vendor_id", r"cpu.source: published:ark-9999 cites no entry"),
        ("source: published:intel-server-power", "source: hearsay", r"physics.source: .*'hearsay' is not published"),
            ('source: "assumed:idle/max', 'source: "published:nowhere#idle/max', r"physics.cpu.source: published:nowhere cites no entry"),
        ('source: "published:intel-server-power#standby', 'source: "published:spec-sheet#standby',
         r"physics.power_states.source: published:spec-sheet cites no entry"),
        ("    standby_w: 8\n", "    standby_w: -8\n", r"physics.power_states.standby_w: Input should be greater than or equal to 0"),
        ("  mhz: 1000.0", "  mhz: 1000.0\n  turbo: yes", r"cpu.turbo: Extra inputs are not permitted"),
        ("reject_writes: enodata", "reject_writes: ebadf", r"powercap.dram.constraints.0.reject_writes: Input should be"),
    ],
)
def test_an_invalid_profile_is_refused_with_the_file_the_field_and_why(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = _with(tmp_path, old, new)
    with pytest.raises(ProfileError, match=message) as e:
        load_profile(path)
    assert str(e.value).startswith(str(path))


def test_a_duplicate_key_and_a_wrong_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="duplicate key 'cpu'"):
        load_profile(_with(tmp_path, "  cpu: 96\n", "  cpu: 96\n  cpu: 96\n"))
    p = _write(tmp_path, "other-name", (Path(__file__).parent / "data" / "vm-no-powercap.yaml").read_text())
    with pytest.raises(ProfileError, match=r"other-name.yaml: name: 'vm-no-powercap' must equal the file name 'other-name'"):
        load_profile(p)


def test_an_unknown_builtin_is_named_with_the_known_ones() -> None:
    with pytest.raises(ProfileError, match="no builtin profile 'cray-1'; known: .*vm-no-powercap"):
        builtin_profile("cray-1")


@pytest.mark.parametrize(("parent", "message"), [
    ("''", r"extends: '' is not a profile name"),
    ("../etc/passwd", r"extends: '\.\./etc/passwd' is not a profile name"),
    ("no-such-profile", r"extends: 'no-such-profile': .*no-such-profile\.yaml: cannot read"),
])
def test_a_bad_extends_is_refused_naming_the_file_that_says_it(tmp_path: Path, parent: str, message: str) -> None:
    path = _write(tmp_path, "child", f"name: child\nextends: {parent}\n")
    with pytest.raises(ProfileError, match=message) as err:
        load_profile(path)
    assert str(err.value).startswith(f"{path}: ")


def test_every_gpu_profile_states_its_supported_sm_clock_range_from_its_captures() -> None:
    """Issue 34: smClockMaxMhz / smClockMinMhz (the range a clock lock must lie in), and each default
    limit is the limit the board boots with (the H100 NVL capture: 310 W of a 400 W maximum)."""
    want = {"nvidia-h100-sxm-8gpu": (1980, 345, 700), "nvidia-h100-sxm-4gpu": (1980, 345, 700),
            "nvidia-h100-nvl-8gpu": (1785, 345, 310), "nvidia-l40s-4gpu": (2520, 210, 350),
            "amd-instinct-mi300x-8gpu": (2100, 500, 750)}
    got = {}
    for name in builtin_profile_names():
        g = builtin_profile(name).gpus
        if g is not None:
            got[name] = (g.sm_clock_max_mhz, g.sm_clock_min_mhz, g.default_w)
    assert got == want


@pytest.mark.parametrize(("old", "new", "message"), [
    ("  smClockMinMhz: 345\n", "  smClockMinMhz: 2000\n", r"gpus: .*smClockMinMhz 2000.0 is above smClockMaxMhz 1785.0"),
    ("  smClockMinMhz: 345\n", "", r"gpus.smClockMinMhz: Field required"),
    ("  smClockMaxMhz: 1785\n", "  smClockMaxMhz: 0\n", r"gpus.smClockMaxMhz: Input should be greater than 0"),
])
def test_a_bad_sm_clock_range_is_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    text = (Path(__file__).parent / "data" / "nvidia-h100-nvl-8gpu.yaml").read_text()
    assert old in text
    for parent in ("intel-xeon-2s-rapl",):
        (tmp_path / f"{parent}.yaml").write_text((Path(__file__).parent / "data" / f"{parent}.yaml").read_text())
    path = _write(tmp_path, "nvidia-h100-nvl-8gpu", text.replace(old, new))
    with pytest.raises(ProfileError, match=message):
        load_profile(path)
