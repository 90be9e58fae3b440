"""One emulated node as the emulator holds it: its state, tree, faults and power state.

Kept apart from the emulator (``emulation.emulator``), which steps, reads and writes these.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from joulie_hwprofiles.schema import Profile
from joulie_simulator.emulation.render import Entry
from joulie_simulator.physics.model import NodeState

PowerState = Literal["on", "off", "booting", "shutting-down"]
POWER_ON: PowerState = "on"
POWER_OFF: PowerState = "off"
POWER_BOOTING: PowerState = "booting"
POWER_SHUTTING_DOWN: PowerState = "shutting-down"


@dataclass(frozen=True)
class Fault:
    kind: str  # view_unavailable | stale_counters | write_denied | gpu_tool_failure | telemetry_gap | gpu_tool_hang
    ticks_left: int = 0  # 0 = until cleared
    target: str = ""


@dataclass
class EmulatedNode:
    name: str
    profile: Profile
    state: NodeState
    entries: tuple[Entry, ...]
    by_path: dict[str, Entry]
    last_tick_s: float
    faults: list[Fault] = field(default_factory=list)
    # Power state (see Emulator.power_off/power_on): the state, the seconds of ticked time left in
    # a transition (booting, shutting-down), when it was entered (emulator time_s) and how many
    # boots it has done since the emulator started.
    power: PowerState = POWER_ON
    power_left_s: float = 0.0
    power_since_s: float = 0.0
    boots: int = 0
    # Odd while the tick replaces state and last_tick_s together (see ticked).
    tick_gen: int = 0
    # The state the last tick left when it found the node steady (physics.node.steady): while ``state``
    # is still that object (no load, write, fault or power action replaced it), a tick only moves the ledgers.
    steady_state: NodeState | None = None
    # The boards' activity as their tools read it is drawn at the first read after a tick, not by the
    # tick (Emulator.shown): (the ticked state, it with its boards' signals).
    drawn: tuple[NodeState, NodeState] | None = None

    def ticked(self) -> tuple[NodeState, float]:
        """(state, its tick time) as one pair, lock-free: read between the tick's two assignments, a counter
        would gain a tick twice (or not at all); ``tick_gen`` is odd meanwhile: read until even, unchanged."""
        while True:
            gen = self.tick_gen
            st, last_tick_s = self.state, self.last_tick_s
            if not gen & 1 and gen == self.tick_gen:
                return st, last_tick_s
            time.sleep(0)  # let the ticking thread finish the node
