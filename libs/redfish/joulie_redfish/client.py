"""A node's BMC over Redfish, through sushy: power state, ``ComputerSystem.Reset``, power reading.

``connect`` logs in (a Redfish session; sushy falls back to HTTP Basic where a BMC has no session
service) and reads the ComputerSystem once, so that refused credentials, an unreachable BMC and an
untrusted certificate surface at connect with a clear :class:`RedfishError`, not at the first reset.
TLS is verified by default (the system's CAs, or ``ca_bundle``: a PEM file or a directory of them).

Power states are Joulie's words for Redfish's ``PowerState``: ``on``, ``off``, ``powering-on``,
``powering-off``, ``unknown`` (absent, ``Paused``, or a value this client does not know).
Power in watts comes from ``Chassis/<id>/Power`` ``PowerControl[0].PowerConsumedWatts``, or else
the chassis' ``Sensors`` member whose ``ReadingType`` is ``Power``; ``None`` when the BMC has neither.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import requests
import sushy
from sushy import exceptions as sx

from joulie_redfish.credentials import Credentials
from joulie_redfish.directory import BmcEntry
from joulie_redfish.errors import RedfishError, scrub

PowerState = Literal["on", "off", "powering-on", "powering-off", "unknown"]
ResetKind = Literal["On", "ForceOff", "GracefulShutdown", "ForceRestart"]

_STATES: dict[str, PowerState] = {"On": "on", "Off": "off", "PoweringOn": "powering-on", "PoweringOff": "powering-off"}
LOG = logging.getLogger(__name__)
T = TypeVar("T")


class BmcClient:
    """One logged-in BMC. Not thread-safe (one per caller); ``close`` ends the session."""

    def __init__(self, address: str, root: Any, system: Any, secrets: tuple[str, ...]) -> None:
        self.address = address
        self._root = root
        self._system = system
        self._secrets = secrets

    def __repr__(self) -> str:
        return f"BmcClient(address={self.address!r})"

    def power_state(self) -> PowerState:
        def read() -> PowerState:
            self._system.refresh(force=True)
            raw = self._system.json.get("PowerState")
            return _STATES.get(raw, "unknown") if isinstance(raw, str) else "unknown"

        return self._call("read the power state", read)

    def reset(self, kind: ResetKind) -> None:
        """``ComputerSystem.Reset`` with ``kind``; a kind the system does not list, or one its power
        state does not allow (the BMC's 409/400), raises RedfishError ``conflict``/``bad-request``."""

        def post() -> None:
            allowed = {v.value for v in self._system.get_allowed_reset_system_values()}
            if kind not in allowed:
                raise RedfishError(self.address, "bad-request", f"reset {kind} failed: the system allows only {', '.join(sorted(allowed))}")
            self._system.reset_system(sushy.ResetType(kind))

        self._call(f"reset {kind}", post)

    def power_watts(self) -> float | None:
        """The node's input power now (W), or None when the BMC reports none."""
        return self._call("read the power", self._read_watts)

    def _read_watts(self) -> float | None:
        conn = self._root._conn  # sushy parses neither PowerControl nor Sensors readings: raw GETs
        links = self._system.json.get("Links", {}).get("Chassis") or []
        chassis_paths = [c["@odata.id"] for c in links if isinstance(c, dict) and "@odata.id" in c]
        if not chassis_paths:
            chassis_paths = [m.path for m in self._root.get_chassis_collection().get_members()]
        for path in chassis_paths:
            chassis = conn.get(path).json()
            power_link = (chassis.get("Power") or {}).get("@odata.id")
            if power_link:
                controls = conn.get(power_link).json().get("PowerControl") or []
                watts = controls[0].get("PowerConsumedWatts") if controls else None
                if isinstance(watts, int | float):
                    return float(watts)
            sensors_link = (chassis.get("Sensors") or {}).get("@odata.id")
            if sensors_link:
                for member in conn.get(sensors_link).json().get("Members") or []:
                    sensor = conn.get(member["@odata.id"]).json()
                    if sensor.get("ReadingType") == "Power" and isinstance(sensor.get("Reading"), int | float):
                        return float(sensor["Reading"])
        return None

    def close(self) -> None:
        """End the session (the BMC frees it; a BMC holds few)."""
        auth, self._root._auth = self._root._auth, None
        if auth is not None:
            try:
                auth.close()
            except (sx.SushyError, requests.RequestException) as e:
                LOG.warning("BMC %s: closing the session failed: %s", self.address, scrub(str(e), self._secrets))

    def abandon(self) -> None:
        """Forget the session without telling the BMC (it does not answer; the session expires
        there). Without this, sushy's finalizer would try to end it whenever the object is collected,
        from whichever thread runs the collection, blocking that thread up to the timeout."""
        self._root._auth = None

    def __enter__(self) -> BmcClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        return _translate(self.address, what, fn, self._secrets)


def connect(
    address: str,
    credentials: Credentials,
    *,
    verify_tls: bool = True,
    ca_bundle: Path | str | None = None,
    system: str | None = None,
    timeout_s: float = 10.0,
) -> BmcClient:
    """Log in to the BMC at ``address`` (``https://host[:port]``) and find its ComputerSystem
    (``system``, or the only member of ``/redfish/v1/Systems``)."""
    verify: bool | str = str(ca_bundle) if ca_bundle is not None and verify_tls else verify_tls
    secrets = (credentials.password,)

    def login() -> BmcClient:
        root = sushy.Sushy(
            address,
            username=credentials.username,
            password=credentials.password,
            verify=verify,
            read_timeout=timeout_s,
            connect_timeout=timeout_s,
            server_side_retries=1,
            server_side_retries_delay=1,
        )
        token = root._auth.get_session_key() if hasattr(root._auth, "get_session_key") else None
        return BmcClient(address, root, root.get_system(system), (*secrets, *([token] if token else [])))

    return _translate(address, "log in", login, secrets)


def connect_entry(entry: BmcEntry, ca_dir: Path, timeout_s: float = 10.0) -> BmcClient:
    """Connect to a directory entry's BMC; its Secret's ``ca.crt`` is written once under ``ca_dir``
    (requests verifies against a file) and named by its hash."""
    ca_file = None
    if entry.ca_pem is not None:
        ca_dir.mkdir(parents=True, exist_ok=True)
        ca_file = ca_dir / f"{hashlib.sha256(entry.ca_pem.encode()).hexdigest()[:16]}.pem"
        if not ca_file.exists():
            ca_file.write_text(entry.ca_pem)
    return connect(entry.address, entry.credentials, verify_tls=entry.verify_tls, ca_bundle=ca_file, system=entry.system,
                   timeout_s=timeout_s)


def _translate(address: str, what: str, fn: Callable[[], T], secrets: tuple[str, ...]) -> T:
    """Run ``fn``; every library failure becomes one RedfishError naming the BMC and the step."""
    try:
        return fn()
    except RedfishError:
        raise
    except sx.AccessError as e:
        raise RedfishError(address, "credentials", f"{what} failed: credentials refused (HTTP {e.status_code}); check the "
                           "username and password in the node's BMC Secret", e.status_code) from None
    except sx.ResourceNotFoundError as e:
        raise RedfishError(address, "not-found", f"{what} failed: {_said(e, secrets)}", 404) from None
    except sx.BadRequestError as e:
        raise RedfishError(address, "bad-request", f"{what} failed: the BMC refused the request (HTTP 400): {_said(e, secrets)}", 400) from None
    except sx.HTTPError as e:
        conflict = e.status_code == 409
        why = "not allowed in the system's current power state" if conflict else "the BMC answered an error"
        raise RedfishError(address, "conflict" if conflict else "protocol", f"{what} failed: {why} (HTTP {e.status_code}): {_said(e, secrets)}", e.status_code) from None
    except sx.ConnectionError as e:
        text = scrub(str(e), secrets)
        if "CERTIFICATE_VERIFY_FAILED" in text or "SSLError" in text:
            raise RedfishError(address, "tls", f"{what} failed: the BMC's TLS certificate is not trusted; give its CA bundle "
                               "(ca.crt in the BMC Secret) or fix the certificate") from None
        raise RedfishError(address, "unreachable", f"{what} failed: unreachable ({_cause(text)})") from None
    except requests.RequestException as e:
        raise RedfishError(address, "unreachable", f"{what} failed: unreachable ({type(e).__name__}: {_cause(scrub(str(e), secrets))})") from None
    except sx.SushyError as e:
        raise RedfishError(address, "protocol", f"{what} failed: {scrub(str(e), secrets)}") from None
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise RedfishError(address, "protocol", f"{what} failed: unexpected answer ({type(e).__name__}: {scrub(str(e), secrets)})") from None


def _said(e: Any, secrets: tuple[str, ...]) -> str:
    """The BMC's own words: its ExtendedInfo messages, else its error message, else the status."""
    infos = [i.get("Message", "") for i in (getattr(e, "extended_info", None) or []) if isinstance(i, dict)]
    text = "; ".join(m for m in infos if m) or (getattr(e, "detail", None) or "") or f"HTTP {getattr(e, 'status_code', '?')}"
    return scrub(str(text), secrets)


def _cause(text: str) -> str:
    """The last, most specific part of a connection error (requests nests several)."""
    for marker in ("Connection refused", "timed out", "Name or service not known", "No route to host", "Connection reset"):
        if marker in text:
            return marker.lower()
    return text[-200:]
