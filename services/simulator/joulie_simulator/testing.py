"""Test fixtures the simulator offers tests of its own and of products: an emulator held still, and a
running fleet of emulated BMCs over it. Only test modules may import this (the layering test
enforces it for products)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from joulie_hwprofiles.schema import Profile
from joulie_simulator.bmc.serving.app import BmcCredentials
from joulie_simulator.bmc.serving.fleet import BmcFleet, BmcTls
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.emulation.powerfaults import PowerOnFaults


def frozen_emulator(*nodes: tuple[str, Profile]) -> Emulator:
    """An emulator of `nodes` stepped once and then frozen: its clock moves only when a test steps it."""
    emu = Emulator(list(nodes), tick_s=1.0, clock=lambda: 0.0)
    emu.frozen = True
    emu.step(1)
    return emu


@contextmanager
def running_fleet(emu: Emulator, creds: BmcCredentials, tls: BmcTls | None = None,
                  faults: PowerOnFaults | None = None) -> Iterator[BmcFleet]:
    """One emulated BMC per node of `emu` on loopback, stopped on exit."""
    fleet = BmcFleet(emu, creds, tls=tls, faults=faults).start()
    try:
        yield fleet
    finally:
        fleet.stop()
