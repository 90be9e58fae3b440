"""Which agent-writable files changed since the last tick: inotify on their directories while its
budget lasts, fanotify (a budget of its own) for the nodes left over, a ``stat`` of every writable
file for the nodes left after both, and for every node after a queue overflow.

Only an accelerator: each reported file is still confirmed by its (mtime, size, inode).

The kernel's queues are drained as events arrive (a thread), not once a tick: 40 agents capping
1000 Nodes at once wrote ~50 000 files within seconds, over inotify's 16 384 queued events, and the
scan of every writable file that follows an overflow made one tick cost 5.5 s of CPU."""
from __future__ import annotations

import os
import select
import threading
from dataclasses import dataclass

from joulie_simulator.emulation.render import Entry
from joulie_simulator.views.files.fanotify import FanWatch
from joulie_simulator.views.files.inotify import DirWatch


@dataclass(eq=False)
class Watched:
    """An agent-writable file: where it is, its entry, its place in the node's list, its last signature."""

    path: str
    entry: Entry
    index: int = 0
    sig: tuple[int, int, int] = (0, 0, 0)


def sig(st: os.stat_result) -> tuple[int, int, int]:
    """What tells a rewritten file apart: (mtime, size, inode)."""
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def max_watches(limit_file: str = "/proc/sys/fs/inotify/max_user_watches", default: int = 8192) -> int:
    try:
        with open(limit_file) as f:
            limit = int(f.read())
    except (OSError, ValueError):
        return default
    # Leave a tenth of the user's watches to the other programs of the machine.
    return max(0, limit - max(1024, limit // 10))


def _directories(watched: list[Watched]) -> dict[str, dict[bytes, Watched]]:
    """A node's writable files by directory, then by file name (as events name them)."""
    dirs: dict[str, dict[bytes, Watched]] = {}
    for w in watched:
        d, _, base = w.path.rpartition("/")
        dirs.setdefault(d, {})[os.fsencode(base)] = w
    return dirs


class ChangeWatch:
    """The watches over every node's writable files, and what they reported since the last tick."""

    def __init__(self) -> None:
        self.dirwatch: DirWatch | None = None
        self.fanwatch: FanWatch | None = None
        # inotify watch descriptors (int) and fanotify directory handles (bytes) -> node, its files there.
        self.by_wd: dict[int | bytes, tuple[str, dict[bytes, Watched]]] = {}
        # Nodes scanned every tick: never watched, or a watch lost.
        self.unwatched: set[str] = set()
        self._pending: dict[str, set[Watched]] = {}
        self._overflow = False
        # Guards the watchers' queues and what was drained of them (the pump thread and the tick).
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pump: threading.Thread | None = None

    def start(self, watched: dict[str, list[Watched]]) -> None:
        """inotify on every directory holding writable files, node by node while the budget lasts,
        then fanotify (a budget of its own) for the nodes left over; the nodes left after both (or
        all, without either) are scanned every tick."""
        self.unwatched = set(watched)
        try:
            self.dirwatch = DirWatch()
        except (OSError, AttributeError):
            self.dirwatch = None
        ino_left = max_watches() if self.dirwatch is not None else 0
        fan_left = max_watches("/proc/sys/fs/fanotify/max_user_marks", default=0)
        for name, files in watched.items():
            dirs = _directories(files)
            watcher: DirWatch | FanWatch
            if self.dirwatch is not None and len(dirs) <= ino_left:
                watcher = self.dirwatch
            elif len(dirs) <= fan_left:
                if self.fanwatch is None:
                    try:
                        self.fanwatch = FanWatch()
                    except (OSError, AttributeError):
                        fan_left = 0
                        continue
                watcher = self.fanwatch
            else:
                continue
            spent = len(dirs) if self._add(watcher, name, dirs) else None
            # Out of watches before the budget said so (other programs hold some): none left of that kind.
            if watcher is self.dirwatch:
                ino_left = 0 if spent is None else ino_left - spent
            else:
                fan_left = 0 if spent is None else fan_left - spent
        if self.by_wd:
            self._stop.clear()
            self._pump = threading.Thread(target=self._drain_as_they_come, name="files-events", daemon=True)
            self._pump.start()

    def _watchers(self) -> list[DirWatch | FanWatch]:
        return [w for w in (self.dirwatch, self.fanwatch) if w is not None]

    def _drain_as_they_come(self, batch_s: float = 0.02) -> None:
        """Drain the queues whenever they hold events, at most every ``batch_s`` (a wake per batch,
        not per event, so a burst of writes costs the tick little GIL)."""
        poller = select.poll()
        for w in self._watchers():
            poller.register(w.fd, select.POLLIN)
        while not self._stop.is_set():
            if poller.poll(200):
                with self._lock:
                    if self._stop.is_set():
                        return
                    self._collect()
                self._stop.wait(batch_s)

    def _add(self, watcher: DirWatch | FanWatch, name: str, dirs: dict[str, dict[bytes, Watched]]) -> bool:
        """Watch all of a node's directories, or none (the node is then scanned)."""
        keys: list[int | bytes] = []
        try:
            for d, files in dirs.items():
                key = watcher.add(d)
                keys.append(key)
                self.by_wd[key] = (name, files)
        except OSError:
            for key in keys:
                self.by_wd.pop(key, None)
            return False
        self.unwatched.discard(name)
        return True

    def watched_nodes(self, total: int) -> tuple[int, int]:
        """How many of ``total`` nodes inotify and fanotify watch (the rest are scanned every tick)."""
        with self._lock:  # the event thread drops lost watches from by_wd
            fan = {name for key, (name, _) in self.by_wd.items() if isinstance(key, bytes)}
            return total - len(self.unwatched) - len(fan), len(fan)

    def _collect(self) -> None:
        """Move what the queues hold into the pending files (the caller holds ``_lock``)."""
        by_wd = self.by_wd
        pending = self._pending
        for watcher in self._watchers():
            events, lost, spilled = watcher.drain()
            self._overflow = self._overflow or spilled
            for wd, fname in events:
                hit = by_wd.get(wd)
                if hit is not None:
                    w = hit[1].get(fname)
                    if w is not None:
                        pending.setdefault(hit[0], set()).add(w)
            for wd in lost:
                hit = by_wd.pop(wd, None)
                if hit is not None:
                    self.unwatched.add(hit[0])

    @property
    def watching(self) -> bool:
        """Whether any watch is set (``candidates`` then says None only when events were lost)."""
        return bool(self._watchers())

    def candidates(self) -> dict[str, list[Watched]] | None:
        """Per node, the writable files the watches saw change since the last tick (``None``: scan them all)."""
        if not self._watchers():
            return None
        with self._lock:
            self._collect()
            overflow, self._overflow = self._overflow, False
            pending, self._pending = self._pending, {}
        if overflow:
            return None
        return {name: sorted(ws, key=lambda w: w.index) for name, ws in pending.items()}

    def close(self) -> None:
        """Stop watching (inotify, fanotify)."""
        self._stop.set()
        if self._pump is not None:
            self._pump.join(timeout=2)
            self._pump = None
        with self._lock:
            for watcher in self._watchers():
                watcher.close()
            self.dirwatch = self.fanwatch = None
            self.by_wd.clear()
            self._pending.clear()
