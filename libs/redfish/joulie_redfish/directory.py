"""Which BMC belongs to which node, and its credentials: parsed from Kubernetes Secrets. Pure.

One Secret per pool or per node (labelled ``joulie.io/bmc-credentials: "true"``), flat keys:

- ``<node>.address``: the node's BMC, ``https://host[:port]`` (a bare host means https); one per node;
- ``username``, ``password``: the pool's credentials, for every node of the Secret that has none;
- ``<node>.username``, ``<node>.password``: one node's own credentials;
- ``<node>.system``: optional, the ComputerSystem's path when the BMC lists several;
- ``ca.crt``: optional PEM bundle of the CAs that signed these BMCs' certificates;
- ``insecure-skip-tls-verify``: optional ``"true"`` turns certificate verification off (not
  recommended; the default verifies against the system's CAs or ``ca.crt``).

Node names may contain dots (DNS names): a key's field is what follows its last dot. Errors name
the Secret and the key, never a value; :class:`Credentials` keeps its password out of ``repr``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from joulie_redfish.credentials import Credentials

SECRET_LABEL = "joulie.io/bmc-credentials"
NODE_FIELDS = ("address", "username", "password", "system")
POOL_KEYS = ("username", "password", "ca.crt", "insecure-skip-tls-verify")


class DirectoryError(ValueError):
    """A Secret that cannot be read as a BMC directory: ``Secret <ns>/<name>: key '<key>': <why>``."""


@dataclass(frozen=True)
class BmcEntry:
    node: str
    address: str
    credentials: Credentials
    system: str | None = None
    ca_pem: str | None = field(default=None, repr=False)
    verify_tls: bool = True
    secret: str = ""  # <namespace>/<name>, for messages


def _decode(name: str, obj: Mapping[str, Any]) -> dict[str, str]:
    """``data`` (base64) and ``stringData`` (plain; wins, as the API server merges it)."""
    out: dict[str, str] = {}
    for key, value in (obj.get("data") or {}).items():
        try:
            out[key] = base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise DirectoryError(f"Secret {name}: key {key!r}: data is not base64 of UTF-8 text") from None
    for key, value in (obj.get("stringData") or {}).items():
        out[key] = str(value)
    return out


def normalize_address(secret: str, key: str, text: str) -> str:
    raw = text.strip()
    if not raw:
        raise DirectoryError(f"Secret {secret}: key {key!r}: empty address")
    if "://" not in raw:
        raw = f"https://{raw}"
    try:
        url = urlsplit(raw)
        url.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as e:
        raise DirectoryError(f"Secret {secret}: key {key!r}: not a URL ({e})") from None
    if url.scheme not in ("http", "https"):
        raise DirectoryError(f"Secret {secret}: key {key!r}: scheme {url.scheme!r}; expected https (or http)")
    if url.username is not None or url.password is not None:
        raise DirectoryError(f"Secret {secret}: key {key!r}: credentials belong in the username/password keys, not in the address")
    if not url.hostname:
        raise DirectoryError(f"Secret {secret}: key {key!r}: no host in the address")
    if url.path not in ("", "/") or url.query or url.fragment:
        raise DirectoryError(f"Secret {secret}: key {key!r}: the address is scheme://host[:port] only (the Redfish paths are found from /redfish/v1)")
    return f"{url.scheme}://{url.netloc}"


def parse_secret(obj: Mapping[str, Any], *, name: str | None = None) -> dict[str, BmcEntry]:
    """One Secret object (as the API returns it, a dict) -> node -> its BMC. ``name``: what messages
    call the Secret (default ``<namespace>/<name>`` from its metadata; a mounted one has none)."""
    meta = obj.get("metadata") or {}
    name = name if name is not None else f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    data = _decode(name, obj)
    per_node: dict[str, dict[str, str]] = {}
    for key, value in data.items():
        if key in POOL_KEYS:
            continue
        node, dot, fld = key.rpartition(".")
        if not dot or not node or fld not in NODE_FIELDS:
            raise DirectoryError(
                f"Secret {name}: key {key!r}: not one of {', '.join(POOL_KEYS)} nor <node>.{{{','.join(NODE_FIELDS)}}}"
            )
        per_node.setdefault(node, {})[fld] = value
    skip = data.get("insecure-skip-tls-verify", "false").strip().lower()
    if skip not in ("true", "false"):
        raise DirectoryError(f"Secret {name}: key 'insecure-skip-tls-verify': expected \"true\" or \"false\"")
    ca = data.get("ca.crt")
    if ca is not None and "-----BEGIN CERTIFICATE-----" not in ca:
        raise DirectoryError(f"Secret {name}: key 'ca.crt': not a PEM certificate bundle")
    out: dict[str, BmcEntry] = {}
    for node, fields in sorted(per_node.items()):
        if "address" not in fields:
            raise DirectoryError(f"Secret {name}: key {node + '.address'!r}: missing (the node has other keys but no BMC address)")
        user = fields.get("username", data.get("username"))
        password = fields.get("password", data.get("password"))
        if not user:
            raise DirectoryError(f"Secret {name}: key {node + '.username'!r}: missing, and the Secret has no pool-wide 'username'")
        if not password:
            raise DirectoryError(f"Secret {name}: key {node + '.password'!r}: missing, and the Secret has no pool-wide 'password'")
        system = fields.get("system")
        if system is not None and not system.startswith("/redfish/v1/Systems/"):
            raise DirectoryError(f"Secret {name}: key {node + '.system'!r}: expected a path under /redfish/v1/Systems/")
        out[node] = BmcEntry(
            node=node,
            address=normalize_address(name, f"{node}.address", fields["address"]),
            credentials=Credentials(user, password),
            system=system,
            ca_pem=ca,
            verify_tls=skip != "true",
            secret=name,
        )
    return out


def merge(secrets: Iterable[Mapping[str, Any]]) -> dict[str, BmcEntry]:
    """Every Secret's nodes in one directory; a node in two Secrets is an error naming both."""
    out: dict[str, BmcEntry] = {}
    for obj in secrets:
        for node, entry in parse_secret(obj).items():
            if node in out:
                raise DirectoryError(f"Secret {entry.secret}: key {node + '.address'!r}: node {node!r} is also in Secret {out[node].secret}")
            out[node] = entry
    return out
