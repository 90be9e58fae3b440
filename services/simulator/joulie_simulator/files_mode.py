"""Files mode: the node trees themselves on disk, synchronised with the emulator once per tick.

- A write lands in the file at once (nothing can refuse it: it is a plain file). At the next tick
  the writes made since the last one are applied in modification-time order with the kernel's
  semantics; a refused write is reverted in the file and reported as a
  ``joulie.sim.write.rejected`` event with the errno a kernel would have returned at once.
  Which writable files changed is learnt from inotify on their directories (one watch per
  directory, within a tenth-spared share of ``fs.inotify.max_user_watches``) and, for the nodes
  past that budget, from fanotify (its own budget, ``fs.fanotify.max_user_marks``), then
  confirmed by each reported file's (mtime, size, inode); nodes without watches (neither
  available, both budgets spent, a watched directory moved or removed) and all nodes after a
  queue overflow are scanned with one ``stat`` per writable file, as before.
- Emulator-owned files (counters, current frequency, GPU state) change only when their content
  does, once per tick: a number that keeps its length is overwritten in place (one ``pwrite`` on
  a descriptor kept open, within a share of the descriptor limit); a number whose length changes
  and every JSON file are replaced atomically: the new content goes into a scratch file in
  ``state/.tmp`` that then trades places with the file (``renameat2(RENAME_EXCHANGE)``; a rename
  *over* a file on ext4 forces its data out first, about 1 ms a file).
- The energy ledgers are written before the counters: every node's in one file under the root
  (``ledgers.json``) each tick, each node's own ``state/emulator.json`` every tenth tick (and
  when the simulator stops). After a crash or restart counters resume from whichever is later,
  and never go back.

The FUSE mode (``fuse_view``) has none of the per-tick lag.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from joulie_hwprofiles.schema import Profile
from joulie_simulator.emulator import Emulator
from joulie_simulator.model import NodeState, initial_state, policies
from joulie_simulator.render import LEDGER_FILE, Bind, Entry, content, layout, ledger_json
from joulie_simulator.writes import WriteOutcome, apply_write


class TreeConflict(RuntimeError):
    """An existing tree belongs to another profile or node; the message names the file."""


@dataclass(eq=False)
class _Watched:
    path: str
    entry: Entry
    index: int = 0
    sig: tuple[int, int, int] = (0, 0, 0)


def _sig(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


# inotify(7): what a write, a truncate, a touch, a rename over or a removal of a watched directory's
# file raises; the watch itself going away; the kernel's queue overflowing.
_IN_MODIFY, _IN_ATTRIB = 0x2, 0x4
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_Q_OVERFLOW, _IN_IGNORED, _IN_ONLYDIR = 0x400, 0x800, 0x4000, 0x8000, 0x1000000
_WATCH_MASK = (
    _IN_MODIFY | _IN_ATTRIB | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
    | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR
)
_LOST = _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_IGNORED
_EVENT = struct.Struct("iIII")


class _FdWatch:
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


class DirWatch(_FdWatch):
    """inotify on directories (Linux, through libc): which files of the watched directories changed.

    Only an accelerator: the files-mode tick still compares each reported file's (mtime, size,
    inode) with what it last saw, and scans every writable file of a node whose watch was lost,
    or of every node when the kernel's event queue overflowed."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), "inotify_init1")
        self.fd: int = fd
        self._add = libc.inotify_add_watch
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._add.restype = ctypes.c_int

    def add(self, path: str) -> int:
        wd = int(self._add(self.fd, os.fsencode(path), _WATCH_MASK))
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
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
                if mask & _IN_Q_OVERFLOW:
                    overflow = True
                elif mask & _LOST:
                    lost.add(wd)
                elif length:
                    changed.append((wd, buf[off + 16 : off + 16 + length].rstrip(b"\0")))
                off += 16 + length
        return changed, lost, overflow

# fanotify(7) with directory file handles and names (Linux 5.9; unprivileged for inode marks since 5.13).
_FAN_CLOEXEC, _FAN_NONBLOCK, _FAN_REPORT_DFID_NAME = 0x1, 0x2, 0xC00
_FAN_MARK_ADD, _FAN_MARK_ONLYDIR = 0x1, 0x8
_FAN_ONDIR, _FAN_EVENT_ON_CHILD = 0x40000000, 0x08000000
_FAN_MASK = (
    _IN_MODIFY | _IN_ATTRIB | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
    | _IN_DELETE_SELF | _IN_MOVE_SELF | _FAN_ONDIR | _FAN_EVENT_ON_CHILD
)  # fanotify shares these bits with inotify
_FAN_INFO_DFID_NAME = 2
_FAN_META = struct.Struct("IBBHQii")
_FAN_INFO = struct.Struct("BBH8xIi")  # header, fsid, file_handle.handle_bytes, .handle_type
_MAX_HANDLE_SZ = 128


class FanWatch(_FdWatch):
    """fanotify on directories (Linux, through libc): the same answers as :class:`DirWatch`, keyed by
    the directory's file handle. Its marks count against ``fs.fanotify.max_user_marks``, a budget of
    their own, so the nodes past the inotify budget are watched here rather than scanned."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        init, mark, n2h = libc.fanotify_init, libc.fanotify_mark, libc.name_to_handle_at
        init.argtypes, init.restype = [ctypes.c_uint, ctypes.c_uint], ctypes.c_int
        mark.argtypes, mark.restype = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p], ctypes.c_int
        n2h.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        n2h.restype = ctypes.c_int
        fd = int(init(_FAN_CLOEXEC | _FAN_NONBLOCK | _FAN_REPORT_DFID_NAME, os.O_RDONLY))
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), "fanotify_init")
        self.fd: int = fd
        self._mark, self._n2h = mark, n2h
        self._handle = ctypes.create_string_buffer(8 + _MAX_HANDLE_SZ)
        self._mount_id = ctypes.c_int()

    def add(self, path: str) -> bytes:
        """Watch a directory; its key is its file handle (type and bytes), as events report it."""
        raw = os.fsencode(path)
        buf = self._handle
        struct.pack_into("I", buf, 0, _MAX_HANDLE_SZ)
        if self._n2h(-100, raw, buf, ctypes.byref(self._mount_id), 0) < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
        if self._mark(self.fd, _FAN_MARK_ADD | _FAN_MARK_ONLYDIR, _FAN_MASK, -100, raw) < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
        size = struct.unpack_from("I", buf, 0)[0]
        return buf.raw[: 8 + size]

    def drain(self) -> tuple[list[tuple[bytes, bytes]], set[bytes], bool]:
        changed: list[tuple[bytes, bytes]] = []
        lost: set[bytes] = set()
        overflow = False
        meta, info = _FAN_META, _FAN_INFO
        for buf in self._reads():
            off = 0
            while off + meta.size <= len(buf):
                event_len, _v, _r, meta_len, mask, _fd, _pid = meta.unpack_from(buf, off)
                if mask & _IN_Q_OVERFLOW:
                    overflow = True
                rec = off + meta_len
                while rec + info.size <= off + event_len:
                    kind, _pad, rec_len, size, _htype = info.unpack_from(buf, rec)
                    key = buf[rec + 12 : rec + 20 + size]
                    if mask & (_IN_DELETE_SELF | _IN_MOVE_SELF):
                        lost.add(key)  # reported as the directory's own handle (and name ".")
                    elif kind == _FAN_INFO_DFID_NAME:
                        changed.append((key, buf[rec + 20 + size : rec + rec_len].split(b"\0", 1)[0]))
                    rec += rec_len
                off += event_len
        return changed, lost, overflow


def _write_in_place(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2


def _renameat2() -> Any:
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _renameat2()


def _swap_in(tmp: str, path: str, data: bytes, mode: int) -> None:
    """Replace a file's content atomically: a reader sees the old or the new content, never a torn one.

    The new content goes into ``tmp`` (same filesystem), which then trades places with ``path``
    (``renameat2(RENAME_EXCHANGE)``): ``tmp`` keeps the old file, overwritten the next time. A
    rename *over* an existing file would make ext4 force the new file's data out first (its
    ``auto_da_alloc`` heuristic, about 1 ms a file); an exchange does not. Where the exchange is not
    possible (no target yet, a filesystem without it) a plain rename does the same job."""
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, mode)
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
    if _RENAMEAT2 is not None and _RENAMEAT2(-100, os.fsencode(tmp), -100, os.fsencode(path), _RENAME_EXCHANGE) == 0:
        return
    os.replace(tmp, path)


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        out = b""
        while chunk := os.read(fd, 1 << 16):
            out += chunk
        return out
    finally:
        os.close(fd)


COMBINED_LEDGERS = "ledgers.json"


def _combined(root: Path) -> dict[str, Any]:
    try:
        raw = json.loads((root / COMBINED_LEDGERS).read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return raw if isinstance(raw, dict) else {}


def load_state(root: Path, node: str, profile: Profile, combined: dict[str, Any] | None = None) -> NodeState | None:
    """Resume a node from its tree: ledgers from state/emulator.json (or the root's combined ledger
    file, whichever is at the later tick), limits from its writable files."""
    ledger_path = root / node / LEDGER_FILE
    if not ledger_path.is_file():
        return None
    try:
        led = json.loads(ledger_path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise TreeConflict(f"{ledger_path}: unreadable ledger: {e}") from e
    newer = (combined if combined is not None else _combined(root)).get(node)
    if isinstance(newer, dict) and newer.get("profile") == led.get("profile") and int(newer.get("tick", -1)) > int(led.get("tick", 0)):
        led = newer
    if led.get("profile") != profile.name or led.get("node") != node:
        raise TreeConflict(
            f"{ledger_path}: profile: the tree was rendered for {led.get('node')}/{led.get('profile')}, not {node}/{profile.name}; "
            "remove the node's directory to start it afresh"
        )
    st = initial_state(profile, node, energy_start_uj=led.get("zoneStartUJ"))
    socks = tuple(
        replace(s, energy_j=float(x["energyJ"]), dram_energy_j=float(x["dramEnergyJ"]))
        for s, x in zip(st.sockets, led["sockets"], strict=True)
    )
    gpus = tuple(replace(g, energy_j=float(x["energyJ"])) for g, x in zip(st.gpus, led["gpus"], strict=True))
    st = replace(
        st,
        sockets=socks,
        gpus=gpus,
        tick=int(led["tick"]),
        time_s=float(led["timeS"]),
        host_energy_j=float(led["hostEnergyJ"]),
        platform_energy_j=float(led["platformEnergyJ"]),
    )
    for entry in layout(profile, node):
        if entry.owner == "A" and entry.bind is not None:
            try:
                data = (root / node / entry.path).read_bytes()
            except OSError:
                continue
            st, _ = apply_write(profile, st, entry.bind, data)
    # Resume settled, as a node that kept running would be.
    st = replace(
        st,
        sockets=tuple(
            replace(s, rapl_settled_w=s.rapl_requested_w or 0.0, hsmp_settled_w=s.hsmp_requested_w or 0.0) for s in st.sockets
        ),
        gpus=tuple(replace(g, enforced_w=g.limit_w) for g in st.gpus),
    )
    return st


def load_states(root: Path, nodes: list[tuple[str, Profile]]) -> dict[str, NodeState]:
    out = {}
    combined = _combined(root)
    for name, profile in nodes:
        st = load_state(root, name, profile, combined)
        if st is not None:
            out[name] = st
    return out


@dataclass(eq=False)
class _Shown:
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
    # Counters change every tick and are kept open; current frequencies (hundreds a node, settled
    # most of the time) are not, so they do not spend the descriptors.
    keep_open: bool = True


_JSON_BINDS = ("gpus_json", "faults", "ledger")


def _max_watches(limit_file: str = "/proc/sys/fs/inotify/max_user_watches", default: int = 8192) -> int:
    try:
        with open(limit_file) as f:
            limit = int(f.read())
    except (OSError, ValueError):
        return default
    # Leave a tenth of the user's watches to the other programs of the machine.
    return max(0, limit - max(1024, limit // 10))


def _fd_budget() -> int:
    """How many emulator-owned files may stay open: a quarter of the soft descriptor limit, past 256 kept for the rest."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 16
    return max(0, (soft - 256) // 4)


class FileTrees:
    """Mirrors every node of an emulator under ``root/<node>/``."""

    def __init__(self, root: Path, emulator: Emulator, persist_only: bool = False, watch: bool = True) -> None:
        """``persist_only``: FUSE mode, where agents read the views; keep on disk only what a restart
        resumes from (the ledger and the agent-writable limits). ``watch``: learn which writable
        files changed from inotify rather than by a stat of each one every tick."""
        self.root = root
        self.persist_only = persist_only
        self.emu = emulator
        self.watch = watch and not persist_only
        self._watched: dict[str, list[_Watched]] = {}
        self._shown: dict[str, list[_Shown]] = {}
        # Current-frequency files move per socket: grouped so a tick compares one value per socket.
        self._cur_freq: dict[str, dict[int, list[_Shown]]] = {}
        self._ledger: dict[str, _Shown] = {}
        # Per node, its faults file and the fault kinds it shows.
        self._faults: dict[str, tuple[_Shown, tuple[str, ...]]] = {}
        # FUSE mode: what each persisted limit file holds (written by this process), to skip rewrites.
        self._persisted: dict[tuple[str, str], str] = {}
        self._dirwatch: DirWatch | None = None
        self._fanwatch: FanWatch | None = None
        # inotify watch descriptors (int) and fanotify directory handles (bytes) -> node, its files there.
        self._by_wd: dict[int | bytes, tuple[str, dict[bytes, _Watched]]] = {}
        self._unwatched: set[str] = set()
        self._pending: dict[str, set[_Watched]] = {}
        # Emulator-owned files kept open for in-place rewrites, within a share of the descriptor limit.
        self._open: list[_Shown] = []
        self._fds_left = _fd_budget()
        self.outcomes: list[tuple[str, str, WriteOutcome]] = []

    def ensure(self) -> None:
        """Create missing entries (a fresh tree, or one a newer profile grew); keep what exists."""
        made: set[str] = set()
        for name, n in self.emu.nodes.items():
            base = os.path.join(self.root, name)
            fresh = not os.path.exists(os.path.join(base, LEDGER_FILE))
            tmpdir = os.path.join(base, "state", ".tmp")
            os.makedirs(tmpdir, exist_ok=True)
            watched: list[_Watched] = []
            shown: list[_Shown] = []
            cur: dict[int, list[_Shown]] = {}
            pols = policies(n.profile)
            for e in n.entries:
                if self.persist_only and e.owner != "A" and e.path != LEDGER_FILE:
                    continue
                p = os.path.join(base, e.path)
                if self.persist_only:
                    parent = os.path.dirname(p)
                    if parent not in made:
                        os.makedirs(parent, exist_ok=True)
                        made.add(parent)
                text = e.content if e.owner == "R" else (content(n.profile, n.state, e.bind) if e.bind else "")
                if fresh:
                    self._create(p, e, text)
                else:
                    self._check(base, Path(p), e, text)
                if e.kind != "file":
                    continue
                if e.owner == "A":
                    if self.persist_only and fresh:
                        self._persisted[(name, e.path)] = text
                    watched.append(_Watched(p, e, len(watched), _sig(os.stat(p))))
                elif e.owner == "S" and e.bind is not None:
                    f = _Shown(p, os.path.join(tmpdir, os.path.basename(p)), e.bind, e.mode, text, e.bind[0] in _JSON_BINDS)
                    if e.path == LEDGER_FILE:
                        self._ledger[name] = f
                    elif self.persist_only:
                        continue
                    elif e.bind[0] == "faults":
                        # Changes only when a fault comes or goes: compared by the fault kinds, not re-rendered.
                        self._faults[name] = (f, n.state.faults)
                    elif e.bind[0] == "pol_cur":
                        f.keep_open = False
                        cur.setdefault(pols[e.bind[1]].socket, []).append(f)
                    else:
                        shown.append(f)
            self._watched[name] = watched
            self._shown[name] = shown
            self._cur_freq[name] = cur
        if self.watch:
            self._start_watch()

    def _start_watch(self) -> None:
        """inotify on every directory holding writable files, node by node while the budget lasts,
        then fanotify (a budget of its own) for the nodes left over; the nodes left after both (or
        all, without either) are scanned every tick."""
        self.close()
        self._unwatched = set(self._watched)
        try:
            self._dirwatch = DirWatch()
        except (OSError, AttributeError):
            self._dirwatch = None
        ino_left = _max_watches() if self._dirwatch is not None else 0
        fan_left = _max_watches("/proc/sys/fs/fanotify/max_user_marks", default=0)
        for name, watched in self._watched.items():
            dirs: dict[str, dict[bytes, _Watched]] = {}
            for w in watched:
                d, _, base = w.path.rpartition("/")
                dirs.setdefault(d, {})[os.fsencode(base)] = w
            watcher: DirWatch | FanWatch
            if self._dirwatch is not None and len(dirs) <= ino_left:
                watcher = self._dirwatch
            elif len(dirs) <= fan_left:
                if self._fanwatch is None:
                    try:
                        self._fanwatch = FanWatch()
                    except (OSError, AttributeError):
                        fan_left = 0
                        continue
                watcher = self._fanwatch
            else:
                continue
            keys: list[int | bytes] = []
            try:
                for d, files in dirs.items():
                    key = watcher.add(d)
                    keys.append(key)
                    self._by_wd[key] = (name, files)
            except OSError:
                # Out of watches before the budget said so (other programs hold some): scan this node.
                for key in keys:
                    self._by_wd.pop(key, None)
                if watcher is self._dirwatch:
                    ino_left = 0
                else:
                    fan_left = 0
                continue
            if watcher is self._dirwatch:
                ino_left -= len(dirs)
            else:
                fan_left -= len(dirs)
            self._unwatched.discard(name)

    def watched_nodes(self) -> tuple[int, int]:
        """How many nodes inotify and fanotify watch (the rest are scanned every tick)."""
        fan = {name for key, (name, _) in self._by_wd.items() if isinstance(key, bytes)}
        return len(self._watched) - len(self._unwatched) - len(fan), len(fan)

    def close(self) -> None:
        """Stop watching (inotify, fanotify) and close the files kept open; the trees stay."""
        self._close_files()
        for watcher in (self._dirwatch, self._fanwatch):
            if watcher is not None:
                watcher.close()
        self._dirwatch = self._fanwatch = None
        self._by_wd.clear()
        self._pending.clear()

    @staticmethod
    def _create(p: str, e: Entry, text: str) -> None:
        if e.kind == "dir":
            os.makedirs(p, exist_ok=True)
        elif e.kind == "link":
            os.symlink(e.content, p)
        else:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, e.mode)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)

    def _check(self, base: str, p: Path, e: Entry, text: str) -> None:
        if e.kind == "dir":
            if p.exists() and not p.is_dir():
                raise TreeConflict(f"{p}: expected a directory, found a file")
            p.mkdir(exist_ok=True)
        elif e.kind == "link":
            if not p.is_symlink():
                if p.exists():
                    raise TreeConflict(f"{p}: expected a link to {e.content}, found a {'directory' if p.is_dir() else 'file'}")
                p.symlink_to(e.content)
        elif p.is_dir():
            # An older simulator rendered refused limits as directories; resuming such a tree would change what agents see.
            raise TreeConflict(f"{p}: expected a file, found a directory (a tree from an older simulator?); remove the node's directory")
        elif e.owner == "A":
            if not p.exists():
                self._create(str(p), e, text)
        elif e.owner == "R":
            if not p.exists() or p.read_text() != e.content:
                self._put(os.path.join(base, "state", ".tmp", p.name), str(p), e.content.encode(), e.mode)
        else:
            self._put(os.path.join(base, "state", ".tmp", p.name), str(p), text.encode(), e.mode)

    @staticmethod
    def _put(tmp: str, path: str, data: bytes, mode: int) -> None:
        _swap_in(tmp, path, data, mode)

    def rewrite_restarted(self) -> None:
        """Put the defaults back into the writable files of nodes whose view was restarted."""
        with self.emu.lock:
            restarted, self.emu.restarted = self.emu.restarted, set()
        for name in restarted:
            n = self.emu.nodes[name]
            for w in self._watched.get(name, []):
                assert w.entry.bind is not None
                text = content(n.profile, n.state, w.entry.bind)
                _write_in_place(w.path, text.encode())
                w.sig = _sig(os.stat(w.path))
                if self.persist_only:
                    self._persisted[(name, w.entry.path)] = text

    def _changed_candidates(self) -> dict[str, list[_Watched]] | None:
        """Per node, the writable files inotify saw change since the last tick (``None``: scan them all)."""
        watchers = [w for w in (self._dirwatch, self._fanwatch) if w is not None]
        if not watchers:
            return None
        by_wd = self._by_wd
        pending = self._pending
        overflow = False
        for watcher in watchers:
            events, lost, spilled = watcher.drain()
            overflow = overflow or spilled
            for wd, fname in events:
                hit = by_wd.get(wd)
                if hit is not None:
                    w = hit[1].get(fname)
                    if w is not None:
                        pending.setdefault(hit[0], set()).add(w)
            for wd in lost:
                hit = by_wd.pop(wd, None)
                if hit is not None:
                    self._unwatched.add(hit[0])
        if overflow:
            pending.clear()
            return None
        self._pending = {}
        return {name: sorted(ws, key=lambda w: w.index) for name, ws in pending.items()}

    def read_back(self) -> None:
        """Apply the writes made since the last tick, in modification-time order; revert refusals."""
        self.rewrite_restarted()
        candidates = self._changed_candidates()
        for name, watched in self._watched.items():
            if candidates is not None and name not in self._unwatched:
                todo = candidates.get(name)
                if not todo:
                    continue
            else:
                todo = watched
            changed: list[tuple[int, _Watched, bytes, tuple[int, int, int] | None]] = []
            for w in todo:
                try:
                    sig = _sig(os.stat(w.path))
                except FileNotFoundError:
                    changed.append((0, w, b"", None))
                    continue
                if sig != w.sig:
                    changed.append((sig[0], w, _read(w.path), sig))
            if not changed:
                continue
            changed.sort(key=lambda c: c[0])
            for _, w, data, _sig_seen in changed:
                out = self.emu.write(name, w.entry.path, data)
                self.outcomes.append((name, w.entry.path, out))
            del self.outcomes[:-1000]
            n = self.emu.nodes[name]
            for _, w, data, seen in changed:
                assert w.entry.bind is not None
                shown = content(n.profile, n.state, w.entry.bind).encode()
                if data != shown or seen is None:
                    # Normalise in place (an agent holding the file sees the kernel's value).
                    _write_in_place(w.path, shown)
                    seen = _sig(os.stat(w.path))
                w.sig = seen

    def persist_writes(self) -> None:
        """FUSE mode: copy the limits written through the views into the trees, for a restart to resume."""
        self.rewrite_restarted()
        with self.emu.lock:
            dirty, self.emu.dirty = self.emu.dirty, {}
        persisted = self._persisted
        for name, paths in dirty.items():
            n = self.emu.nodes[name]
            for path in paths:
                e = n.by_path[path]
                assert e.bind is not None
                text = content(n.profile, n.state, e.bind)
                if persisted.get((name, path)) != text:
                    _write_in_place(os.path.join(self.root, name, path), text.encode())
                    persisted[(name, path)] = text

    def flush_ledgers(self, per_node_every: int = 10) -> None:
        """Every node's ledger in one file under the root (one write per tick however many nodes),
        and each node's own ledger every ``per_node_every`` ticks (spread: a tenth of the nodes
        each tick by default). A restart takes whichever is later, so counters never go back."""
        parts = [f"{json.dumps(name)}: {ledger_json(n.state).strip()}" for name, n in self.emu.nodes.items()]
        tmp = os.path.join(self.root, f".{COMBINED_LEDGERS}.tmp")
        self._put(tmp, os.path.join(self.root, COMBINED_LEDGERS), ("{" + ",\n".join(parts) + "}\n").encode(), 0o644)
        self.flush_node_ledgers(self.emu.tick_count % per_node_every, per_node_every)

    def flush_node_ledgers(self, slot: int = 0, slots: int = 1) -> None:
        """Write the node ledgers of one slot (nodes spread over ``slots`` ticks; default all)."""
        for i, (name, n) in enumerate(self.emu.nodes.items()):
            if i % slots != slot:
                continue
            f = self._ledger[name]
            self._put(f.tmp, f.path, ledger_json(n.state).encode(), 0o444)

    def flush(self, per_node_every: int = 10) -> None:
        """Ledgers first (``flush_ledgers``), then every emulator-owned file whose content changed.

        A number that keeps its length is overwritten in place (one write, no rename: on ext4 a
        rename over a file forces its data out, about 1 ms a file); one whose length changes, and
        every JSON file, is replaced by temp file + rename, so a reader never sees two lengths or
        half a JSON document."""
        self.flush_ledgers(per_node_every)
        for name, n in self.emu.nodes.items():
            profile, state = n.profile, n.state
            for f in self._shown[name]:
                text = content(profile, state, f.bind)
                if f.text != text:
                    self._publish(f, text)
            shown_faults = self._faults.get(name)
            if shown_faults is not None and shown_faults[1] != state.faults:
                f = shown_faults[0]
                self._faults[name] = (f, state.faults)
                text = content(profile, state, f.bind)
                if f.text != text:
                    self._publish(f, text)
            for sock, files in self._cur_freq[name].items():
                text = f"{round(state.sockets[sock].eff_khz)}\n"
                if files[0].text != text:
                    for f in files:
                        self._publish(f, text)

    def _publish(self, f: _Shown, text: str) -> None:
        data = text.encode()
        if not f.atomic and len(data) == len(f.text):
            fd = f.fd
            if fd < 0:
                try:
                    fd = os.open(f.path, os.O_WRONLY | os.O_CLOEXEC)
                except PermissionError:
                    # Not root: a 0444 file cannot be opened for writing; rename is still allowed.
                    f.atomic = True
                else:
                    if f.keep_open and self._fds_left > 0:
                        f.fd = fd
                        self._fds_left -= 1
                        self._open.append(f)
            if fd >= 0:
                try:
                    os.pwrite(fd, data, 0)
                finally:
                    if f.fd < 0:
                        os.close(fd)
                f.text = text
                return
        if f.fd >= 0:
            # The file is about to be replaced: a kept descriptor would write to the old one.
            os.close(f.fd)
            f.fd = -1
            self._fds_left += 1
        self._put(f.tmp, f.path, data, f.mode)
        f.text = text

    def _close_files(self) -> None:
        for f in self._open:
            if f.fd >= 0:
                os.close(f.fd)
                f.fd = -1
        self._open.clear()
        self._fds_left = _fd_budget()

    def tick(self) -> None:
        """One files-mode tick: read back writes, step the physics, publish."""
        self.read_back()
        self.emu.dirty.clear()
        self.emu.tick()
        self.flush()


def remove_tree(root: Path, node: str) -> None:
    shutil.rmtree(root / node, ignore_errors=True)

