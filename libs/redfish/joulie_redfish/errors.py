"""The one error a Redfish call raises: which BMC, what kind of failure, and what it said.

Kinds a caller acts on differently: ``credentials`` (401/403: the Secret is wrong; retrying does not
help), ``unreachable`` (connection refused, timeout, DNS), ``tls`` (the certificate is not trusted:
a CA bundle is missing or wrong), ``conflict`` (409: the reset is not allowed in the system's power
state), ``bad-request`` (400), ``not-found`` (404), ``protocol`` (anything else the BMC answered).

A message never carries a password or a session token: :func:`scrub` removes every secret the
client knows from the text of errors it did not write itself (a library's exception text).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

ErrorKind = Literal["credentials", "unreachable", "tls", "conflict", "bad-request", "not-found", "protocol"]


def scrub(text: str, secrets: Iterable[str]) -> str:
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text


class RedfishError(Exception):
    """``BMC <address>: <what> failed: <why>`` (``kind`` says which failure)."""

    def __init__(self, address: str, kind: ErrorKind, message: str, status: int | None = None) -> None:
        super().__init__(f"BMC {address}: {message}")
        self.address = address
        self.kind: ErrorKind = kind
        self.status = status

    def __repr__(self) -> str:
        return f"RedfishError(address={self.address!r}, kind={self.kind!r}, status={self.status!r}, message={str(self)!r})"
