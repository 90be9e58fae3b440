"""A BMC Secret mounted as a volume: one file per key, read into the same directory as the API's.

Why it exists: the agent reads its own node's BMC (for the host power) from the Secret the
controller manager uses (docs/redfish.md), mounted into its pod; it has no RBAC on Secrets and
needs none. The kubelet writes each key as a file (a link into ``..data``); names starting with a
dot are its bookkeeping and are skipped. The keys and their rules are ``directory.parse_secret``'s.
"""

from __future__ import annotations

from pathlib import Path

from joulie_redfish.directory import BmcEntry, DirectoryError, parse_secret

CA_FILE = "ca.crt"


def read_mounted(secret_dir: Path) -> dict[str, BmcEntry]:
    """Node -> BMC from the Secret mounted at ``secret_dir``; DirectoryError names the directory and key."""
    label = f"mounted at {secret_dir}"
    try:
        files = sorted(p for p in secret_dir.iterdir() if not p.name.startswith(".") and p.is_file())
        keys = {p.name: p.read_text() for p in files}
    except OSError as e:
        raise DirectoryError(f"Secret {label}: unreadable ({type(e).__name__}: {e.strerror or e})") from None
    return parse_secret({"stringData": keys}, name=label)


def ca_bundle(secret_dir: Path, entry: BmcEntry) -> Path | None:
    """The mounted ``ca.crt`` to verify ``entry``'s BMC against (None: the system's CAs)."""
    return secret_dir / CA_FILE if entry.ca_pem is not None else None
