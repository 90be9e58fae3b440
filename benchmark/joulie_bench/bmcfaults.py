"""The emulated BMC failing on demand (``--bmc-failure-rate``, ``--bmc-hang-rate``; issue 37).

A share of power-ons fail, drawn from a generator seeded by the run's seed, so every arm of a seed sees
the same sequence of answers for the same sequence of power-ons. The draw is the live emulator's
(``joulie_simulator.api.PowerOnFaults``, on its own stream ``bmc-faults``: the draws of the runs recorded
before it was shared are unchanged):
- refused: the BMC answers the power-on with an error (an HTTP 500 from a busy BMC) and the node stays
  off; the controller's shell records the refusal as the live controller does (``refused_again`` on a
  failed action, the refusal handed to the policy with the node's reading, ``forget_settled`` once the
  node is on or off), and the policy retries it after RESUME_RETRY_BACKOFF, up to RESUME_RETRIES;
- hung: the BMC accepts the power-on but the node never comes up (a firmware hang); the policy fails it
  at RESUME_TIMEOUT and the Pods that waited for it wake the next candidate. It stays off and cordoned
  for the rest of the run (no operator clears it).
A node that failed stays failed; the benchmark checks that no Pod is lost or stuck behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from joulie_controller.api import BmcReading, BmcState, Refusal, forget_settled, refused_again
from joulie_simulator.api import PowerOnFaults

Answer = Literal["ok", "refused", "hung"]


@dataclass
class BmcFaults:
    """The emulated BMCs' answers to power-ons, and the refusals the controller's shell keeps."""

    failure_rate: float = 0.0
    """Share of power-ons refused (0 to 1)."""
    hang_rate: float = 0.0
    """Share of power-ons accepted that never bring the node up (0 to 1)."""
    seed: int = 0
    refusals: dict[str, Refusal] = field(default_factory=dict)
    hung: set[str] = field(default_factory=set)
    refused_count: int = 0
    power_ons: int = 0

    def __post_init__(self) -> None:
        for name, rate in (("--bmc-failure-rate", self.failure_rate), ("--bmc-hang-rate", self.hang_rate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name}: {rate:g} is not a share between 0 and 1")
        if self.failure_rate + self.hang_rate > 1.0:
            raise ValueError(f"--bmc-failure-rate {self.failure_rate:g} + --bmc-hang-rate {self.hang_rate:g} is "
                             "more than every power-on")
        self._draws = PowerOnFaults(self.failure_rate, self.hang_rate, self.seed, stream="bmc-faults")

    def power_on(self, node: str, now: datetime) -> Answer:
        """The BMC's answer to one power-on of ``node``; a refusal is recorded as the shell records it."""
        self.power_ons += 1
        answer = self._draws.draw(node)
        if answer == "refused":
            self.refused_count += 1
            reason = f"node {node}: On: HTTP 500 Internal Server Error (emulated BMC fault)"
            self.refusals[node] = refused_again(self.refusals.get(node), "on", reason, now)
            return "refused"
        self.refusals.pop(node, None)
        if answer == "hung":
            self.hung.add(node)
        return answer

    def summary(self) -> str:
        """For the run's line: the faults that happened (empty without any configured)."""
        if not (self.failure_rate or self.hang_rate):
            return ""
        return f"; BMC: {self.refused_count} of {self.power_ons} power-ons refused, {len(self.hung)} nodes hung"

    def reading(self, node: str, state: BmcState) -> BmcReading:
        """What the node's BMC reads, with the last refusal the shell keeps for it."""
        return BmcReading(state, refused=self.refusals.get(node))

    def settle(self, power_states: dict[str, str]) -> None:
        """After a tick: the refusals of nodes now on or off are history (as the live controller)."""
        forget_settled(self.refusals, power_states)
