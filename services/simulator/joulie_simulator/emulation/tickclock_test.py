"""The time a live tick covers: late ticks keep the wall clock's time, a frozen spell is not counted."""

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.emulation.tickclock import TickClock
from joulie_simulator.physics.model import Load


def test_a_late_tick_covers_the_time_it_was_late_and_a_pause_starts_afresh() -> None:
    now = [100.0]
    ticks = TickClock(1.0, lambda: now[0])
    assert ticks.covered() == 1.0  # the first: the nominal length
    now[0] += 2.5  # a tick 1.5 s late
    assert ticks.covered() == pytest.approx(2.5)
    now[0] += 0.2  # the loop catching up
    assert ticks.covered() == pytest.approx(0.2)
    ticks.pause()
    now[0] += 60.0  # frozen for a minute: not time the nodes ran
    assert ticks.covered() == 1.0


def test_energy_counters_follow_the_wall_clock_when_ticks_come_late() -> None:
    """Over 100 s of wall time with ticks 1.3 s apart (each late), a Node's package counter advances
    by its power times 100 s, not by 77 nominal ticks' worth (the 2.4 % low twins of the files run)."""
    now = [0.0]
    profile = builtin_profile("intel-xeon-2s-rapl")
    emu = Emulator([("n", profile)], tick_s=1.0, clock=lambda: now[0])
    emu.set_load("n", Load(cpu_util=1.0))
    ticks = TickClock(1.0, lambda: now[0])
    for _ in range(20):  # settle the load
        now[0] += 1.0
        emu.tick(ticks.covered())
    e0, t0 = emu.nodes["n"].state.sockets[0].energy_j, now[0]
    w = emu.nodes["n"].state.sockets[0].power_w
    while now[0] - t0 < 100.0 - 1e-9:
        now[0] += 1.3
        emu.tick(ticks.covered())
    elapsed = now[0] - t0
    got = emu.nodes["n"].state.sockets[0].energy_j - e0
    assert abs(got - w * elapsed) <= 1e-6 * w * elapsed
    nominal = 77 * w  # what 1 s ticks would have counted
    assert got > 1.29 * nominal
