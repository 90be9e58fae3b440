"""Files mode as an agent on the node sees it: plain files that move once per tick."""

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import EVENT_WRITE_REJECTED, Emulator
from joulie_simulator.physics import node as node_physics
from joulie_simulator.physics.model import Load, NodeState, initial_state
from joulie_simulator.views.files import changes
from joulie_simulator.views.files.fanotify import FanWatch
from joulie_simulator.views.files.ledger import TreeConflict, load_states
from joulie_simulator.views.files.trees import FileTrees

PKG0 = "sys/class/powercap/intel-rapl:0"
DRAM0 = "sys/class/powercap/intel-rapl:0:0"


def _start(root: Path, profile: str = "intel-xeon-2s-rapl", states: dict[str, NodeState] | None = None) -> tuple[Emulator, FileTrees]:
    nodes = [("node-a", builtin_profile(profile))]
    emu = Emulator(nodes, tick_s=1.0, clock=lambda: 0.0, states=states if states is not None else load_states(root, nodes))
    trees = FileTrees(root, emu)
    trees.ensure()
    return emu, trees


def _read(root: Path, rel: str) -> str:
    return (root / "node-a" / rel).read_text().strip()


def _write(root: Path, rel: str, text: str, mtime_ns: int | None = None) -> None:
    p = root / "node-a" / rel
    with open(p, "w") as f:
        f.write(text)
    if mtime_ns is not None:
        os.utime(p, ns=(mtime_ns, mtime_ns))


def test_the_tree_is_what_an_agent_reads_on_a_rapl_node(tmp_path: Path) -> None:
    _start(tmp_path)
    assert _read(tmp_path, f"{PKG0}/name") == "package-0"
    assert _read(tmp_path, f"{PKG0}/constraint_0_power_limit_uw") == "165000000"
    assert _read(tmp_path, "sys/devices/system/cpu/cpufreq/policy0/scaling_driver") == "intel_pstate"
    cpuinfo = (tmp_path / "node-a/proc/cpuinfo").read_text()
    assert cpuinfo.count("processor\t:") == 96
    assert {line for line in cpuinfo.splitlines() if line.startswith("physical id")} == {"physical id\t: 0", "physical id\t: 1"}


def test_counters_move_once_per_tick(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path)
    emu.set_load("node-a", Load(cpu_util=1.0))
    trees.tick()
    first = int(_read(tmp_path, f"{PKG0}/energy_uj"))
    trees.tick()
    second = int(_read(tmp_path, f"{PKG0}/energy_uj"))
    truth = emu.truth("node-a")["zones"][0]
    assert second - first == pytest.approx(truth["powerW"] * 1e6, rel=1e-6)


def test_an_accepted_write_takes_effect_at_the_next_tick_and_reads_back_normalised(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path)
    _write(tmp_path, f"{PKG0}/constraint_0_power_limit_uw", "120100000\n")
    assert _read(tmp_path, f"{PKG0}/constraint_0_power_limit_uw") == "120100000"  # a plain file until the tick
    trees.tick()
    assert _read(tmp_path, f"{PKG0}/constraint_0_power_limit_uw") == "120000000"
    assert emu.nodes["node-a"].state.zones[0].limits_uw[0] == 120_000_000


def test_a_refused_write_reads_back_until_the_next_tick_which_reverts_it_and_reports_the_errno(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path)
    _write(tmp_path, f"{DRAM0}/constraint_0_power_limit_uw", "30000000")
    assert _read(tmp_path, f"{DRAM0}/constraint_0_power_limit_uw") == "30000000"
    trees.tick()
    assert _read(tmp_path, f"{DRAM0}/constraint_0_power_limit_uw") == "0"
    [ev] = [e for e in emu.events if e.name == EVENT_WRITE_REJECTED]
    assert (ev.file, ev.error_type) == ("sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:0/constraint_0_power_limit_uw", "enodata")


def test_writes_between_ticks_apply_in_modification_time_order(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path)
    pol = "sys/devices/system/cpu/cpufreq/policy0"
    # max first (older), then min above the old max: the min is clamped to the new max.
    _write(tmp_path, f"{pol}/scaling_max_freq", "2000000", mtime_ns=1_000_000_000)
    _write(tmp_path, f"{pol}/scaling_min_freq", "3000000", mtime_ns=2_000_000_000)
    trees.tick()
    assert (_read(tmp_path, f"{pol}/scaling_max_freq"), _read(tmp_path, f"{pol}/scaling_min_freq")) == ("2000000", "2000000")


def test_counters_never_go_back_across_a_restart(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path)
    emu.set_load("node-a", Load(cpu_util=0.7))
    _write(tmp_path, f"{PKG0}/constraint_0_power_limit_uw", "100000000")
    for _ in range(3):
        trees.tick()
    before = int(_read(tmp_path, f"{PKG0}/energy_uj"))
    host_before = emu.truth("node-a")["host"]["energyJ"]
    emu2, trees2 = _start(tmp_path)  # a new simulator over the same tree
    assert emu2.nodes["node-a"].state.zones[0].limits_uw[0] == 100_000_000
    trees2.tick()
    assert int(_read(tmp_path, f"{PKG0}/energy_uj")) > before
    assert emu2.truth("node-a")["host"]["energyJ"] > host_before


def test_an_energy_counter_wraps_at_max_energy_range_uj(tmp_path: Path) -> None:
    p = builtin_profile("intel-xeon-2s-rapl")
    rng = node_physics.max_energy_range_uj(61035)
    st = replace(initial_state(p, "node-a", energy_start_uj={"intel-rapl:0": rng - 1_000_000}), load=Load(cpu_util=1.0))
    emu, trees = _start(tmp_path, states={"node-a": st})
    before = int(_read(tmp_path, f"{PKG0}/energy_uj"))
    trees.tick()
    after = int(_read(tmp_path, f"{PKG0}/energy_uj"))
    assert _read(tmp_path, f"{PKG0}/max_energy_range_uj") == str(rng)
    assert after < before  # wrapped
    power = emu.truth("node-a")["zones"][0]["powerW"]
    assert node_physics.counter_delta_uj(before, after, rng) == pytest.approx(power * 1e6, abs=2)


def test_a_tree_of_another_profile_is_refused_naming_the_ledger(tmp_path: Path) -> None:
    _start(tmp_path)
    (tmp_path / "node-a/state/emulator.json").write_text(
        json.dumps({**json.loads((tmp_path / "node-a/state/emulator.json").read_text()), "profile": "vm-no-powercap"})
    )
    with pytest.raises(TreeConflict, match=r"node-a/state/emulator.json: profile: the tree was rendered for node-a/vm-no-powercap"):
        _start(tmp_path)


def test_the_gpu_state_file_follows_the_physics(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path, "nvidia-h100-nvl-8gpu")
    assert (tmp_path / "node-a/dev/nvidiactl").read_bytes() == b""
    emu.set_load("node-a", Load(gpu_util=(1.0,) * 8))
    _write(tmp_path, "state/nvml/gpu0/power_limit_mw", "250000")
    for _ in range(3):
        trees.tick()
    gpus = json.loads((tmp_path / "node-a/state/gpus.json").read_text())["gpus"]
    assert gpus[0]["limit_w"] == 250 and gpus[0]["draw_w"] <= 250
    assert gpus[1]["draw_w"] == pytest.approx(310, rel=1e-3)  # the board boots at its default limit, 310 W


def test_a_clock_lock_written_by_the_tool_reaches_the_truth_and_a_device_reset_clears_the_file(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path, "nvidia-h100-nvl-8gpu")
    _write(tmp_path, "state/nvml/gpu2/locked_clocks_mhz", "345,1200\n")  # nvidia-smi -i 2 -lgc 345,1200
    trees.tick()
    assert emu.truth("node-a")["gpus"][2]["lockMaxMhz"] == 1200
    assert json.loads(_read(tmp_path, "state/gpus.json"))["gpus"][2]["locked_max_mhz"] == 1200
    emu.restart_view("node-a")
    trees.tick()
    assert _read(tmp_path, "state/nvml/gpu2/locked_clocks_mhz") == "none"
    assert emu.truth("node-a")["gpus"][2]["lockMaxMhz"] is None


def test_an_injected_fault_is_visible_to_the_gpu_tools_until_it_expires(tmp_path: Path) -> None:
    from joulie_simulator.emulation.emulator import Fault

    emu, trees = _start(tmp_path, "nvidia-h100-nvl-8gpu")
    emu.inject_fault("node-a", Fault("gpu_tool_failure", ticks_left=2))
    trees.tick()
    assert json.loads(_read(tmp_path, "state/faults.json"))["faults"] == ["gpu_tool_failure"]
    trees.tick()
    assert json.loads(_read(tmp_path, "state/faults.json"))["faults"] == []


def test_fuse_mode_persistence_resumes_from_the_later_of_the_combined_and_node_ledgers(tmp_path: Path) -> None:
    nodes = [("node-a", builtin_profile("intel-xeon-2s-rapl"))]
    emu = Emulator(nodes, clock=lambda: 0.0)
    trees = FileTrees(tmp_path, emu, persist_only=True)
    trees.ensure()
    assert not (tmp_path / "node-a/sys/class/powercap").exists()  # agents read the FUSE views
    emu.set_load("node-a", Load(cpu_util=1.0))
    emu.write("node-a", "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/constraint_0_power_limit_uw", b"150000000")
    for _ in range(3):
        emu.tick()
        trees.flush_ledgers(per_node_every=2)
        trees.persist_writes()
    assert json.loads((tmp_path / "node-a/state/emulator.json").read_text())["tick"] == 2
    resumed = load_states(tmp_path, nodes)["node-a"]
    assert resumed.tick == 3
    assert resumed.host_energy_j == pytest.approx(emu.nodes["node-a"].state.host_energy_j)
    assert resumed.zones[0].limits_uw[0] == 150_000_000


def test_a_restarted_view_shows_default_limits_and_counters_keep_counting(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path)
    emu.set_load("node-a", Load(cpu_util=1.0))
    _write(tmp_path, f"{PKG0}/constraint_0_power_limit_uw", "100000000")
    trees.tick()
    before = int(_read(tmp_path, f"{PKG0}/energy_uj"))
    emu.restart_view("node-a")
    trees.tick()
    assert _read(tmp_path, f"{PKG0}/constraint_0_power_limit_uw") == "165000000"
    assert emu.nodes["node-a"].state.zones[0].limits_uw[0] == 165_000_000
    assert int(_read(tmp_path, f"{PKG0}/energy_uj")) > before


@pytest.mark.parametrize("watch", [True, False], ids=["inotify", "stat-scan"])
def test_writes_in_place_and_by_rename_are_seen_with_or_without_inotify(tmp_path: Path, watch: bool) -> None:
    nodes = [("node-a", builtin_profile("intel-xeon-2s-rapl"))]
    emu = Emulator(nodes, tick_s=1.0, clock=lambda: 0.0)
    trees = FileTrees(tmp_path, emu, watch=watch)
    trees.ensure()
    assert (trees.changes.dirwatch is not None) == watch
    trees.tick()
    _write(tmp_path, f"{PKG0}/constraint_0_power_limit_uw", "110000000")
    pol = tmp_path / "node-a/sys/devices/system/cpu/cpufreq/policy3"
    (pol / "new").write_text("2000000\n")
    os.replace(pol / "new", pol / "scaling_max_freq")  # as an agent writing atomically would
    trees.tick()
    st = emu.nodes["node-a"].state
    assert st.zones[0].limits_uw[0] == 110_000_000 and st.pol_max_khz[3] == 2_000_000
    trees.tick()  # nothing new: nothing applied again
    assert [o for _, _, o in trees.outcomes] and len(trees.outcomes) == 2
    trees.close()


def test_a_node_whose_directory_watch_is_lost_is_scanned(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path)
    zone = tmp_path / "node-a/sys/devices/virtual/powercap/intel-rapl/intel-rapl:1"
    moved = tmp_path / "elsewhere"
    os.rename(zone, moved)  # the watched directory goes away (its watch with it) ...
    os.rename(moved, zone)  # ... and comes back: inotify no longer reports it
    trees.tick()
    assert "node-a" in trees.changes.unwatched
    _write(tmp_path, "sys/class/powercap/intel-rapl:1/constraint_0_power_limit_uw", "100000000")
    trees.tick()
    assert emu.nodes["node-a"].state.zones[2].limits_uw[0] == 100_000_000


def test_the_combined_ledger_is_at_the_current_tick_and_node_ledgers_catch_up(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path)
    for _ in range(3):
        trees.tick()
    assert json.loads((tmp_path / "ledgers.json").read_text())["node-a"]["tick"] == 3
    trees.flush_node_ledgers()  # what emulate does when it stops
    assert json.loads((tmp_path / "node-a/state/emulator.json").read_text())["tick"] == 3


def test_nodes_past_the_inotify_budget_are_watched_with_fanotify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        FanWatch().close()
    except OSError as e:
        pytest.skip(f"no fanotify here: {e}")
    monkeypatch.setattr(changes, "max_watches", lambda limit_file="inotify", default=0: 10_000 if "fanotify" in limit_file else 0)
    emu, trees = _start(tmp_path)
    assert trees.changes.fanwatch is not None and not trees.changes.unwatched
    assert all(isinstance(key, bytes) for key in trees.changes.by_wd)
    trees.tick()
    _write(tmp_path, f"{PKG0}/constraint_0_power_limit_uw", "120000000")
    pol = tmp_path / "node-a/sys/devices/system/cpu/cpufreq/policy5"
    (pol / "new").write_text("2000000\n")
    os.replace(pol / "new", pol / "scaling_max_freq")
    trees.tick()
    st = emu.nodes["node-a"].state
    assert st.zones[0].limits_uw[0] == 120_000_000 and st.pol_max_khz[5] == 2_000_000
    _write(tmp_path, f"{PKG0}/constraint_0_power_limit_uw", "nonsense")
    trees.tick()
    assert _read(tmp_path, f"{PKG0}/constraint_0_power_limit_uw") == "120000000"
    trees.close()


def test_a_counter_replaced_for_a_new_length_is_still_rewritten_in_place_afterwards(tmp_path: Path) -> None:
    emu, trees = _start(tmp_path)
    f = next(s for s in trees._shown["node-a"] if s.bind[0] == "zone_energy")
    trees.publisher.publish(f, "9" * (len(f.text) - 1) + "\n")  # same length: in place, the file kept open
    assert f.fd >= 0
    trees.publisher.publish(f, "1" * (len(f.text) + 1) + "\n")  # longer: replaced, the descriptor dropped
    assert f.fd == -1
    trees.publisher.publish(f, "2" * (len(f.text) - 1) + "\n")
    assert Path(f.path).read_text() == f.text
    trees.close()


def test_a_burst_of_writes_past_the_kernel_queue_is_drained_without_a_scan(tmp_path: Path) -> None:
    # 40 agents capping 1000 Nodes at once wrote more files between two ticks than inotify queues
    # (max_queued_events); the overflow made the next tick stat every writable file of every node.
    emu, trees = _start(tmp_path)
    trees.tick()
    queue = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    cpufreq = tmp_path / "node-a/sys/devices/system/cpu/cpufreq"
    policies = sorted(cpufreq.glob("policy*"))
    for i in range(queue + 4000):  # round robin: the kernel merges only identical events in a row
        with open(policies[i % len(policies)] / "scaling_max_freq", "w") as f:
            f.write("2000000\n")
    seen = trees.changes.candidates()
    assert seen is not None, "the kernel's queue overflowed: every writable file would be scanned"
    assert {w.path.rpartition("/")[0].rpartition("/")[2] for w in seen["node-a"]} == {p.name for p in policies}
    trees.close()


def _cur_freqs(root: Path) -> dict[str, tuple[str, int]]:
    """Each policy's scaling_cur_freq: (text, inode)."""
    out = {}
    for p in sorted((root / "node-a/sys/devices/system/cpu/cpufreq").glob("policy*/scaling_cur_freq")):
        out[p.parent.name] = (p.read_text(), p.stat().st_ino)
    return out


def test_a_sockets_current_frequency_is_one_write_seen_by_every_policy_of_the_socket(tmp_path: Path) -> None:
    # Issue 39: a write per policy file was 192 a socket; the first tick at 1000 Nodes wrote 250 000
    # files and took seconds. Every policy of a socket now shows one inode.
    emu, trees = _start(tmp_path)
    profile = emu.nodes["node-a"].profile
    from joulie_simulator.physics.model import policies

    socket_of = {f"policy{p.id}": p.socket for p in policies(profile)}
    before = _cur_freqs(tmp_path)
    assert len({ino for _, ino in before.values()}) == profile.cpu.sockets
    emu.set_load("node-a", Load(cpu_util=1.0))
    # the same length, shorter by one, longer by one (in place), much shorter (a new inode): every policy sees each
    for khz in (1_234_567, 987_654, 2_000_001, 45_678):
        st = emu.nodes["node-a"].state
        emu.nodes["node-a"].state = replace(st, sockets=tuple(replace(s, eff_khz=khz + s.socket) for s in st.sockets))
        trees.flush()
        now = _cur_freqs(tmp_path)
        assert {pol: int(text) for pol, (text, _) in now.items()} == {pol: khz + socket_of[pol] for pol in now}
        assert len({ino for _, ino in now.values()}) == profile.cpu.sockets  # still one inode a socket
        if khz != 45_678:  # written in place: the same inodes
            assert {pol: ino for pol, (_, ino) in now.items()} == {pol: ino for pol, (_, ino) in before.items()}
    trees.close()
    # A restart resumes the tree, links and all.
    _emu2, trees2 = _start(tmp_path)
    assert len({ino for _, ino in _cur_freqs(tmp_path).values()}) == profile.cpu.sockets
    trees2.close()


def test_a_counter_gaining_or_losing_a_digit_is_written_in_its_own_inode(tmp_path: Path) -> None:
    # Issue 39: counters start at 0 and gain a digit every few ticks at first; each of those was
    # swapped in whole (a rename, and a directory event in a watched directory) instead of written.
    _emu, trees = _start(tmp_path)
    f = next(s for s in trees._shown["node-a"] if s.bind[0] == "zone_energy")
    digits = len(f.text) + 3
    trees.publisher.publish(f, "9" * digits + "\n")  # a new length by more than one: replaced
    ino = os.stat(f.path).st_ino
    with open(f.path) as reader:  # an agent holding the counter open
        for text in ("1" + "0" * digits + "\n", "9" * digits + "\n", "8" * digits + "\n"):
            trees.publisher.publish(f, text)
            reader.seek(0)
            assert reader.read() == text
            assert os.stat(f.path).st_ino == ino
    trees.close()


def test_a_tick_after_lost_events_checks_every_writable_file_says_so_and_applies_the_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emu, trees = _start(tmp_path)
    trees.tick()
    assert trees.split.scanned == 0  # watched: nothing to stat
    _write(tmp_path, f"{PKG0}/constraint_0_power_limit_uw", "100000000\n")
    trees.changes._overflow = True  # as the pump sets it on IN_Q_OVERFLOW
    trees.tick()
    assert trees.split.scanned == sum(len(ws) for ws in trees._watched.values())
    assert "lost events" in capsys.readouterr().out
    assert emu.nodes["node-a"].state.zones[0].limits_uw[0] == 100_000_000
    trees.tick()
    assert trees.split.scanned == 0 and trees.overflows == 1
    trees.close()
