"""The Redfish `PowerDriver`: the controller's power policy carried out through each node's BMC.

Which BMC belongs to which node, and its credentials, come from the Secrets labelled
``joulie.io/bmc-credentials=true`` in one namespace (the controller's own, ``POD_NAMESPACE``,
which the chart sets to the release namespace); `joulie_redfish` parses them and speaks Redfish
(over sushy). The directory is read again every ``refresh_s`` (a LIST of a few Secrets), so a
Secret added or fixed is picked up without a restart; a directory that cannot be read keeps the
last good one (logged once).

One logged-in client per node is kept between ticks (a Redfish session: one login, not one per
reading) and dropped on any error or when the node's entry changes, so the next call logs in
again. Every failure becomes text naming the node and the BMC (RedfishError already scrubs
passwords and session tokens): a reading with state "unknown" and the error, or a
`PowerDriverError` for a reset. Errors are logged when they change, not every tick.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from joulie_controller.power.powerdriver import PowerDriverError
from joulie_controller.power.powerstate import BmcReading
from joulie_redfish.client import ResetKind
from joulie_redfish.directory import BmcEntry
from joulie_redfish.errors import RedfishError

log = logging.getLogger(__name__)


class Client(Protocol):
    """What the driver uses of `joulie_redfish.client.BmcClient` (a fake in tests)."""

    def power_state(self) -> str: ...

    def reset(self, kind: ResetKind) -> None: ...

    def close(self) -> None: ...


DirectoryReader = Callable[[], Mapping[str, BmcEntry]]
Connector = Callable[[BmcEntry], Client]

_STATES: frozenset[str] = frozenset({"on", "off", "powering-on", "powering-off", "unknown"})


class RedfishPowerDriver:
    """`PowerDriver` over Redfish. ``read_directory`` returns node -> BmcEntry (the Secrets);
    ``connect`` logs in to one entry's BMC."""

    def __init__(self, read_directory: DirectoryReader, connect: Connector, refresh_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic):
        self._read_directory, self._connect, self._refresh_s, self._clock = read_directory, connect, refresh_s, clock
        self._directory: Mapping[str, BmcEntry] = {}
        self._read_at: float | None = None
        self._directory_error: str | None = None
        self._clients: dict[str, tuple[BmcEntry, Client]] = {}
        self._logged: dict[str, str | None] = {}

    # -- the directory ----------------------------------------------------------------------
    def directory(self) -> Mapping[str, BmcEntry]:
        now = self._clock()
        if self._read_at is None or now - self._read_at >= self._refresh_s:
            self._read_at = now
            try:
                self._directory = dict(self._read_directory())
                if self._directory_error is not None:
                    log.info("BMC Secrets readable again: %d nodes have a BMC", len(self._directory))
                self._directory_error = None
            except Exception as err:  # a bad Secret (DirectoryError) as much as an API outage
                text = str(err)
                if text != self._directory_error:
                    log.error("reading the BMC Secrets failed, keeping the last good directory (%d nodes): %s",
                              len(self._directory), text)
                self._directory_error = text
            for node in [n for n, (e, _) in self._clients.items() if self._directory.get(n) != e]:
                self._drop(node)
        return self._directory

    # -- PowerDriver -------------------------------------------------------------------------
    def state(self, node: str) -> BmcReading | None:
        entry = self.directory().get(node)
        if entry is None:
            return None
        try:
            raw = self._client(node, entry).power_state()
            reading = BmcReading(raw if raw in _STATES else "unknown")  # type: ignore[arg-type]
        except RedfishError as err:
            self._drop(node)
            reading = BmcReading("unknown", f"node {node}: {err}")
        self._log_change(node, reading.error)
        return reading

    def off(self, node: str, graceful: bool = True) -> None:
        self._reset(node, "GracefulShutdown" if graceful else "ForceOff")

    def on(self, node: str) -> None:
        self._reset(node, "On")

    def close(self) -> None:
        for node in list(self._clients):
            self._drop(node)

    # -- helpers -----------------------------------------------------------------------------
    def _reset(self, node: str, kind: ResetKind) -> None:
        entry = self.directory().get(node)
        if entry is None:
            raise PowerDriverError(f"node {node}: no BMC configured (no address in a Secret labelled "
                                   "joulie.io/bmc-credentials=true)")
        try:
            self._client(node, entry).reset(kind)
        except RedfishError as err:
            self._drop(node)
            raise PowerDriverError(f"node {node}: {err}") from None

    def _client(self, node: str, entry: BmcEntry) -> Client:
        held = self._clients.get(node)
        if held is not None and held[0] == entry:
            return held[1]
        self._drop(node)
        client = self._connect(entry)
        self._clients[node] = (entry, client)
        return client

    def _drop(self, node: str) -> None:
        held = self._clients.pop(node, None)
        if held is not None:
            try:
                held[1].close()
            except Exception as err:  # a session the BMC already forgot: nothing to free
                log.debug("node %s: closing the BMC session: %s", node, err)

    def _log_change(self, node: str, error: str | None) -> None:
        if self._logged.get(node) == error:
            return
        if error is not None:
            log.error("node %s: BMC reading failed, the node is left as it is: %s", node, error)
        elif node in self._logged:
            log.info("node %s: BMC answers again", node)
        self._logged[node] = error


def from_kube(core_v1: object, namespace: str, refresh_s: float = 30.0, timeout_s: float = 10.0,
              ca_dir: Path | None = None) -> RedfishPowerDriver:
    """The driver the controller runs: the labelled Secrets of ``namespace``, sushy clients; the
    Secrets' ``ca.crt`` bundles written under ``ca_dir`` (a private temporary directory)."""
    from joulie_redfish.client import connect_entry
    from joulie_redfish.kube import read_directory

    ca = ca_dir or Path(tempfile.mkdtemp(prefix="joulie-bmc-ca-"))
    return RedfishPowerDriver(lambda: read_directory(core_v1, namespace),
                              lambda entry: connect_entry(entry, ca, timeout_s=timeout_s), refresh_s)

