"""The hardware fixture corpus: valid layout, no private data, goldens that match discovery."""

import os
import re
from pathlib import Path

import pytest

from joulie_agent import corpus, cpucontrol, hostread, testtrees
from joulie_agent.catalog import load_catalog

CORPUS = Path(os.environ.get("JOULIE_HARDWARE_CORPUS", "services/agent/testdata/hardware"))
REGENERATE = "./pants run services/agent:bin -- golden --update"
MACHINES = corpus.machines(CORPUS)
PRIVATE = [
    re.compile(r"\b([0-9a-f]{2}:){5}[0-9a-f]{2}\b", re.I),
    re.compile(r"\b\d{1,3}(\.\d{1,3}){3}\b"),
    re.compile(r"\b[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\b", re.I),
    re.compile(r"(?i)\b(serial|asset.tag)\s*[:=]\s*\S+"),
    re.compile(r"/(home|users)/\w+"),
]


def test_corpus_has_every_machine_kind_the_agent_supports() -> None:
    names = {m.name for m in MACHINES}
    assert {"intel-xeon-2s-rapl", "amd-epyc-2s-energy-only", "amd-epyc-2s-hsmp", "nvidia-h100-sxm-8gpu",
            "amd-instinct-mi300x-8gpu", "vm-no-powercap", "arm64-ampere-altra-q80", "ci-vm-amd-epyc-2vcpu"} <= names


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: m.name)
def test_golden_matches_discovery(machine: corpus.Machine, tmp_path: Path) -> None:
    got = corpus.discover_machine(machine, tmp_path, load_catalog())
    golden = machine.path / "expected.json"
    assert golden.is_file(), f"{golden} missing; generate it with: {REGENERATE}"
    assert golden.read_text() == got, f"{machine.name}: discovery drifted from {golden}; if intended: {REGENERATE}"


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: m.name)
def test_fixture_files_hold_no_private_data(machine: corpus.Machine) -> None:
    for f in machine.path.rglob("*"):
        if f.is_file():
            text = f.read_bytes().decode("utf-8")  # must be UTF-8
            assert "\x00" not in text
            for pat in PRIVATE:
                m = pat.search(text)
                assert m is None or "REDACTED" in m.group(0), f"{f}: looks private: {m.group(0) if m else ''}"
    host = machine.labels.get("kubernetes.io/hostname", "")
    assert host in ("", "REDACTED-HOST")


def test_layout_violations_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "stray.txt").write_text("x")
    with pytest.raises(corpus.CorpusError, match="stray.txt"):
        corpus.load_machine(bad)


def test_rapl_cap_on_corpus_machines_writes_only_package_zones_and_never_rejecting_ones(tmp_path: Path) -> None:
    """Reference TestHardwareFixtureCorpusRAPLWrites: 120 W lands on package PL1 files only."""
    tried = 0
    for m in MACHINES:
        if not m.write_rejecting_zones:
            continue
        root = tmp_path / m.name
        corpus.materialize(m, root, reject_writes=True)
        paths = hostread.HostPaths.under(root)
        zones, _ = hostread.read_zones(paths)
        plan = cpucontrol.plan_rapl(zones, 120.0)
        assert sorted(w.zone_id for w in plan.writes) == sorted(
            z.zone_id for z in zones if z.is_package)
        assert not set(plan.unwritable) & {w.zone_id for w in plan.writes}
        assert all(w.limit_uw == 120_000_000 for w in plan.writes)
        for z in m.write_rejecting_zones:
            assert (paths.powercap / z / "constraint_0_power_limit_uw").is_dir()
        tried += 1
        assert testtrees.pl1(root, "intel-rapl:0") == "165000000"
    assert tried >= 2
