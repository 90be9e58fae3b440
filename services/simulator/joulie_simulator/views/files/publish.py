"""Emulator-owned files (counters, current frequencies, GPU state, ledgers), rewritten only when
their content changes: a number in place when its length moves by at most one character (one
``pwrite`` on a descriptor kept open, within a share of the descriptor limit), anything else
swapped in whole (``swap.swap_in``), so a reader sees the old or the new value, never half a JSON
document."""
from __future__ import annotations

import contextlib
import os
import resource
from dataclasses import dataclass

from joulie_simulator.emulation.counters import Counter
from joulie_simulator.emulation.render import Bind
from joulie_simulator.views.files.swap import swap_in

# Binds rendered as JSON: always replaced whole.
JSON_BINDS = ("gpus_json", "faults", "ledger")


@dataclass(eq=False)
class Shown:
    """An emulator-owned file: where it is, its temp file (same filesystem), what it shows."""

    path: str
    tmp: str
    bind: Bind
    mode: int
    text: str
    # JSON (or a file this process may not open for writing): always temp file + rename.
    atomic: bool = False
    # Kept open for in-place rewrites (one pwrite a tick instead of open, write, close); -1: not open.
    fd: int = -1
    # Counters change every tick and are kept open, as is the one inode a socket's current-frequency
    # files share (``Publisher.publish_linked``); within the descriptor budget.
    keep_open: bool = True
    # A per-tick counter's text as a function of the node's state (``emulation.counters``); None:
    # rendered by ``render.content``.
    counter: Counter | None = None


def fd_budget(soft: int) -> int:
    """How many emulator-owned files may stay open under a soft descriptor limit: half of what is
    left past 1024 kept for the rest (sockets of the BMCs, the servers, the watches). At 1000 Nodes
    about 7000 counters change every tick; one kept closed costs an open and a close a tick."""
    return max(0, (soft - 1024) // 2)


def raise_fd_limit() -> int:
    """The soft descriptor limit, raised to the hard one first where it is lower (as Go programs
    do at start): a soft limit of 1024 would keep every counter of a large cluster closed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if resource.RLIM_INFINITY not in (soft, hard) and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # a limit the platform refuses: keep the soft one
    return 1 << 20 if soft == resource.RLIM_INFINITY else soft


class Publisher:
    """Writes new contents into :class:`Shown` files and owns the descriptors kept open for them."""

    def __init__(self) -> None:
        self._open: list[Shown] = []
        self._fds_left = fd_budget(raise_fd_limit())

    def _fd(self, f: Shown) -> int:
        """A descriptor to write ``f`` in place (kept open within the budget), or -1 when this
        process may not open it for writing (``f`` is then published atomically from now on)."""
        if f.fd >= 0:
            return f.fd
        try:
            fd = os.open(f.path, os.O_WRONLY | os.O_CLOEXEC)
        except PermissionError:
            # Not root: a 0444 file cannot be opened for writing; rename is still allowed.
            f.atomic = True
            return -1
        if f.keep_open and self._fds_left > 0:
            f.fd = fd
            self._fds_left -= 1
            self._open.append(f)
        return fd

    def _done(self, f: Shown, fd: int) -> None:
        if f.fd < 0:
            os.close(fd)

    def _drop_fd(self, f: Shown) -> None:
        """The file is about to be replaced: a kept descriptor would write to the old one."""
        if f.fd >= 0:
            os.close(f.fd)
            f.fd = -1
            self._fds_left += 1

    def _in_place(self, f: Shown, data: bytes) -> bool:
        """Write a number and its newline over the one ``f`` shows, in its inode, when the length
        moves by at most one character (a counter passing a power of ten, a frequency gaining a
        digit): longer, one ``pwrite``; shorter, the old number loses its newline first (still the
        old value), then the new one is written. A reader sees the old or the new value either way.
        False: the file must be replaced whole (JSON, a larger change, a file this process may not
        open for writing)."""
        if f.atomic or abs(len(data) - len(f.text)) > 1 or not (data.endswith(b"\n") and f.text.endswith("\n")):
            return False
        fd = self._fd(f)
        if fd < 0:
            return False
        try:
            if len(data) < len(f.text):
                os.ftruncate(fd, len(data))
            os.pwrite(fd, data, 0)
        finally:
            self._done(f, fd)
        return True

    def publish(self, f: Shown, text: str) -> None:
        if f.fd >= 0 and len(text) == len(f.text):
            # Most counters, most ticks: kept open, same length.
            os.pwrite(f.fd, text.encode(), 0)
            f.text = text
            return
        data = text.encode()
        if not self._in_place(f, data):
            self._drop_fd(f)
            swap_in(f.tmp, f.path, data, f.mode)
        f.text = text

    def publish_linked(self, files: list[Shown], text: str) -> None:
        """New contents for files that are hard links to one inode (``link_to``): one write in place
        through the first (``_in_place``); otherwise a new inode linked into each file's place by a
        rename (atomic per file, one directory event each)."""
        first = files[0]
        data = text.encode()
        if self._in_place(first, data):
            for f in files:
                f.text = text
            return
        self._drop_fd(first)
        new = first.tmp + ".new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(new)
        fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, first.mode)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        try:
            for f in files:
                link_to(new, f.path, first.tmp + ".link", check=False)
                f.text = text
        finally:
            os.unlink(new)

    def close(self) -> None:
        """Close the descriptors kept open (the files stay)."""
        for f in self._open:
            if f.fd >= 0:
                os.close(f.fd)
                f.fd = -1
        self._open.clear()
        self._fds_left = fd_budget(raise_fd_limit())


def link_to(target: str, path: str, tmp: str, check: bool = True) -> None:
    """Make ``path`` a hard link to ``target`` (same filesystem), replacing what is there in one
    rename through ``tmp``. ``check``: nothing to do when it already is one (a resumed tree)."""
    if check:
        try:
            if os.path.samefile(target, path):
                return
        except FileNotFoundError:
            pass
    try:
        os.link(target, tmp)
    except FileExistsError:  # left by an interrupted run
        os.unlink(tmp)
        os.link(target, tmp)
    os.replace(tmp, path)
