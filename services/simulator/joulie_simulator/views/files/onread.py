"""Files-mode counters written when they are read, not every tick: fanotify's pre-content events
(``FAN_PRE_ACCESS``, Linux 6.14; global ``CAP_SYS_ADMIN``; filesystems that opt in, as ext4 does and
tmpfs does not).

The kernel holds a reader's ``read`` of a marked file until this process answers the event; the
answer comes after the file holds the last tick's value, as the tick would have written it (FUSE
mode likewise renders a file when it is read). A files-mode tick at 1000 Nodes otherwise rewrites ~3 900 counters every second (a system call
each) that agents read every 10 s.

What the kernel does, checked on this machine (6.18, ext4): every ``read`` raises an event, the one
that finds the end of the file too (the range it reports is page-aligned: it cannot tell them apart),
so a fill writes the tick's value (the same all tick long) and only when it differs from what this
process last wrote; the event's descriptor is opened with notifications off, so the fill writes
through it without raising an event to itself, but a truncate through it still raises one (hence a
second thread for shorter contents, and events of this process let through unfilled); a file made
immutable still raises events and its fill fails (the reader sees what it holds; said once); when
the group closes, held readers go on. Pure I/O: what a file shows comes from ``fill``."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import queue
import select
import struct
import threading
from collections.abc import Callable

from joulie_simulator.views.files.inotify import libc_error

FAN_CLASS_PRE_CONTENT = 0x08
FAN_PRE_ACCESS = 0x00100000
_FAN_CLOEXEC = 0x1
_FAN_MARK_ADD = 0x1
_FAN_ALLOW = 0x1
_FAN_META = struct.Struct("IBBHQii")
_FAN_RESPONSE = struct.Struct("iI")
_AT_FDCWD = -100

# A mark refused for these: the kernel, the filesystem or the privileges lack pre-content events.
UNSUPPORTED = (errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM, errno.ENOSYS, errno.EACCES)

Fill = Callable[[str, str], bytes | None]
"""(node, path in its tree) -> the file's content now; None: leave it as it is."""
Fault = Callable[[str, str, str], None]
"""(node, path in its tree, why it cannot be written; '' when it can again), as ``Emulator.file_fault``."""


class OnRead:
    """One fanotify pre-content group over the counters of every node: ``mark`` each, ``start``
    the thread that fills them as they are read, ``close`` (readers then read what the files hold)."""

    def __init__(self, fill: Fill, fault: Fault | None = None) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        init, mark = libc.fanotify_init, libc.fanotify_mark
        init.argtypes, init.restype = [ctypes.c_uint, ctypes.c_uint], ctypes.c_int
        mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
        mark.restype = ctypes.c_int
        # O_RDWR: the event's descriptor is the one the fill writes through.
        fd = int(init(FAN_CLASS_PRE_CONTENT | _FAN_CLOEXEC, os.O_RDWR | os.O_LARGEFILE | os.O_CLOEXEC))
        if fd < 0:
            raise libc_error("fanotify_init(FAN_CLASS_PRE_CONTENT)")
        self.fd = fd
        self._mark = mark
        self._fill = fill
        self._fault = fault
        self._files: dict[tuple[int, int], tuple[str, str]] = {}
        self._failing: set[tuple[str, str]] = set()
        self._written: dict[tuple[str, str], bytes] = {}
        self._pid = os.getpid()
        self._cuts: queue.SimpleQueue[tuple[int, bytes] | None] = queue.SimpleQueue()
        self._stop_r, self._stop_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._cutter: threading.Thread | None = None
        self._fill_error_said = False
        self.fills = 0
        self.events = 0

    def mark(self, path: str, node: str, rel: str) -> None:
        """Fill ``path`` when it is read; OSError when the kernel refuses (``UNSUPPORTED``: no
        pre-content events here; another errno: this file, e.g. the marks' limit)."""
        st = os.stat(path)
        if self._mark(self.fd, _FAN_MARK_ADD, FAN_PRE_ACCESS, _AT_FDCWD, os.fsencode(path)) < 0:
            raise libc_error(path)
        self._files[(st.st_dev, st.st_ino)] = (node, rel)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="files-on-read", daemon=True)
        self._cutter = threading.Thread(target=self._cut, name="files-on-read-cut", daemon=True)
        self._thread.start()
        self._cutter.start()

    def _serve(self) -> None:
        poll = select.poll()
        poll.register(self.fd, select.POLLIN)
        poll.register(self._stop_r, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poll.poll()}
            if self._stop_r in ready:
                return
            try:
                buf = os.read(self.fd, 1 << 16)
            except OSError as err:
                if err.errno in (errno.EINTR, errno.EAGAIN):
                    continue
                # Closing the group lets every held and later reader through (to what the files hold).
                print(f"files mode: reading fanotify events failed ({err}); counters are no longer written on read",
                      flush=True)
                fd, self.fd = self.fd, -1
                os.close(fd)
                return
            self._answer_all(buf)

    def _answer_all(self, buf: bytes) -> None:
        meta = _FAN_META
        off = 0
        while off + meta.size <= len(buf):
            event_len, _v, _r, _meta_len, _mask, fd, pid = meta.unpack_from(buf, off)
            off += event_len
            self.events += 1
            if fd < 0:
                continue
            if pid == self._pid:
                # This process's own access (the truncate of a fill below): let it through, no fill.
                self._answer(fd)
                continue
            try:
                shorter = self._fill_fd(fd)
            except Exception as err:  # a fill that fails must never hold a reader
                self._answer(fd)
                self._fill_failed(err)
                continue
            if shorter is None:
                self._answer(fd)
            else:
                # A truncate raises an event even through the event's descriptor: this thread must be
                # free to answer it, so another thread cuts the file and answers the reader.
                self._cuts.put((fd, shorter))

    def _answer(self, fd: int) -> None:
        try:
            if self.fd >= 0:
                os.write(self.fd, _FAN_RESPONSE.pack(fd, _FAN_ALLOW))
        except OSError:
            pass  # the group is closing: the kernel lets its held readers through
        finally:
            os.close(fd)

    def _fill_fd(self, fd: int) -> bytes | None:
        """Write what the file shows now over what it holds (nothing when the same: a reader's read to
        the end of the file, or another reader within the tick). The content when it is shorter than
        the file, for ``_cut``; None when done."""
        st = os.fstat(fd)
        key = self._files.get((st.st_dev, st.st_ino))
        if key is None:
            return None
        try:
            data = self._fill(*key)
        except OSError:
            return None  # the node's view is faulted: the reader sees what the file holds
        if data is None or (self._written.get(key) == data and st.st_size == len(data)):
            return None
        if st.st_size > len(data):
            return data
        self._write(fd, key, data)
        return None

    def _write(self, fd: int, key: tuple[str, str], data: bytes) -> None:
        try:
            os.pwrite(fd, data, 0)
        except OSError as err:
            self._written.pop(key, None)
            if key not in self._failing:
                self._failing.add(key)
                why = f"{type(err).__name__}: {err.strerror or err}"
                print(f"node {key[0]}: cannot write {key[1]} on read ({why}); readers see what it holds", flush=True)
                if self._fault is not None:
                    self._fault(key[0], key[1], why)
            return
        self._written[key] = data
        self.fills += 1
        if key in self._failing:
            self._failing.discard(key)
            print(f"node {key[0]}: {key[1]} is written on read again", flush=True)
            if self._fault is not None:
                self._fault(key[0], key[1], "")

    def _cut(self) -> None:
        """Shorter contents: the old number loses its newline first (still the old value), then the new
        one is written, then the reader is let through."""
        while (item := self._cuts.get()) is not None:
            fd, data = item
            try:
                st = os.fstat(fd)
                key = self._files.get((st.st_dev, st.st_ino))
                if key is not None:
                    with contextlib.suppress(OSError):  # immutable, say: the write below says it
                        os.ftruncate(fd, len(data))
                    self._write(fd, key, data)
            except Exception as err:  # this thread must go on: the next shorter value's reader waits on it
                self._fill_failed(err)
            finally:
                self._answer(fd)

    def _fill_failed(self, err: Exception) -> None:
        if not self._fill_error_said:
            self._fill_error_said = True
            print(f"files mode: a counter's fill on read failed ({type(err).__name__}: {err}); its reader read "
                  "what the file holds (said once)", flush=True)

    def close(self) -> None:
        """Stop the threads, then close the group: readers held go on, later ones read what the files hold.
        The cutting thread stops first, while this one still answers its truncates."""
        if self._cutter is not None:
            self._cuts.put(None)
            self._cutter.join(timeout=10)
            self._cutter = None
        if self._thread is not None:
            os.write(self._stop_w, b"x")
            self._thread.join(timeout=10)
            self._thread = None
        while not self._cuts.empty():
            item = self._cuts.get()
            if item is not None:
                self._answer(item[0])
        for fd in (self.fd, self._stop_r, self._stop_w):
            if fd >= 0:
                os.close(fd)
        self.fd = self._stop_r = self._stop_w = -1
