"""How the controller reaches a node's BMC: the `PowerDriver` protocol, and an in-memory driver.

The power policy (powerstate.py) decides; the controller loop reads every node's BMC through a
driver before the tick and carries out "off" and "on" through it after. The Redfish driver (package
joulie_redfish, libs/redfish) implements this protocol; `InMemoryPowerDriver` stands in for it in
tests and holds the power states of nodes that have no real BMC. A driver never puts a credential
in an error message: the text goes to NodeTwin status.power.error and the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from joulie_controller.power.powerstate import BmcReading, BmcState
from joulie_controller.power.refusal import Refusal


class PowerDriverError(RuntimeError):
    """A BMC refused or did not answer; the message names the node and what failed."""


class PowerDriver(Protocol):
    def state(self, node: str) -> BmcReading | None:
        """The node's power state as its BMC reports it; None when the node has no BMC configured.
        An unreachable BMC or refused credentials read as state "unknown" with the error."""
        ...

    def off(self, node: str, graceful: bool = True) -> None:
        """Power the node off (graceful: the OS shuts down first). Raises PowerDriverError."""
        ...

    def on(self, node: str) -> None:
        """Power the node on. Raises PowerDriverError."""
        ...


def read_all(driver: PowerDriver, nodes: Iterable[str], refusals: Mapping[str, Refusal]) -> dict[str, BmcReading]:
    """Every node's reading (nodes without a BMC left out). A driver that raises reads as unknown
    with its error; the node's last refused off/on comes with the reading (the policy retries a
    refused power-on, and shows the refusal as the error while it applies)."""
    out: dict[str, BmcReading] = {}
    for node in nodes:
        try:
            reading = driver.state(node)
        except Exception as err:  # a driver bug or an unexpected transport error: the node is unknown
            reading = BmcReading("unknown", f"reading the BMC failed: {err}")
        if reading is None:
            continue
        out[node] = BmcReading(reading.state, reading.error, refusals.get(node))
    return out


class InMemoryPowerDriver:
    """Nodes' power states in a dict, with the BMC's refusals: powering off a node that is not on,
    or on one that is not off, raises as a BMC answers 409. `fail` makes a node's BMC fail (its
    readings and actions) with the given text, as an unreachable BMC or a bad credential would;
    `refuse` makes only its resets fail (a BMC that answers reads but rejects the reset)."""

    def __init__(self, states: Mapping[str, BmcState] | None = None):
        self.states: dict[str, BmcState] = dict(states or {})
        self.fail: dict[str, str] = {}
        self.refuse: dict[str, str] = {}
        self.calls: list[tuple[str, str]] = []

    def state(self, node: str) -> BmcReading | None:
        if node not in self.states:
            return None
        if node in self.fail:
            return BmcReading("unknown", self.fail[node])
        return BmcReading(self.states[node])

    def _require(self, node: str, action: str, current: BmcState) -> None:
        if node not in self.states:
            raise PowerDriverError(f"node {node}: no BMC configured")
        if node in self.fail or node in self.refuse:
            raise PowerDriverError(f"node {node}: {action}: {self.fail.get(node) or self.refuse[node]}")
        if self.states[node] != current:
            raise PowerDriverError(f"node {node}: {action} refused (409): the system is {self.states[node]}")

    def off(self, node: str, graceful: bool = True) -> None:
        self._require(node, "GracefulShutdown" if graceful else "ForceOff", "on")
        self.calls.append((node, "off"))
        self.states[node] = "off"

    def on(self, node: str) -> None:
        self._require(node, "On", "off")
        self.calls.append((node, "on"))
        self.states[node] = "on"
