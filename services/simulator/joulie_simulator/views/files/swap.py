"""File writes a reader never sees torn: atomic replacement by ``renameat2(RENAME_EXCHANGE)``,
plus the plain reads and in-place writes of the files-mode tick (descriptor-level, no buffering)."""
from __future__ import annotations

import ctypes
import os
import shutil
from typing import Any

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2() -> Any:
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _renameat2()


def swap_in(tmp: str, path: str, data: bytes, mode: int) -> None:
    """Replace a file's content atomically: a reader sees the old or the new content, never a torn one.

    The new content goes into ``tmp`` (same filesystem), which then trades places with ``path``
    (``renameat2(RENAME_EXCHANGE)``): ``tmp`` keeps the old file, overwritten the next time. A
    rename *over* an existing file would make ext4 force the new file's data out first (its
    ``auto_da_alloc`` heuristic, about 1 ms a file); an exchange does not. Where the exchange is not
    possible (no target yet, a filesystem without it) a plain rename does the same job."""
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, mode)
    except IsADirectoryError:
        # An exchange with a directory put in place of the file left it here, in our scratch.
        shutil.rmtree(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    except PermissionError:
        # Not root: the previous content, now here, may be read-only (0444); a directory entry can still go.
        os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)  # the scratch file may have held another file of this name
        os.write(fd, data)
        # Shrink to the new length (never truncate to 0 first: ext4 then also forces the data out at close).
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
    if _RENAMEAT2 is not None and _RENAMEAT2(_AT_FDCWD, os.fsencode(tmp), _AT_FDCWD, os.fsencode(path), _RENAME_EXCHANGE) == 0:
        return
    os.replace(tmp, path)


def write_in_place(path: str, data: bytes, mode: int = 0o644) -> None:
    """Write over the file's content in its inode (a file an agent may hold open sees the new value),
    cut to the new length first when that is shorter (as ``publish.Publisher`` does).

    Never truncated to nothing: on ext4 (``auto_da_alloc``) a file truncated to zero and written again
    has its data forced out at close, about 1 ms a file. FUSE mode persists every limit the agents
    write this way: the tick that persisted a deploy's caps cost 592 ms of CPU in a 1000-Node run
    (``O_TRUNC``), the worst of the run."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        if os.fstat(fd).st_size > len(data):
            os.ftruncate(fd, len(data))
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)


def read_file(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        out = b""
        while chunk := os.read(fd, 1 << 16):
            out += chunk
        return out
    finally:
        os.close(fd)
