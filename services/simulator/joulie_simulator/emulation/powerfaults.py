"""The emulated BMC failing on demand (issue 37): a share of power-ons refused or hung.

Pure apart from its lock. The benchmark draws the same two faults through this class
(``joulie_bench.bmcfaults``, through ``joulie_simulator.api``); the live cluster's: ``joulie-simulator emulate --bmc-failure-share/--bmc-hang-share`` (and ``simcluster``
through ``SIMCLUSTER_BMC_FAILURE_SHARE`` / ``SIMCLUSTER_BMC_HANG_SHARE``):

- refused: the power-on is answered HTTP 500 (``InternalError``), as a busy BMC does, and the node stays
  off; the controller retries it after RESUME_RETRY_BACKOFF, up to RESUME_RETRIES, then fails the node
  with this answer;
- hung: the power-on is accepted (204) but the node never boots (a firmware hang); the controller fails
  it at RESUME_TIMEOUT.

Draws come from one generator seeded by ``seed`` for the whole fleet, in the order the power-ons arrive.
Power-offs are never touched (a node that cannot be switched off is another fault). ``nodes`` narrows the
shares to those nodes' BMCs (``simcluster suspend-live``: one node's every power-on refused while another's
boots); the others answer ``ok`` without a draw, so the fleet-wide sequence is unchanged when it is empty.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from typing import Literal

Answer = Literal["ok", "refused", "hung"]


@dataclass
class PowerOnFaults:
    failure_share: float = 0.0
    hang_share: float = 0.0
    seed: int = 0
    nodes: frozenset[str] = frozenset()
    """The nodes whose power-ons the shares apply to; empty: every node."""
    stream: str = "bmc-power-on"
    """Names the generator with the seed: the benchmark draws its own stream (``bmc-faults``), kept so that
    its recorded runs draw the same answers since it calls this class instead of a copy of it."""
    drawn: dict[str, int] = field(default_factory=lambda: {"ok": 0, "refused": 0, "hung": 0})
    """How many power-ons got each answer (the debug server's and the scenario's count)."""

    def __post_init__(self) -> None:
        _check(self.failure_share, self.hang_share)
        self._rng = random.Random(f"{self.stream}-{self.seed}")
        self._lock = threading.Lock()

    def set_shares(self, failure_share: float, hang_share: float, nodes: frozenset[str] = frozenset()) -> None:
        """New shares from now on (``POST /debug/bmc/faults``: a chaos fault that holds for a while), for
        ``nodes`` only when given."""
        _check(failure_share, hang_share)
        with self._lock:
            self.failure_share, self.hang_share, self.nodes = failure_share, hang_share, frozenset(nodes)

    @property
    def active(self) -> bool:
        return self.failure_share > 0 or self.hang_share > 0

    def draw(self, node: str = "") -> Answer:
        """The answer to the next power-on (of ``node``)."""
        with self._lock:
            if self.nodes and node not in self.nodes:
                self.drawn["ok"] += 1
                return "ok"
            x = self._rng.random()
            answer: Answer = (
                "refused" if x < self.failure_share else "hung" if x < self.failure_share + self.hang_share else "ok"
            )
            self.drawn[answer] += 1
            return answer


def _check(failure_share: float, hang_share: float) -> None:
    for flag, share in (("--bmc-failure-share", failure_share), ("--bmc-hang-share", hang_share)):
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"{flag}: {share:g} is not a share between 0 and 1")
    if failure_share + hang_share > 1.0:
        raise ValueError(
            f"--bmc-failure-share {failure_share:g} + --bmc-hang-share {hang_share:g} is more than every power-on"
        )
