"""fanotify(7) through libc (ctypes), with directory file handles and names (Linux 5.9;
unprivileged for inode marks since 5.13): the watcher for the nodes past the inotify budget."""
from __future__ import annotations

import ctypes
import os
import struct

from joulie_simulator.views.files.inotify import (
    IN_CHANGES,
    IN_DELETE_SELF,
    IN_MOVE_SELF,
    IN_Q_OVERFLOW,
    FdWatch,
    libc_error,
)

_FAN_CLOEXEC, _FAN_NONBLOCK, _FAN_REPORT_DFID_NAME = 0x1, 0x2, 0xC00
_FAN_MARK_ADD, _FAN_MARK_ONLYDIR = 0x1, 0x8
_FAN_ONDIR, _FAN_EVENT_ON_CHILD = 0x40000000, 0x08000000
_FAN_MASK = IN_CHANGES | _FAN_ONDIR | _FAN_EVENT_ON_CHILD  # fanotify shares these bits with inotify
_FAN_INFO_DFID_NAME = 2
_FAN_META = struct.Struct("IBBHQii")
_FAN_INFO = struct.Struct("BBH8xIi")  # header, fsid, file_handle.handle_bytes, .handle_type
_MAX_HANDLE_SZ = 128
_AT_FDCWD = -100


class FanWatch(FdWatch):
    """fanotify on directories (Linux, through libc): the same answers as
    :class:`~joulie_simulator.views.files.inotify.DirWatch`, keyed by the directory's file handle. Its
    marks count against ``fs.fanotify.max_user_marks``, a budget of their own, so the nodes past
    the inotify budget are watched here rather than scanned."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        init, mark, n2h = libc.fanotify_init, libc.fanotify_mark, libc.name_to_handle_at
        init.argtypes, init.restype = [ctypes.c_uint, ctypes.c_uint], ctypes.c_int
        mark.argtypes, mark.restype = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p], ctypes.c_int
        n2h.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        n2h.restype = ctypes.c_int
        fd = int(init(_FAN_CLOEXEC | _FAN_NONBLOCK | _FAN_REPORT_DFID_NAME, os.O_RDONLY))
        if fd < 0:
            raise libc_error("fanotify_init")
        self.fd: int = fd
        self._mark, self._n2h = mark, n2h
        self._handle = ctypes.create_string_buffer(8 + _MAX_HANDLE_SZ)
        self._mount_id = ctypes.c_int()

    def add(self, path: str) -> bytes:
        """Watch a directory; its key is its file handle (type and bytes), as events report it."""
        raw = os.fsencode(path)
        buf = self._handle
        struct.pack_into("I", buf, 0, _MAX_HANDLE_SZ)
        if self._n2h(_AT_FDCWD, raw, buf, ctypes.byref(self._mount_id), 0) < 0:
            raise libc_error(path)
        if self._mark(self.fd, _FAN_MARK_ADD | _FAN_MARK_ONLYDIR, _FAN_MASK, _AT_FDCWD, raw) < 0:
            raise libc_error(path)
        size = struct.unpack_from("I", buf, 0)[0]
        return buf.raw[: 8 + size]

    def drain(self) -> tuple[list[tuple[bytes, bytes]], set[bytes], bool]:
        """Events since the last drain: (directory handle, file name) pairs, the directories lost,
        whether the queue overflowed."""
        changed: list[tuple[bytes, bytes]] = []
        lost: set[bytes] = set()
        overflow = False
        meta, info = _FAN_META, _FAN_INFO
        for buf in self._reads():
            off = 0
            while off + meta.size <= len(buf):
                event_len, _v, _r, meta_len, mask, _fd, _pid = meta.unpack_from(buf, off)
                if mask & IN_Q_OVERFLOW:
                    overflow = True
                rec = off + meta_len
                while rec + info.size <= off + event_len:
                    kind, _pad, rec_len, size, _htype = info.unpack_from(buf, rec)
                    key = buf[rec + 12 : rec + 20 + size]
                    if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                        lost.add(key)  # reported as the directory's own handle (and name ".")
                    elif kind == _FAN_INFO_DFID_NAME:
                        changed.append((key, buf[rec + 20 + size : rec + rec_len].split(b"\0", 1)[0]))
                    rec += rec_len
                off += event_len
        return changed, lost, overflow
