"""Writing sysfs attributes. Shell: one place that turns errno into the reason a user reads."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from joulie_agent.discovery.powercap import parse_int
from joulie_agent.host.hostread import read_text

REASONS = {
    errno.EACCES: "locked or permission denied (EACCES)",
    errno.EPERM: "not permitted (EPERM)",
    errno.ENODATA: "zone disabled or limit locked (ENODATA)",
    errno.EISDIR: "not a writable attribute (EISDIR)",
    errno.EINVAL: "value rejected (EINVAL)",
    errno.EBUSY: "device busy (EBUSY)",
    errno.EROFS: "read-only filesystem (EROFS)",
    errno.ENOENT: "missing (ENOENT)",
}


def write_attr(path: Path, value: str) -> str | None:
    """Write `value` (no newline, as sysfs expects). None on success, else the reason."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except OSError as err:
        return REASONS.get(err.errno or 0, f"{err.strerror} (errno {err.errno})")
    try:
        os.write(fd, value.encode())
    except OSError as err:
        return REASONS.get(err.errno or 0, f"{err.strerror} (errno {err.errno})")
    finally:
        os.close(fd)
    return None


def read_int(path: Path) -> int | None:
    """The integer a sysfs attribute holds, or None when unreadable or garbage (``powercap.parse_int``)."""
    return parse_int(read_text(path))
