"""The state directory's lock: whoever starts or stops a process of the cluster (``up``, ``deploy``,
``reload``, ``down``, the supervisor) holds it while it changes the processes and the env files
that record them, so the supervisor never restarts what a command is stopping on purpose, and never
writes a PID over the one a command just recorded.

An ``flock`` on ``<state>/supervisor.lock``: released by the kernel when its holder dies. Reentrant
within one process (a flock taken twice through two open files would wait on itself).
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_held: dict[Path, tuple[int, int]] = {}  # lock path -> (fd, depth) in this process
_mutex = threading.RLock()


def lock_path(root: Path) -> Path:
    return root / "supervisor.lock"


@contextmanager
def changing(root: Path, *, wait: bool = True) -> Iterator[bool]:
    """Holds the state dir's lock for the block. With ``wait=False`` yields False at once when
    another process holds it (the supervisor skips a round rather than wait)."""
    path = lock_path(root)
    with _mutex:
        if path in _held:
            fd, depth = _held[path]
            _held[path] = (fd, depth + 1)
            try:
                yield True
            finally:
                fd, depth = _held[path]
                _held[path] = (fd, depth - 1)
            return
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            yield False
            return
        _held[path] = (fd, 1)
        try:
            yield True
        finally:
            del _held[path]
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
