"""Memory figures of a process from ``/proc/<pid>/status`` (Linux): the benchmarks print them and
the simulated cluster's reports sum them. One reader, so each figure means the same everywhere."""

from __future__ import annotations

from pathlib import Path

KIB_PER_MIB = 1024


def status_kib(field: str, pid: int | None = None) -> int | None:
    """A ``kB`` field of the status file (``VmRSS`` the resident set now, ``VmHWM`` its peak) of
    ``pid``, this process when None; None when the process is gone or has no such field (a zombie
    has no VmRSS)."""
    try:
        text = Path(f"/proc/{'self' if pid is None else pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(field + ":"):
            parts = line.split()
            return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return None


def rss_kib(pid: int | None = None) -> int:
    """The resident set in KiB; 0 for a process that is gone."""
    return status_kib("VmRSS", pid) or 0
