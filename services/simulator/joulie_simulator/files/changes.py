"""Which agent-writable files changed since the last tick: inotify on their directories while its
budget lasts, fanotify (a budget of its own) for the nodes left over, a ``stat`` of every writable
file for the nodes left after both, and for every node after a queue overflow.

Only an accelerator: each reported file is still confirmed by its (mtime, size, inode)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from joulie_simulator.files.fanotify import FanWatch
from joulie_simulator.files.inotify import DirWatch
from joulie_simulator.render import Entry


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
        fan = {name for key, (name, _) in self.by_wd.items() if isinstance(key, bytes)}
        return total - len(self.unwatched) - len(fan), len(fan)

    def candidates(self) -> dict[str, list[Watched]] | None:
        """Per node, the writable files the watches saw change since the last tick (``None``: scan them all)."""
        watchers = [w for w in (self.dirwatch, self.fanwatch) if w is not None]
        if not watchers:
            return None
        by_wd = self.by_wd
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
                    self.unwatched.add(hit[0])
        if overflow:
            pending.clear()
            return None
        self._pending = {}
        return {name: sorted(ws, key=lambda w: w.index) for name, ws in pending.items()}

    def close(self) -> None:
        """Stop watching (inotify, fanotify)."""
        for watcher in (self.dirwatch, self.fanwatch):
            if watcher is not None:
                watcher.close()
        self.dirwatch = self.fanwatch = None
        self.by_wd.clear()
        self._pending.clear()
