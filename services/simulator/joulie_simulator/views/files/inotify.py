"""inotify(7) through libc (ctypes): which files of the watched directories changed.

The event bits are shared with fanotify (``fanotify`` imports them from here), and so is the
descriptor handling (:class:`FdWatch`)."""
from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Iterator

# What a write (once its writer closes the file), a touch, a rename over or a removal of a watched
# directory's file raises; the watch itself going away; the kernel's queue overflowing.
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED, IN_ONLYDIR = 0x400, 0x800, 0x4000, 0x8000, 0x1000000
# A file of the directory was written and closed, appeared or went (fanotify reports the same bits).
# IN_CLOSE_WRITE, not IN_MODIFY: the emulator's own counters, kept open and rewritten in place each
# tick, share directories with the limits (a RAPL zone holds energy_uj beside its constraints), and
# IN_MODIFY queued an event for each of them every tick (up to ~4 400 at 1000 Nodes) that the drain
# thread then read and threw away. A writer that holds a limit open and writes again is seen when it closes
# (echo, the agents, every tool here closes after one write).
IN_CHANGES = IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
_WATCH_MASK = IN_CHANGES | IN_ONLYDIR
_LOST = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
_EVENT = struct.Struct("iIII")


def libc_error(what: str) -> OSError:
    """The OSError for the errno libc just set, naming the call or the path."""
    err = ctypes.get_errno()
    return OSError(err, os.strerror(err), what)


class FdWatch:
    """A kernel notification descriptor, closed once."""

    fd = -1

    def _reads(self) -> Iterator[bytes]:
        """The queued event buffers, until the non-blocking descriptor has none left."""
        while True:
            try:
                yield os.read(self.fd, 1 << 18)
            except BlockingIOError:
                return

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()


class DirWatch(FdWatch):
    """inotify on directories (Linux, through libc): which files of the watched directories changed.

    Only an accelerator: the files-mode tick still compares each reported file's (mtime, size,
    inode) with what it last saw, and scans every writable file of a node whose watch was lost,
    or of every node when the kernel's event queue overflowed."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise libc_error("inotify_init1")
        self.fd: int = fd
        self._add = libc.inotify_add_watch
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._add.restype = ctypes.c_int

    def add(self, path: str) -> int:
        wd = int(self._add(self.fd, os.fsencode(path), _WATCH_MASK))
        if wd < 0:
            raise libc_error(path)
        return wd

    def drain(self) -> tuple[list[tuple[int, bytes]], set[int], bool]:
        """Events since the last drain: (watch, file name) pairs, the watches lost, whether the queue overflowed."""
        changed: list[tuple[int, bytes]] = []
        lost: set[int] = set()
        overflow = False
        for buf in self._reads():
            off = 0
            while off < len(buf):
                wd, mask, _cookie, length = _EVENT.unpack_from(buf, off)
                if mask & IN_Q_OVERFLOW:
                    overflow = True
                elif mask & _LOST:
                    lost.add(wd)
                elif length:
                    changed.append((wd, buf[off + 16 : off + 16 + length].rstrip(b"\0")))
                off += 16 + length
        return changed, lost, overflow
