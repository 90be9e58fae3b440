"""FUSE mode: every node's tree served live at ``<mountpoint>/<node>/`` (pyfuse3, one mount).

Unlike files mode, a refused write fails at write time with the kernel's errno (``writes.py``),
an accepted one takes effect at once, and counters move at read time (energy since the last tick
is added when the file is read). Every ``read`` call answers the current value (``direct_io``;
file sizes are 4096, as sysfs reports them).

Restart behaviour (documented in the README and tested): when the serving process dies, the
mount point answers ENOTCONN ("Transport endpoint is not connected") to every access. A new
simulator detaches the dead mount (lazy unmount) and mounts again at the same path; readers that
keep retrying the path recover without being restarted. A reader that holds an open file
descriptor from the old mount keeps getting ENOTCONN on it and must reopen.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pyfuse3
import trio

from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.views.priority import serve_in_real_time

ROOT = pyfuse3.ROOT_INODE
ATTR_TIMEOUT_S = 60
# The GIL switch interval while serving (Python's default: 5 ms). Every FUSE request wakes the
# serving thread, which then waits for the GIL; while the tick, the OTLP push or a gRPC call runs,
# that wait was up to one interval per request, five requests per file read.
SWITCH_INTERVAL_S = 0.0005


class EmulatorFS(pyfuse3.Operations):
    enable_writeback_cache = False

    def __init__(self, emu: Emulator) -> None:
        super().__init__()
        self.emu = emu
        # inode -> (node, path within the node; "" = the node's own directory)
        self.where: dict[int, tuple[str, str]] = {}
        self.children: dict[int, dict[bytes, int]] = {ROOT: {}}
        self.kind: dict[int, tuple[str, int, str]] = {ROOT: ("dir", 0o755, "")}  # (kind, mode, link target)
        self.owner: dict[int, str] = {}
        nxt = ROOT + 1
        for name, n in emu.nodes.items():
            node_ino = nxt
            nxt += 1
            self.children[ROOT][name.encode()] = node_ino
            self.children[node_ino] = {}
            self.kind[node_ino] = ("dir", 0o755, "")
            self.where[node_ino] = (name, "")
            by_path = {"": node_ino}
            for e in n.entries:
                parent, _, base = e.path.rpartition("/")
                ino = nxt
                nxt += 1
                self.children[by_path[parent]][base.encode()] = ino
                by_path[e.path] = ino
                self.where[ino] = (name, e.path)
                self.kind[ino] = (e.kind, e.mode, e.content if e.kind == "link" else "")
                self.owner[ino] = e.owner
                if e.kind == "dir":
                    self.children[ino] = {}

    def _attr(self, ino: int) -> pyfuse3.EntryAttributes:
        kind, mode, target = self.kind[ino]
        a = pyfuse3.EntryAttributes()
        a.st_ino = ino
        if kind == "dir":
            a.st_mode = stat.S_IFDIR | mode
            a.st_nlink = 2
        elif kind == "link":
            a.st_mode = stat.S_IFLNK | 0o777
            a.st_size = len(target)
        else:
            a.st_mode = stat.S_IFREG | mode
            a.st_size = 4096
        a.st_uid = a.st_gid = 0
        # Attributes never change (sizes are sysfs' 4096, modes fixed), so the kernel may keep them:
        # with attr_timeout 0 every open()+fstat() of a reader cost one more request (one in five
        # of a file read's GETATTR, OPEN, READ, READ, RELEASE), all served by one Python thread.
        # A view_unavailable fault still fails open, read and opendir with EIO at once.
        a.attr_timeout = ATTR_TIMEOUT_S
        a.entry_timeout = ATTR_TIMEOUT_S
        return a

    async def getattr(self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext | None = None) -> pyfuse3.EntryAttributes:
        if inode not in self.kind:
            raise pyfuse3.FUSEError(errno.ENOENT)
        self._check_view(inode)
        return self._attr(inode)

    def _check_view(self, inode: int) -> None:
        w = self.where.get(inode)
        if w is not None and any(f.kind == "view_unavailable" for f in self.emu.nodes[w[0]].faults):
            raise pyfuse3.FUSEError(errno.EIO)

    async def lookup(
        self, parent_inode: pyfuse3.InodeT, name: pyfuse3.FileNameT, ctx: pyfuse3.RequestContext | None = None
    ) -> pyfuse3.EntryAttributes:
        kids = self.children.get(parent_inode)
        if kids is None:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        if name == b".":
            return self._attr(parent_inode)
        ino = kids.get(bytes(name))
        if ino is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return self._attr(ino)

    async def readlink(self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext) -> pyfuse3.FileNameT:
        kind, _, target = self.kind[inode]
        if kind != "link":
            raise pyfuse3.FUSEError(errno.EINVAL)
        return target.encode()

    async def opendir(self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext) -> pyfuse3.FileHandleT:
        if inode not in self.children:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        self._check_view(inode)
        return inode

    async def readdir(self, fh: pyfuse3.FileHandleT, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        items = sorted(self.children[fh].items())
        for i, (name, ino) in enumerate(items[start_id:], start=start_id):
            if not pyfuse3.readdir_reply(token, name, self._attr(ino), i + 1):
                break

    async def open(self, inode: pyfuse3.InodeT, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        kind = self.kind.get(inode)
        if kind is None or kind[0] != "file":
            raise pyfuse3.FUSEError(errno.EISDIR if kind and kind[0] == "dir" else errno.ENOENT)
        self._check_view(inode)
        if flags & (os.O_WRONLY | os.O_RDWR) and self.owner.get(inode) != "A":
            raise pyfuse3.FUSEError(errno.EACCES)
        return pyfuse3.FileInfo(fh=inode, direct_io=True, keep_cache=False)

    async def read(self, fh: pyfuse3.FileHandleT, off: int, size: int) -> bytes:
        node, path = self.where[fh]
        try:
            data = self.emu.read(node, path)
        except OSError as e:
            raise pyfuse3.FUSEError(e.errno or errno.EIO) from None
        return data[off : off + size]

    async def write(self, fh: pyfuse3.FileHandleT, off: int, buf: bytes) -> int:
        node, path = self.where[fh]
        out = self.emu.write(node, path, bytes(buf))
        if not out.ok:
            raise pyfuse3.FUSEError(out.errno)
        return len(buf)

    async def setattr(
        self,
        inode: pyfuse3.InodeT,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: pyfuse3.FileHandleT | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        # O_TRUNC on a sysfs attribute is a no-op; so here. Anything else is refused.
        if fields.update_size and self.owner.get(inode) != "A":
            raise pyfuse3.FUSEError(errno.EACCES)
        if fields.update_mode or fields.update_uid or fields.update_gid:
            raise pyfuse3.FUSEError(errno.EPERM)
        return self._attr(inode)


def detach_stale(mountpoint: Path) -> bool:
    """Lazily unmount a dead FUSE mount (ENOTCONN) left by a previous process; True if one was."""
    try:
        os.stat(mountpoint)
        return False
    except OSError as e:
        if e.errno != errno.ENOTCONN:
            return False
    subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], check=False, capture_output=True)
    return True


class FuseServer:
    """Serves an emulator at ``mountpoint`` from a background thread running trio."""

    def __init__(self, emu: Emulator, mountpoint: Path, rt_priority: int = 0) -> None:
        """``rt_priority``: the serving thread's SCHED_RR priority (0: normal scheduling; see
        ``views.priority``)."""
        self.emu = emu
        self.mountpoint = mountpoint
        self.rt_priority = rt_priority
        self.scheduling = ""
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> None:
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        detach_stale(self.mountpoint)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        options = {"fsname=joulie-hwemu", "allow_other"}
        pyfuse3.init(EmulatorFS(self.emu), str(self.mountpoint), options)
        self._thread = threading.Thread(target=self._run, name="fuse", daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        # Said by the caller once serving (``scheduling``): this thread's stdout is not the place.
        self.scheduling = serve_in_real_time(self.rt_priority, "FUSE view")

        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            self._ready.set()
            await pyfuse3.main()

        try:
            trio.run(main)
        except BaseException as e:  # reported by stop()
            self._error = e
        finally:
            self._ready.set()

    def stop(self) -> None:
        """Leave the main loop and unmount; the mount point is empty again afterwards."""
        if self._token is not None and self._thread is not None and self._thread.is_alive():
            trio.from_thread.run_sync(pyfuse3.terminate, trio_token=self._token)
            self._thread.join(10)
        pyfuse3.close(unmount=True)
        self._token = None
