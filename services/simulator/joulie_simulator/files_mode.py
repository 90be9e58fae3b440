"""Files mode: the node trees themselves on disk, synchronised with the emulator once per tick.

- A write lands in the file at once (nothing can refuse it: it is a plain file). At the next tick
  the writes made since the last one are applied in modification-time order with the kernel's
  semantics; a refused write is reverted in the file and reported as a
  ``joulie.sim.write.rejected`` event with the errno a kernel would have returned at once.
- Emulator-owned files (counters, current frequency, GPU state) are replaced atomically (temp file
  in ``state/.tmp`` + rename) only when their content changes, once per tick.
- The energy ledgers (``state/emulator.json``) are written before the counters, so after a crash
  or restart counters resume from the ledger and never go back.

The FUSE mode (``fuse_view``) has none of the per-tick lag.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from joulie_simulator.emulator import Emulator
from joulie_simulator.model import NodeState, initial_state, policies
from joulie_simulator.profiles.schema import Profile
from joulie_simulator.render import LEDGER_FILE, Entry, content, layout
from joulie_simulator.writes import WriteOutcome, apply_write


class TreeConflict(RuntimeError):
    """An existing tree belongs to another profile or node; the message names the file."""


@dataclass
class _Watched:
    path: str
    entry: Entry
    sig: tuple[int, int, int] = (0, 0, 0)


def _sig(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


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


class FileTrees:
    """Mirrors every node of an emulator under ``root/<node>/``."""

    def __init__(self, root: Path, emulator: Emulator, persist_only: bool = False) -> None:
        """``persist_only``: FUSE mode, where agents read the views; keep on disk only what a restart
        resumes from (the ledger and the agent-writable limits)."""
        self.root = root
        self.persist_only = persist_only
        self.emu = emulator
        self._watched: dict[str, list[_Watched]] = {}
        self._shown: dict[str, dict[str, str]] = {}
        self._s_entries: dict[str, list[Entry]] = {}
        self._cur_freq: dict[str, dict[int, list[Entry]]] = {}
        self.outcomes: list[tuple[str, str, WriteOutcome]] = []

    def ensure(self) -> None:
        """Create missing entries (a fresh tree, or one a newer profile grew); keep what exists."""
        for name, n in self.emu.nodes.items():
            base = self.root / name
            fresh = not (base / LEDGER_FILE).exists()
            (base / "state" / ".tmp").mkdir(parents=True, exist_ok=True)
            watched: list[_Watched] = []
            shown: dict[str, str] = {}
            for e in n.entries:
                p = base / e.path
                if self.persist_only and e.owner != "A" and e.path != LEDGER_FILE:
                    continue
                if self.persist_only:
                    p.parent.mkdir(parents=True, exist_ok=True)
                text = e.content if e.owner == "R" else (content(n.profile, n.state, e.bind) if e.bind else "")
                if fresh:
                    self._create(p, e, text)
                else:
                    self._check(base, p, e, text)
                if e.kind != "file":
                    continue
                if e.owner == "A":
                    watched.append(_Watched(str(p), e, _sig(p.stat())))
                elif e.owner == "S":
                    shown[e.path] = text
            self._watched[name] = watched
            self._shown[name] = shown
            # Current-frequency files move per socket: group them so a tick compares one value per socket.
            self._s_entries[name] = [
                e
                for e in n.entries
                if e.owner == "S" and e.path != LEDGER_FILE and e.bind is not None and e.bind[0] != "pol_cur" and not self.persist_only
            ]
            by_socket: dict[int, list[Entry]] = {}
            pols = policies(n.profile)
            for e in n.entries:
                if e.bind is not None and e.bind[0] == "pol_cur" and not self.persist_only:
                    by_socket.setdefault(pols[e.bind[1]].socket, []).append(e)
            self._cur_freq[name] = by_socket

    @staticmethod
    def _create(p: Path, e: Entry, text: str) -> None:
        if e.kind == "dir":
            os.makedirs(p, exist_ok=True)
        elif e.kind == "link":
            os.symlink(e.content, p)
        else:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, e.mode)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)

    def _check(self, base: Path, p: Path, e: Entry, text: str) -> None:
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
                self._create(p, e, text)
        elif e.owner == "R":
            if not p.exists() or p.read_text() != e.content:
                self._replace(base, p, e.content, e.mode)
        else:
            self._replace(base, p, text, e.mode)

    def _replace(self, base: Path, path: Path, text: str, mode: int) -> None:
        # Temp file + rename: a reader sees the old or the new content, never a torn one.
        tmp = os.path.join(base, "state", ".tmp", os.path.basename(path))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
        os.replace(tmp, path)

    def rewrite_restarted(self) -> None:
        """Put the defaults back into the writable files of nodes whose view was restarted."""
        with self.emu.lock:
            restarted, self.emu.restarted = self.emu.restarted, set()
        for name in restarted:
            n = self.emu.nodes[name]
            for w in self._watched.get(name, []):
                assert w.entry.bind is not None
                with open(w.path, "w") as f:
                    f.write(content(n.profile, n.state, w.entry.bind))
                w.sig = _sig(os.stat(w.path))

    def read_back(self) -> None:
        """Apply the writes made since the last tick, in modification-time order; revert refusals."""
        self.rewrite_restarted()
        for name, watched in self._watched.items():
            changed: list[tuple[int, _Watched, bytes]] = []
            for w in watched:
                try:
                    st = os.stat(w.path)
                except FileNotFoundError:
                    st = None
                if st is not None and _sig(st) == w.sig:
                    continue
                data = Path(w.path).read_bytes() if st is not None else b""
                changed.append((st.st_mtime_ns if st else 0, w, data))
            changed.sort(key=lambda c: c[0])
            for _, w, data in changed:
                out = self.emu.write(name, w.entry.path, data)
                self.outcomes.append((name, w.entry.path, out))
            del self.outcomes[:-1000]
            n = self.emu.nodes[name]
            for _, w, data in changed:
                assert w.entry.bind is not None
                shown = content(n.profile, n.state, w.entry.bind)
                if data != shown.encode():
                    # Normalise in place (an agent holding the file sees the kernel's value).
                    with open(w.path, "w") as f:
                        f.write(shown)
                w.sig = _sig(os.stat(w.path))

    def persist_writes(self) -> None:
        """FUSE mode: copy the limits written through the views into the trees, for a restart to resume."""
        self.rewrite_restarted()
        with self.emu.lock:
            dirty, self.emu.dirty = self.emu.dirty, {}
        for name, paths in dirty.items():
            n = self.emu.nodes[name]
            for path in paths:
                e = n.by_path[path]
                assert e.bind is not None
                (self.root / name / path).write_text(content(n.profile, n.state, e.bind))

    def flush_ledgers(self, per_node_every: int = 10) -> None:
        """FUSE mode: every node's ledger in one file under the root (one write per tick however
        many nodes), and each node's own ledger every ``per_node_every`` ticks (spread: a tenth of
        the nodes each tick by default). A restart takes whichever is later, so counters never go back."""
        parts = []
        for name, n in self.emu.nodes.items():
            parts.append(f"{json.dumps(name)}: {content(n.profile, n.state, ('ledger', 0, 0)).strip()}")
        tmp = self.root / f".{COMBINED_LEDGERS}.tmp"
        tmp.write_text("{" + ",\n".join(parts) + "}\n")
        os.replace(tmp, self.root / COMBINED_LEDGERS)
        self.flush_node_ledgers(self.emu.tick_count % per_node_every, per_node_every)

    def flush_node_ledgers(self, slot: int = 0, slots: int = 1) -> None:
        """Write the node ledgers of one slot (nodes spread over ``slots`` ticks; default all)."""
        for i, (name, n) in enumerate(self.emu.nodes.items()):
            if i % slots != slot:
                continue
            base = self.root / name
            self._replace(base, base / LEDGER_FILE, content(n.profile, n.state, ("ledger", 0, 0)), 0o444)

    def flush(self) -> None:
        """Ledger first, then every emulator-owned file whose content changed."""
        for name, n in self.emu.nodes.items():
            base = self.root / name
            shown = self._shown[name]
            self._replace(base, base / LEDGER_FILE, content(n.profile, n.state, ("ledger", 0, 0)), 0o444)
            for e in self._s_entries[name]:
                assert e.bind is not None
                text = content(n.profile, n.state, e.bind)
                if shown.get(e.path) != text:
                    self._replace(base, base / e.path, text, e.mode)
                    shown[e.path] = text
            for sock, entries in self._cur_freq[name].items():
                text = f"{round(n.state.sockets[sock].eff_khz)}\n"
                if shown.get(entries[0].path) != text:
                    for e in entries:
                        self._replace(base, base / e.path, text, e.mode)
                        shown[e.path] = text

    def tick(self) -> None:
        """One files-mode tick: read back writes, step the physics, publish."""
        self.read_back()
        self.emu.dirty.clear()
        self.emu.tick()
        self.flush()


def remove_tree(root: Path, node: str) -> None:
    shutil.rmtree(root / node, ignore_errors=True)

