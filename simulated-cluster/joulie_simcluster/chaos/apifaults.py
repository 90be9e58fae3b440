"""Pure: what the chaos API proxy (``apiproxy.py``) answers instead of kube-apiserver while a fault
holds: a 409 Conflict storm on every write, or 429 throttling (with ``Retry-After``) on every call.

The fault is a small JSON file the chaos run writes and the proxy reads on each request, so the proxy
needs no control port and a proxy the supervisor restarted picks the fault up again; a fault past its
``until_s`` is over, so a chaos run that dies mid-fault leaves no storm behind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

ApiFaultKind = Literal["conflict", "throttle"]
KINDS: tuple[ApiFaultKind, ...] = ("conflict", "throttle")
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class ApiFault:
    kind: ApiFaultKind
    until_s: float
    """Wall-clock time (Unix seconds) the fault ends at."""
    retry_after_s: int = 1
    """The ``Retry-After`` header (seconds) of a 429."""

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "untilS": self.until_s, "retryAfterS": self.retry_after_s})

    @staticmethod
    def from_json(text: str) -> ApiFault:
        """The fault of a control file; ValueError naming the field when it is not one."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"api fault: not JSON ({e})") from None
        if not isinstance(data, dict):
            raise ValueError("api fault: expected an object")
        kind = data.get("kind")
        if kind not in KINDS:
            raise ValueError(f"api fault: kind {kind!r}, expected one of {', '.join(KINDS)}")
        until, retry = data.get("untilS"), data.get("retryAfterS", 1)
        if not isinstance(until, (int, float)) or isinstance(until, bool):
            raise ValueError(f"api fault: untilS {until!r}, expected Unix seconds")
        if not isinstance(retry, int) or isinstance(retry, bool) or retry < 0:
            raise ValueError(f"api fault: retryAfterS {retry!r}, expected whole seconds >= 0")
        return ApiFault(kind, float(until), retry)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


def _status(code: int, reason: str, message: str, details: dict[str, object] | None = None) -> bytes:
    """A metav1.Status as kube-apiserver writes it: clients read ``reason`` and ``code``."""
    status: dict[str, object] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                 "message": message, "reason": reason, "code": code}
    if details:
        status["details"] = details
    return json.dumps(status).encode()


def answer(fault: ApiFault | None, method: str, path: str, now_s: float) -> Answer | None:
    """The injected answer to ``method path`` at `now_s`, or None: pass it to the API server.
    A conflict storm hits writes only (a read never conflicts); throttling hits every call."""
    if fault is None or now_s >= fault.until_s:
        return None
    json_type = (("Content-Type", "application/json"),)
    if fault.kind == "conflict":
        if method.upper() not in WRITE_METHODS:
            return None
        msg = (f"Operation cannot be fulfilled on {path.split('?', 1)[0]}: the object has been modified; "
               "please apply your changes to the latest version and try again (injected by simcluster chaos)")
        return Answer(409, json_type, _status(409, "Conflict", msg))
    msg = "the server has received too many requests and has asked us to try again later (injected by simcluster chaos)"
    return Answer(429, (*json_type, ("Retry-After", str(fault.retry_after_s))),
                  _status(429, "TooManyRequests", msg, {"retryAfterSeconds": fault.retry_after_s}))
