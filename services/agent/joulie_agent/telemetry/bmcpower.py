"""The node's input power from its BMC over Redfish, read in a thread of its own. Shell.

Why it exists: the issue's "host energy where the platform gives it". The BMC's chassis power
reading is the wall-side figure (PSU losses, fans, disks, NICs), which the sum of RAPL and GPU
readings misses. A BMC is slow (hundreds of ms a request), holds few sessions and sometimes stops
answering, so the power export never calls it: this reader polls it every interval in its own
thread, and the export takes the latest reading if it is fresh (`stale_after_s`), else exports
the sum of the components (`powerexport.HostEnergy`). One log line per change between the two,
never one per failed poll.

Where the BMC is: a Secret of a read-only BMC account (docs/redfish.md "Host power in the agent": the
keys of the controller manager's BMC Secret, never that Secret itself, whose account powers nodes),
mounted into the agent's pod (`BMC_SECRET_DIR`); the node's `<node>.address` and its or the pool's
credentials, `ca.crt` as the CA bundle (TLS is verified unless the Secret says
`insecure-skip-tls-verify`). The directory is read again at every (re)connect, so a fixed Secret
takes effect without a restart. A session is kept between polls and dropped on any failure.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from joulie_redfish.client import connect
from joulie_redfish.directory import BmcEntry, DirectoryError
from joulie_redfish.errors import RedfishError
from joulie_redfish.mounted import ca_bundle, read_mounted

log = logging.getLogger(__name__)


class BmcSession(Protocol):
    def power_watts(self) -> float | None: ...

    def close(self) -> None: ...

    def abandon(self) -> None: ...


Connect = Callable[[BmcEntry, Path | None, float], BmcSession]


def connect_bmc(entry: BmcEntry, ca_file: Path | None, timeout_s: float) -> BmcSession:
    return connect(entry.address, entry.credentials, verify_tls=entry.verify_tls, ca_bundle=ca_file,
                   system=entry.system, timeout_s=timeout_s)


class BmcPowerReader:
    """One node's BMC power reading, polled every ``interval_s`` (the export interval).

    A reading is fresh for ``stale_after_s`` (default two intervals plus the timeout: one poll may
    hang up to the timeout, the next must have answered). A failed poll forgets the reading at once.
    """

    def __init__(self, node: str, secret_dir: Path, interval_s: float, timeout_s: float = 5.0,
                 monotonic: Callable[[], float] = time.monotonic, connect: Connect = connect_bmc) -> None:
        self.node = node
        self.secret_dir = secret_dir
        self.timeout_s = timeout_s
        self.stale_after_s = 2 * interval_s + timeout_s
        self._monotonic = monotonic
        self._connect = connect
        self._session: BmcSession | None = None
        self._address = ""
        self._reading: tuple[float, float] | None = None  # (monotonic s, W): replaced whole, read without a lock
        self._ok: bool | None = None
        self._poll_lock = threading.Lock()  # the thread and a test's direct poll never overlap
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"bmc-power-{node}", daemon=True)

    def power_w(self) -> float | None:
        r = self._reading
        if r is None or self._monotonic() - r[0] > self.stale_after_s:
            return None
        return r[1]

    def poll_once(self) -> float | None:
        """Read the BMC once (connecting first if needed); the watts, or None after a failure."""
        with self._poll_lock:
            try:
                watts = self._read()
            except (RedfishError, DirectoryError, _NoReading) as err:
                # An unreachable BMC cannot end the session either (it expires there): abandon it,
                # so that no garbage collection in another thread (the export's) tries to end it.
                self._failed(str(err), end_session=not (isinstance(err, RedfishError) and err.kind == "unreachable"))
                return None
            except Exception as err:  # the thread must survive whatever sushy or requests raise
                self._failed(f"BMC {self._address or '?'}: unexpected {type(err).__name__}: {err}")
                return None
            self._reading = (self._monotonic(), watts)
            if self._ok is not True:
                log.info("node %s: host power from its BMC %s (joulie.host.power.source=bmc)", self.node, self._address)
                self._ok = True
            return watts

    def _read(self) -> float:
        if self._session is None:
            entry = read_mounted(self.secret_dir).get(self.node)
            if entry is None:
                raise _NoReading(f"no '{self.node}.address' in the BMC Secret mounted at {self.secret_dir}")
            self._address = entry.address
            self._session = self._connect(entry, ca_bundle(self.secret_dir, entry), self.timeout_s)
        watts = self._session.power_watts()
        if watts is None:
            raise _NoReading(f"BMC {self._address}: no power reading (neither Chassis Power PowerControl nor a "
                             "Power sensor)")
        return watts

    def _failed(self, why: str, end_session: bool = True) -> None:
        self._reading = None
        session, self._session = self._session, None
        if session is not None and not end_session:
            session.abandon()
        elif session is not None:
            try:
                session.close()
            except Exception as err:  # a failing BMC may not end its session either
                log.debug("node %s: closing the BMC session failed: %s", self.node, err)
        if self._ok is not False:
            log.warning("node %s: host power: %s; exporting the sum of the measured components "
                        "(joulie.host.power.source=sum-of-components) until the BMC answers", self.node, why)
            self._ok = False
        else:
            log.debug("node %s: host power: %s", self.node, why)

    def _run(self) -> None:
        # At once, then every interval: the first exports should not wait an interval for the BMC.
        while True:
            self.poll_once()
            if self._stop.wait(self.interval_s):
                return

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """No more polls; waits for one in progress (at most the timeout) and ends the session."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.timeout_s + 1)
        with self._poll_lock:
            session, self._session = self._session, None
        if session is not None:
            try:
                session.close()
            except Exception as err:
                log.debug("node %s: closing the BMC session failed: %s", self.node, err)


class _NoReading(Exception):
    """The BMC is not configured for this node, or reports no power."""


def bmc_factory(secret_dir: str, interval_s: float, timeout_s: float) -> Callable[[str], BmcPowerReader | None]:
    """The exporter's host power factory: a reader per node when BMC_SECRET_DIR is set, else none."""
    if not secret_dir:
        return lambda node: None
    return lambda node: BmcPowerReader(node, Path(secret_dir), interval_s, timeout_s)
