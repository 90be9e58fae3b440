"""Enforcement scenarios (reference §2.4 A03-A16) on temp node trees with stand-in GPU tools.

Each test reads what a user would check on the node: the limit files, the tools' recorded
calls, and the controlStatus the agent reports.
"""

from __future__ import annotations

import itertools
import logging
import math
from pathlib import Path
from types import ModuleType

import pytest

from joulie_agent.control.cpucontrol import DvfsConfig
from joulie_agent.control.outcomes import MSG_NO_CPU_BACKEND
from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.enforce import cpuenforce
from joulie_agent.enforce.node import NodeController, NodeOptions
from joulie_agent.fixtures import testtrees
from joulie_agent.host import hostread
from joulie_agent.host.hostread import HostPaths
from joulie_agent.host.sysfswrite import write_attr
from joulie_agent.host.toolrun import make_runner
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_api.generated.nodetwin import CPUCapSpec, GPUCapSpec, GPUPowerCap, NodeTwinSpec
from joulie_common.clock import FakeClock


def spec(cpu_w: float | None = None, cpu_pct: float | None = None, gpu_w: float | None = None,
         gpu_pct: float | None = None) -> NodeTwinSpec:
    return NodeTwinSpec(
        node_name="n1", profile="eco",
        cpu=CPUCapSpec(package_power_cap_watts=cpu_w, package_power_cap_pct_of_max=cpu_pct)
        if cpu_w or cpu_pct else None,
        gpu=GPUCapSpec(power_cap=GPUPowerCap(cap_watts_per_gpu=gpu_w, cap_pct_of_max=gpu_pct))
        if gpu_w or gpu_pct else None,
    )


def controller(root: Path, bin_dir: Path | None = None, labels: dict[str, str] | None = None,
               allocatable: dict[str, str] | None = None, clock: FakeClock | None = None,
               timeout_s: float = 3.0, **opts: object) -> NodeController:
    writer = opts.pop("writer", write_attr)
    bin_dir = bin_dir or root / "nobin"
    c = NodeController("n1", HostPaths.under(root), load_catalog(), make_runner(str(bin_dir), timeout_s), None,
                       clock or FakeClock(), AgentMetrics(), NodeOptions(**opts), writer=writer)  # type: ignore[arg-type]
    c.discover(labels or {}, allocatable or {})
    return c


def record_reads(monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str) -> list[Path]:
    """The paths ``module.name`` (a host file read) is called with from now on, in order."""
    reads: list[Path] = []
    real = getattr(module, name)

    def recording(path: Path) -> object:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(module, name, recording)
    return reads


# ----- CPU: RAPL -----

def test_a03_cap_is_written_to_both_package_pl1_files_and_nothing_else(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path, sockets=2)
    out = controller(tmp_path).reconcile_cpu(spec(cpu_w=120))
    assert (out.backend, out.result) == ("rapl", "applied")
    assert testtrees.pl1(tmp_path, "intel-rapl:0") == testtrees.pl1(tmp_path, "intel-rapl:1") == "120000000"
    # DRAM limits are rejecting directories: untouched, and not reported as failures.
    assert (tmp_path / "sys/class/powercap/intel-rapl:0:0/constraint_0_power_limit_uw").is_dir()
    assert "120.0W per socket" in out.message and "intel-rapl:1" in out.message


def test_rapl_limit_changed_out_of_band_is_reported_as_drift_and_written_again(tmp_path: Path) -> None:
    # Issue 23, defect 1 (CPU side): the PL1 read back is the check that the cap still holds.
    testtrees.rapl_node(tmp_path, sockets=2)
    c = controller(tmp_path)
    assert c.reconcile_cpu(spec(cpu_w=120)).drift == ""
    testtrees.write(tmp_path / "sys/class/powercap/intel-rapl:1/constraint_0_power_limit_uw", "165000000")
    out = c.reconcile_cpu(spec(cpu_w=120))
    assert (out.backend, out.result) == ("rapl", "applied")
    assert out.drift == "intel-rapl:1 PL1 reads 165.0W, intent 120.0W; re-applied"
    assert testtrees.pl1(tmp_path, "intel-rapl:1") == "120000000"
    assert c.reconcile_cpu(spec(cpu_w=120)).drift == ""
    assert c.reconcile_cpu(spec(cpu_w=130)).drift == ""  # a new intent is not drift


def test_garbage_in_rapl_files_is_reported_once_never_read_as_a_number(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Issue 23, sysfs-garbage: garbage in energy_uj and constraint_0_power_limit_uw drew no reaction.
    testtrees.rapl_node(tmp_path, sockets=2)
    clock = FakeClock()
    metrics = AgentMetrics()
    c = NodeController("n1", HostPaths.under(tmp_path), load_catalog(), make_runner(str(tmp_path / "nobin")), None,
                       clock, metrics)
    c.discover({}, {})
    assert c.reconcile_cpu(spec(cpu_w=120)).result == "applied"
    zone0, zone1 = (tmp_path / f"sys/class/powercap/intel-rapl:{i}" for i in (0, 1))
    testtrees.write(zone0 / "energy_uj", "\x00garbage")
    testtrees.write(zone1 / "constraint_0_power_limit_uw", "12ab")
    with caplog.at_level(logging.INFO, logger="joulie_agent"):
        outs = []
        for _ in range(5):
            clock.advance(5)
            outs.append(c.reconcile_cpu(spec(cpu_w=120)))
    first = outs[0]
    assert (first.backend, first.result) == ("rapl", "applied")
    assert first.drift == "intel-rapl:1 PL1 reads '12ab', not an integer, intent 120.0W; re-applied"
    assert testtrees.pl1(tmp_path, "intel-rapl:1") == "120000000"  # written again
    assert first.message.endswith("; unusable readings: intel-rapl:0/energy_uj reads '\\x00garbage', not an "
                                  "integer; intel-rapl:1/constraint_0_power_limit_uw reads '12ab', not an integer")
    assert outs[-1].message.endswith("; unusable readings: intel-rapl:0/energy_uj reads '\\x00garbage', "
                                     "not an integer") and outs[-1].drift == ""
    exported = metrics.registry.get_sample_value("joulie_rapl_energy_uj", {"node": "n1", "zone": "intel-rapl:0"})
    assert exported is None  # the last good counter is not exported in the garbage's place
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "node n1: intel-rapl:0/energy_uj reads '\\x00garbage', not an integer; the reading is unusable and "
        "left out until it reads a number",
        "node n1: intel-rapl:1/constraint_0_power_limit_uw reads '12ab', not an integer; the reading is unusable and "
        "left out until it reads a number",
        "node n1: RAPL cap drift: intel-rapl:1 PL1 reads '12ab', not an integer, intent 120.0W; re-applied",
        "node n1: intel-rapl:1/constraint_0_power_limit_uw reads a number again",
    ], lines


def test_a_rediscovery_that_cannot_read_the_node_keeps_the_last_good_facts(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Issue 23: rediscovery during a simulator outage (FUSE views gone) replaced good hardware
    # facts with "cpuinfo unreadable".
    testtrees.rapl_node(tmp_path, sockets=2)
    c = controller(tmp_path)
    good = c.hardware
    assert good is not None and good.cpu is not None and good.cpu.sockets == 2 and good.cpu.raw_model
    for d in ("proc", "sys"):
        (tmp_path / d).rename(tmp_path / f"{d}.away")
    with caplog.at_level(logging.INFO, logger="joulie_agent"):
        for _ in range(2):
            hw = c.discover({}, {})
            assert hw.cpu == good.cpu and hw.capabilities == good.capabilities
            assert hw.quality is not None and hw.quality.warnings is not None
            assert hw.quality.warnings[-1] == (
                "rediscovery failed (/proc/cpuinfo unreadable; no powercap zone readable (4 before)); the facts of "
                "the last good discovery are kept")
            assert not any("cpuinfo: /proc/cpuinfo unreadable" in w for w in hw.quality.warnings)
        for d in ("proc", "sys"):
            (tmp_path / f"{d}.away").rename(tmp_path / d)
        assert c.discover({}, {}) == good
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["node n1: rediscovery failed (/proc/cpuinfo unreadable; no powercap zone readable (4 before)); "
                     "keeping the facts of the last good discovery", "node n1: rediscovery works again"], lines


def test_rediscovery_reads_only_cpufreq_policies_it_did_not_know(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    testtrees.cpuinfo(tmp_path)
    testtrees.cpufreq_node(tmp_path, policies=4)
    c = controller(tmp_path)
    first = c.hardware
    reads = record_reads(monkeypatch, hostread, "read_text")
    assert c.discover({}, {}) == first
    assert [r for r in reads if "cpufreq" in r.parts] == []
    # A policy that appears (a CPU brought online) is read whole; the others are kept.
    testtrees.cpufreq_node(tmp_path, policies=5, max_khz=3_500_000)
    c.discover({}, {})
    assert {r.parent.name for r in reads if "cpufreq" in r.parts} == {"policy4"}
    assert [p.cpuinfo_max_khz for p in c.facts.policies] == [3_000_000] * 4 + [3_500_000]


def test_a11_without_nfd_labels_vendor_comes_from_cpuinfo_and_rapl_still_applies(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path)
    c = controller(tmp_path, labels={})
    assert c.hardware is not None and c.hardware.cpu is not None
    assert c.hardware.cpu.vendor == "GenuineIntel"
    assert c.hardware.cpu.cap_range is not None and c.hardware.cpu.cap_range.max_watts_per_socket == 165
    assert c.reconcile_cpu(spec(cpu_w=120)).result == "applied"


def test_percent_of_max_becomes_watts_per_socket(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path)
    out = controller(tmp_path).reconcile_cpu(spec(cpu_pct=50))
    assert out.result == "applied"
    assert testtrees.pl1(tmp_path, "intel-rapl:0") == "82500000"


def test_a14_a13_mmio_and_psys_zones_are_not_sockets(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path, psys=True, mmio=True)
    c = controller(tmp_path)
    assert c.hardware is not None and c.hardware.cpu is not None and c.hardware.cpu.sockets == 2
    assert c.reconcile_cpu(spec(cpu_w=120)).result == "applied"
    assert testtrees.pl1(tmp_path, "intel-rapl-mmio:0") == "165000000"
    assert testtrees.pl1(tmp_path, "intel-rapl:2") == "0"  # psys


def test_a15_socket_cap_is_split_between_its_dies(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path, sockets=2, dies=2, max_uw=330_000_000)
    out = controller(tmp_path).reconcile_cpu(spec(cpu_w=120))
    assert out.result == "applied"
    assert [testtrees.pl1(tmp_path, f"intel-rapl:{i}") for i in range(4)] == ["60000000"] * 4


def test_intent_removed_restores_the_limits_found_before(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path)
    c = controller(tmp_path)
    c.reconcile_cpu(spec(cpu_w=120))
    out = c.reconcile_cpu(None)
    assert (out.backend, out.result) == ("none", "none")
    assert testtrees.pl1(tmp_path, "intel-rapl:0") == "165000000"


def locked(*zone_ids: str):  # type: ignore[no-untyped-def]
    def writer(path: Path, value: str) -> str | None:
        if path.parent.name in zone_ids and path.name.startswith("constraint_"):
            return "locked or permission denied (EACCES)"
        return write_attr(path, value)
    return writer


def test_a10_locked_pl1_falls_back_to_dvfs_and_says_why(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path)
    testtrees.cpufreq_node(tmp_path, policies=8)
    out = controller(tmp_path, writer=locked("intel-rapl:0", "intel-rapl:1")).reconcile_cpu(spec(cpu_w=120))
    assert out.backend == "dvfs"
    assert "intel-rapl:0: locked" in out.message
    assert testtrees.pl1(tmp_path, "intel-rapl:0") == "165000000"


def test_partial_rapl_write_is_an_error_not_applied(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path)
    out = controller(tmp_path, writer=locked("intel-rapl:1")).reconcile_cpu(spec(cpu_w=120))
    assert (out.backend, out.result) == ("rapl", "error")
    assert "1 of 2" in out.message and "intel-rapl:1" in out.message
    assert testtrees.pl1(tmp_path, "intel-rapl:0") == "120000000"


def test_a09_vm_without_powercap_or_cpufreq_is_blocked(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path, sockets=8, cpus_per_socket=1)
    out = controller(tmp_path).reconcile_cpu(spec(cpu_w=120))
    assert (out.backend, out.result, out.message) == ("none", "blocked", MSG_NO_CPU_BACKEND)


def test_simulate_only_writes_nothing(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path)
    out = controller(tmp_path, simulate_only=True).reconcile_cpu(spec(cpu_w=120))
    assert out.result == "none" and "simulate-only" in out.message
    assert testtrees.pl1(tmp_path, "intel-rapl:0") == "165000000"


# ----- CPU: energy and the DVFS fallback -----

def test_a08_power_across_an_energy_wrap_counts_each_package_once(tmp_path: Path) -> None:
    rng = 262_143_328_850
    testtrees.rapl_node(tmp_path, psys=True)
    testtrees.write(tmp_path / "sys/class/powercap/intel-rapl:0/energy_uj", str(rng - 250_000_000))
    clock = FakeClock()
    c = controller(tmp_path, clock=clock)
    assert c.cpu.package_power_w(c.facts.zones) is None  # first sample only
    clock.advance(5.0)  # the power meter's shortest window (energymeter.MIN_WINDOW_S)
    testtrees.write(tmp_path / "sys/class/powercap/intel-rapl:0/energy_uj", str(250_000_000))  # wrapped: +500 J
    testtrees.write(tmp_path / "sys/class/powercap/intel-rapl:1/energy_uj", str(400_000_000))  # +400 J
    testtrees.write(tmp_path / "sys/class/powercap/intel-rapl:2/energy_uj", str(10**9))  # psys: ignored
    total = c.cpu.package_power_w(c.facts.zones)
    assert total == pytest.approx(180.0, rel=0.01)


class Plant:
    """A 2-socket node whose package power follows its policies' scaling_max_freq."""

    def __init__(self, root: Path, policies: int = 8, idle_w: float = 80.0, per_policy_w: float = 40.0):
        self.root, self.n, self.idle_w, self.per_policy_w = root, policies, idle_w, per_policy_w
        self.energy_uj = [0, 0]

    def power_w(self) -> float:
        freqs = testtrees.scaling_max(self.root)
        return self.idle_w + sum(self.per_policy_w * (khz / 3_000_000) ** 2 for khz in freqs.values())

    def advance(self, dt: float) -> float:
        p = self.power_w()
        for s in (0, 1):
            self.energy_uj[s] += int(p / 2 * dt * 1e6)
            testtrees.write(self.root / f"sys/class/powercap/intel-rapl:{s}/energy_uj", str(self.energy_uj[s]))
        return p


def test_a04_dvfs_holds_an_energy_only_node_near_its_cap(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path, sockets=2, model="AMD EPYC 9654 96-Core Processor", vendor="AuthenticAMD")
    for s in (0, 1):
        testtrees.zone(tmp_path, f"intel-rapl:{s}", f"package-{s}", enabled=0, pl1_uw=None, max_range_uj=65532610987)
    testtrees.cpufreq_node(tmp_path, policies=8)
    plant = Plant(tmp_path)
    clock = FakeClock()
    cfg = DvfsConfig(cooldown_s=2.0)
    c = controller(tmp_path, clock=clock, dvfs=cfg)
    cap_socket_w = 150.0  # node cap 300 W; uncapped the node draws 400 W
    powers, actions = [], []
    for _ in range(60):
        clock.advance(1.0)
        powers.append(plant.advance(1.0))
        out = c.reconcile_cpu(spec(cpu_w=cap_socket_w))
        assert (out.backend, out.result) == ("dvfs", "applied")
        actions.append(c.cpu.dvfs.throttle_pct)
    assert powers[0] == pytest.approx(400.0)
    assert actions[-1] in (30.0, 40.0)
    assert 2 * cap_socket_w - 15 <= sum(powers[-10:]) / 10 <= 2 * cap_socket_w + 10
    floor = [k for k in testtrees.scaling_max(tmp_path).values() if k == 1_500_000]
    assert len(floor) == math.ceil(8 * actions[-1] / 100)
    # Cooldown: the throttle never changed twice within 2 s.
    changes = [i for i in range(1, len(actions)) if actions[i] != actions[i - 1]]
    assert all(b - a >= 2 for a, b in itertools.pairwise(changes))


def test_rapl_taking_over_restores_dvfs_frequencies(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path)
    testtrees.cpufreq_node(tmp_path, policies=4)
    c = controller(tmp_path, writer=locked("intel-rapl:0", "intel-rapl:1"))
    assert c.reconcile_cpu(spec(cpu_w=120)).backend == "dvfs"  # locked: DVFS throttles
    c.cpu.dvfs.throttle_pct = 50
    c.cpu.apply_throttle(c.facts.policies, 50)
    assert 1_500_000 in testtrees.scaling_max(tmp_path).values()
    c.cpu.write = write_attr
    assert c.reconcile_cpu(spec(cpu_w=120)).result == "applied"
    assert set(testtrees.scaling_max(tmp_path).values()) == {3_000_000}


def test_percent_without_cap_range_throttles_directly(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path)
    testtrees.cpufreq_node(tmp_path, policies=10)
    out = controller(tmp_path).reconcile_cpu(spec(cpu_pct=70))
    assert (out.backend, out.result) == ("dvfs", "applied")
    assert list(testtrees.scaling_max(tmp_path).values()).count(1_500_000) == 3


def test_dvfs_reads_policies_back_once_per_verify_interval_and_reports_drift(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    testtrees.cpuinfo(tmp_path)
    testtrees.cpufreq_node(tmp_path, policies=10)
    clock = FakeClock()
    c = controller(tmp_path, clock=clock, dvfs=DvfsConfig(verify_interval_s=60.0))
    reads = record_reads(monkeypatch, cpuenforce, "read_int")
    first = c.reconcile_cpu(spec(cpu_pct=70))
    assert (first.result, first.drift) == ("applied", "")
    assert len([r for r in reads if r.name == "scaling_max_freq"]) == 10
    # Someone else raises policy0 (held at the floor) back to the maximum.
    testtrees.write(tmp_path / "sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq", "3000000\n")
    reads.clear()
    clock.advance(20.0)
    steady = c.reconcile_cpu(spec(cpu_pct=70))
    assert [r for r in reads if r.name == "scaling_max_freq"] == []  # an unchanged plan is not read back
    assert (steady.result, steady.drift) == ("applied", "")
    clock.advance(40.0)  # the verification sweep is due
    swept = c.reconcile_cpu(spec(cpu_pct=70))
    assert len([r for r in reads if r.name == "scaling_max_freq"]) == 10
    assert swept.result == "applied"
    assert swept.drift == ("1 cpufreq policies drifted (policy0 scaling_max_freq 3000000 kHz, expected "
                           "1500000 kHz); re-applied")
    assert testtrees.scaling_max(tmp_path)["policy0"] == 1_500_000
    clock.advance(20.0)
    assert c.reconcile_cpu(spec(cpu_pct=70)).drift == ""
    # The same drift at every sweep (a tool that keeps resetting policy0) is logged once.
    with caplog.at_level(logging.WARNING, logger="joulie_agent"):
        for _ in range(2):
            testtrees.write(tmp_path / "sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq", "3000000\n")
            clock.advance(60.0)
            assert c.reconcile_cpu(spec(cpu_pct=70)).drift.startswith("1 cpufreq policies drifted (policy0")
    assert len([r for r in caplog.records if "DVFS cap drift" in r.getMessage()]) == 1
    # A changed plan is written at once, without waiting for the sweep.
    clock.advance(1.0)
    c.reconcile_cpu(spec(cpu_pct=50))
    assert list(testtrees.scaling_max(tmp_path).values()).count(1_500_000) == 5

