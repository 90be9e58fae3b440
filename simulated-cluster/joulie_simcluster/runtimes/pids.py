"""Processes by PID, as the state dir records them: is it still the process we started, and stop it.

A PID alone can be reused; the start time (``/proc/<pid>/stat`` field 22) with it names one process
for good. Every process the harness starts leads its own session, so stopping one stops its group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

from joulie_simcluster.errors import RuntimeFailure


def pid_alive(pid: int, process: str | None = None) -> bool:
    """True if `pid` runs (not a zombie) and, given `process`, its argv[0] is that tool."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    state = stat.rsplit(")", 1)[-1].split()[0] if ")" in stat else "?"
    if state in ("Z", "X"):
        return False
    if process is None:
        return True
    argv0 = Path(cmdline.split(b"\0", 1)[0].decode(errors="replace")).name
    return argv0 == process or argv0.startswith(process + "-v")


def _reap(pid: int) -> None:
    # When the caller is the processes' parent (an in-process `up`), collect the exit status.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop_pids(pids: Sequence[int], grace_s: float = 10.0) -> int:
    """SIGTERM the process groups the `pids` lead, all at once, and SIGKILL those still running after
    `grace_s`. Returns how many were running. One after another, 40 pool agents blocked
    on a stalled FUSE view took 40 times the grace to stop (`down` 325 s at 1000 Nodes)."""
    running = [pid for pid in pids if pid_alive(pid)]
    left = list(running)
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, sig)
        deadline = time.monotonic() + wait_s
        while left and time.monotonic() < deadline:
            for pid in left:
                _reap(pid)
            left = [pid for pid in left if pid_alive(pid)]
            if left:
                time.sleep(0.05)
        if not left:
            return len(running)
    for pid in left:
        _reap(pid)
    survivors = [pid for pid in left if pid_alive(pid)]
    if survivors:
        raise RuntimeFailure(f"pids {', '.join(map(str, survivors))} survived SIGKILL")
    return len(running)


def start_ticks(pid: int) -> str:
    """The process's start time (clock ticks since boot, /proc/<pid>/stat field 22): with the PID it
    names one process for good, through an exec (a PEX re-executes from its unzipped copy)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def stop_pid(pid: int, process: str | None, grace_s: float = 10.0) -> bool:
    """SIGTERM the process group `pid` leads (each process has its own session), SIGKILL after
    `grace_s`. Returns False when it was not running. Only a PID still running `process` is signalled
    (None: the caller has checked who it is)."""
    if not pid_alive(pid, process):
        return False
    try:
        stop_pids([pid], grace_s)
    except RuntimeFailure:
        raise RuntimeFailure(f"{process} (pid {pid}) survived SIGKILL") from None
    return True
