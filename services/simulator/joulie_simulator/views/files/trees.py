"""The files-mode tick over every node's tree under ``root/<node>/``: read back the writes made
since the last tick (applied in modification-time order, refusals reverted), step the emulator,
publish what changed, ledgers first. How each part touches the disk lives in its own module
(see the package docstring).

A file that cannot be written (made immutable, a read-only mount, replaced by a directory) is
that node's fault alone: it is reported once (an ``EVENT_FILE_UNWRITABLE`` event and one line
on stdout), skipped while it fails, reported again when it works, and every other file and node
is still emulated. Issue 23 (defect 4): one immutable ``energy_uj`` ended emulation of all nodes."""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from joulie_simulator.emulation.counters import compile_counter
from joulie_simulator.emulation.emulator import EmulatedNode, Emulator
from joulie_simulator.emulation.ledgertext import ledger_json
from joulie_simulator.emulation.render import LEDGER_FILE, content
from joulie_simulator.emulation.writes import WriteOutcome
from joulie_simulator.physics.model import policies
from joulie_simulator.views.files.changes import ChangeWatch, Watched, sig
from joulie_simulator.views.files.entries import check_entry, create_entry
from joulie_simulator.views.files.ledger import COMBINED_LEDGERS
from joulie_simulator.views.files.onread import UNSUPPORTED, OnRead
from joulie_simulator.views.files.publish import JSON_BINDS, Publisher, Shown, link_to
from joulie_simulator.views.files.swap import read_file, swap_in, write_in_place


@dataclass(frozen=True)
class TickSplit:
    """Where one files-mode tick went, CPU ms by part (``bench-tick`` prints their medians), and how
    many writable files it checked with a ``stat`` because no watch could say which changed."""

    read_back_ms: float
    physics_ms: float
    ledgers_ms: float
    files_ms: float
    scanned: int


class FileTrees:
    """Mirrors every node of an emulator under ``root/<node>/``."""

    def __init__(self, root: Path, emulator: Emulator, persist_only: bool = False, watch: bool = True,
                 on_read: bool = False) -> None:
        """``persist_only``: FUSE mode, where agents read the views; keep on disk only what a restart
        resumes from (the ledger and the agent-writable limits). ``watch``: learn which writable
        files changed from inotify rather than by a stat of each one every tick. ``on_read``: write
        the counters when they are read rather than every tick, where the kernel can
        (``views.files.onread``; every counter whose mark it refuses stays on the tick)."""
        self.root = root
        self.persist_only = persist_only
        self.emu = emulator
        self.watch = watch and not persist_only
        self._watched: dict[str, list[Watched]] = {}
        self._shown: dict[str, list[Shown]] = {}
        # Current-frequency files move per socket: grouped so a tick compares one value per socket.
        self._cur_freq: dict[str, dict[int, list[Shown]]] = {}
        self._ledger: dict[str, Shown] = {}
        # Each node's key in the combined ledger, as JSON text.
        self._ledger_keys: dict[str, str] = {}
        # Per node, its faults file and the fault kinds it shows.
        self._faults: dict[str, tuple[Shown, tuple[str, ...]]] = {}
        # FUSE mode: what each persisted limit file holds (written by this process), to skip rewrites.
        self._persisted: dict[tuple[str, str], str] = {}
        self.changes = ChangeWatch()
        self.publisher = Publisher()
        self.outcomes: list[tuple[str, str, WriteOutcome]] = []
        # (node, file path) -> why it cannot be written, while it cannot.
        self.file_faults: dict[tuple[str, str], str] = {}
        self.split = TickSplit(0.0, 0.0, 0.0, 0.0, 0)
        self._scanned = 0
        # Ticks whose watches had lost events, and when that was last said.
        self.overflows = 0
        self._overflow_said = float("-inf")
        self.on_read = on_read and not persist_only
        self.onread: OnRead | None = None
        # Why no counter is written on read though asked ('' while they are, or not asked).
        self.on_read_refused = ""

    def _file_failed(self, node: str, path: str, err: OSError) -> None:
        """Report a file that cannot be written, once while it keeps failing."""
        key = (node, path)
        if key in self.file_faults:
            return
        why = f"{type(err).__name__}: {err.strerror or err}"
        self.file_faults[key] = why
        rel = self._relative(node, path)
        print(f"node {node or '(all)'}: cannot write {rel} ({why}); emulating the rest, retrying each tick",
              flush=True)
        self.emu.file_fault(node, rel, why)

    def _file_ok(self, node: str, path: str) -> None:
        if self.file_faults.pop((node, path), None) is not None:
            rel = self._relative(node, path)
            print(f"node {node or '(all)'}: {rel} is writable again", flush=True)
            self.emu.file_fault(node, rel, "")

    def _relative(self, node: str, path: str) -> str:
        """A path as the node's tree names it (events and logs stay readable)."""
        return os.path.relpath(path, os.path.join(self.root, node)) if path.startswith(str(self.root)) else path

    def ensure(self) -> None:
        """Create missing entries (a fresh tree, or one a newer profile grew); keep what exists."""
        made: set[str] = set()
        for name, n in self.emu.nodes.items():
            self._ensure_node(name, n, made)
        if self.watch:
            self.close()
            self.changes.start(self._watched)
        if self.on_read:
            if self.onread is not None:  # the counters were listed again above: marked again below
                self.onread.close()
                self.onread = None
            self._mark_counters()

    def _ensure_node(self, name: str, n: EmulatedNode, made: set[str]) -> None:
        """One node's entries on disk, and which of its files are watched (A) or published (S)."""
        base = os.path.join(self.root, name)
        fresh = not os.path.exists(os.path.join(base, LEDGER_FILE))
        tmpdir = os.path.join(base, "state", ".tmp")
        os.makedirs(tmpdir, exist_ok=True)
        watched: list[Watched] = []
        shown: list[Shown] = []
        cur: dict[int, list[Shown]] = {}
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
            group = (cur.setdefault(pols[e.bind[1]].socket, [])
                     if not self.persist_only and e.bind is not None and e.bind[0] == "pol_cur" else None)
            if group:
                # One inode per socket: every policy of the socket shows its frequency (see flush).
                link_to(group[0].path, p, os.path.join(tmpdir, "cur_freq.link"))
            elif fresh:
                create_entry(p, e, text)
            else:
                check_entry(base, Path(p), e, text)
            if e.kind != "file":
                continue
            if e.owner == "A":
                if self.persist_only and fresh:
                    self._persisted[(name, e.path)] = text
                watched.append(Watched(p, e, len(watched), sig(os.stat(p))))
            elif e.owner == "S" and e.bind is not None:
                f = Shown(p, os.path.join(tmpdir, os.path.basename(p)), e.bind, e.mode, text, e.bind[0] in JSON_BINDS,
                          counter=compile_counter(n.profile, n.state, e.bind))
                if e.path == LEDGER_FILE:
                    self._ledger[name] = f
                elif self.persist_only:
                    continue
                elif e.bind[0] == "faults":
                    # Changes only when a fault comes or goes: compared by the fault kinds, not re-rendered.
                    self._faults[name] = (f, n.state.faults)
                elif e.bind[0] == "pol_cur":
                    assert group is not None
                    group.append(f)
                else:
                    shown.append(f)
        self._watched[name] = watched
        self._shown[name] = shown
        self._cur_freq[name] = cur

    def _mark_counters(self) -> None:
        """Hand every counter to ``OnRead`` (filled when read, out of the tick's loop); where the kernel
        refuses, say why once and keep the tick writing them."""
        try:
            onread = OnRead(self._read_now, self.emu.file_fault)
        except OSError as err:
            self.on_read_refused = f"fanotify pre-content events unavailable ({err.strerror or err})"
            print(f"files mode: counters written every tick: {self.on_read_refused}", flush=True)
            return
        moved = kept = 0
        unsupported = False
        for name, shown in self._shown.items():
            rest = []
            base = os.path.join(self.root, name) + os.sep
            for f in shown:
                if f.counter is None or unsupported:
                    kept += f.counter is not None
                    rest.append(f)
                    continue
                try:
                    onread.mark(f.path, name, f.path[len(base):])
                except OSError as err:
                    # Refused for what the kernel or filesystem lacks: no use asking for the next one.
                    unsupported = err.errno in UNSUPPORTED and moved == 0
                    if not self.on_read_refused:
                        self.on_read_refused = f"fanotify pre-content events refused on {f.path} ({err.strerror})"
                    kept += 1
                    rest.append(f)
                    continue
                moved += 1
            self._shown[name] = rest
        if moved == 0:
            onread.close()
            print(f"files mode: counters written every tick: {self.on_read_refused or 'no counter to mark'}", flush=True)
            return
        self.publisher.close()  # the marked counters' descriptors are no longer written; the rest reopen
        self.onread = onread
        onread.start()
        print(f"files mode: {moved} counters written when read (fanotify pre-content events), {kept} every tick",
              flush=True)

    def _read_now(self, node: str, path: str) -> bytes:
        """What a counter shows now: the last tick's value, as the tick would have written it (files
        mode's values move once a tick; FUSE mode's also move between ticks)."""
        return self.emu.read(node, path, at_read_time=False)

    def watched_nodes(self) -> tuple[int, int]:
        """How many nodes inotify and fanotify watch (the rest are scanned every tick)."""
        return self.changes.watched_nodes(len(self._watched))

    def close(self) -> None:
        """Stop watching (inotify, fanotify), stop writing counters on read (readers then read what
        the files hold) and close the files kept open; the trees stay."""
        if self.onread is not None:
            self.onread.close()
            self.onread = None
        self.publisher.close()
        self.changes.close()

    def rewrite_restarted(self) -> None:
        """Put the defaults back into the writable files of nodes whose view was restarted."""
        with self.emu.lock:
            restarted, self.emu.restarted = self.emu.restarted, set()
        for name in restarted:
            n = self.emu.nodes[name]
            for w in self._watched.get(name, []):
                assert w.entry.bind is not None
                text = content(n.profile, n.state, w.entry.bind)
                try:
                    write_in_place(w.path, text.encode())
                    w.sig = sig(os.stat(w.path))
                except OSError as err:
                    self._file_failed(name, w.path, err)
                    continue
                if self.persist_only:
                    self._persisted[(name, w.entry.path)] = text

    def read_back(self) -> None:
        """Apply the writes made since the last tick, in modification-time order; revert refusals."""
        self.rewrite_restarted()
        candidates = self.changes.candidates()
        if candidates is None and self.changes.watching:
            self.overflows += 1
            if time.monotonic() - self._overflow_said >= 60:
                # Seconds of stat at 1000 Nodes: said (once a minute), so a slow tick can be told from a slow machine.
                self._overflow_said = time.monotonic()
                print(f"files mode: the watches lost events (a kernel queue overflowed, {self.overflows} times so far); "
                      "this tick checks every writable file", flush=True)
        self._scanned = 0
        for name, watched in self._watched.items():
            if candidates is not None and name not in self.changes.unwatched:
                todo = candidates.get(name)
                if not todo:
                    continue
            else:
                todo = watched
                self._scanned += len(todo)
            try:
                self._apply(name, todo)
            except OSError as err:
                # A limit file that cannot be read or normalised: that node's writes wait.
                self._file_failed(name, err.filename if isinstance(err.filename, str) else "(a writable file)", err)

    def _apply(self, name: str, todo: list[Watched]) -> None:
        """Apply one node's changed files (confirmed by their signature) and normalise what they show."""
        changed: list[tuple[int, Watched, bytes, tuple[int, int, int] | None]] = []
        for w in todo:
            try:
                now = sig(os.stat(w.path))
            except FileNotFoundError:
                changed.append((0, w, b"", None))
                continue
            if now != w.sig:
                changed.append((now[0], w, read_file(w.path), now))
        if not changed:
            return
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
                write_in_place(w.path, shown)
                seen = sig(os.stat(w.path))
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
                    try:
                        write_in_place(os.path.join(self.root, name, path), text.encode())
                    except OSError as err:
                        self._file_failed(name, os.path.join(self.root, name, path), err)
                        continue
                    persisted[(name, path)] = text

    def flush_ledgers(self, per_node_every: int = 10) -> None:
        """Every node's ledger in one file under the root (one write per tick however many nodes),
        and each node's own ledger every ``per_node_every`` ticks (spread: a tenth of the nodes
        each tick by default). A restart takes whichever is later, so counters never go back."""
        keys = self._ledger_keys
        parts = []
        for name, n in self.emu.nodes.items():
            key = keys.get(name)
            if key is None:
                key = keys[name] = f"{json.dumps(name)}: "
            parts.append(key + ledger_json(n.state).strip())
        tmp = os.path.join(self.root, f".{COMBINED_LEDGERS}.tmp")
        path = os.path.join(self.root, COMBINED_LEDGERS)
        try:
            swap_in(tmp, path, ("{" + ",\n".join(parts) + "}\n").encode(), 0o644)
        except OSError as err:
            self._file_failed("", path, err)  # the node ledgers still resume a restart
        else:
            if self.file_faults:
                self._file_ok("", path)
        self.flush_node_ledgers(self.emu.tick_count % per_node_every, per_node_every)

    def flush_node_ledgers(self, slot: int = 0, slots: int = 1) -> None:
        """Write the node ledgers of one slot (nodes spread over ``slots`` ticks; default all)."""
        for i, (name, n) in enumerate(self.emu.nodes.items()):
            if i % slots != slot:
                continue
            f = self._ledger[name]
            try:
                swap_in(f.tmp, f.path, ledger_json(n.state).encode(), 0o444)
            except OSError as err:
                self._file_failed(name, f.path, err)
            else:
                if self.file_faults:
                    self._file_ok(name, f.path)

    def flush(self, per_node_every: int = 10) -> None:
        """Ledgers first (``flush_ledgers``), then every emulator-owned file whose content changed
        (``flush_files``)."""
        self.flush_ledgers(per_node_every)
        self.flush_files()

    def flush_files(self) -> None:
        """Every emulator-owned file whose content changed, ledgers aside.

        A number whose length moves by at most one character is written in place (no rename: on
        ext4 a rename over a file forces its data out, about 1 ms a file, and in a watched directory
        it queues events); a larger change, and every JSON file, is swapped in whole, so a reader
        never sees half a JSON document (``publish.Publisher``)."""
        pwrite, shown = os.pwrite, self.emu.shown
        for name, n in self.emu.nodes.items():
            profile, state = n.profile, shown(n)[0]
            for f in self._shown[name]:
                counter = f.counter
                text = counter(state) if counter is not None else content(profile, state, f.bind)
                old = f.text
                if old == text:
                    continue
                if f.fd >= 0 and len(text) == len(old) and not self.file_faults:
                    # Most counters, most ticks (``Publisher.publish``'s first case), without its two
                    # calls: ~3 400 files a tick at 1000 Nodes, where a call is a tenth of the write.
                    try:
                        pwrite(f.fd, text.encode(), 0)
                    except OSError as err:
                        self._file_failed(name, f.path, err)
                        continue
                    f.text = text
                    continue
                self._publish(name, f, text)
            shown_faults = self._faults.get(name)
            if shown_faults is not None and shown_faults[1] != state.faults:
                f = shown_faults[0]
                self._faults[name] = (f, state.faults)
                text = content(profile, state, f.bind)
                if f.text != text:
                    self._publish(name, f, text)
            for sock, files in self._cur_freq[name].items():
                text = f"{round(state.sockets[sock].eff_khz)}\n"
                if files[0].text != text:
                    self._publish_linked(name, files, text)

    def _publish(self, node: str, f: Shown, text: str) -> None:
        """Publish one file; a failure is that file's (reported), not the tick's."""
        try:
            self.publisher.publish(f, text)
        except OSError as err:
            self._file_failed(node, f.path, err)
        else:
            if self.file_faults:
                self._file_ok(node, f.path)

    def _publish_linked(self, node: str, files: list[Shown], text: str) -> None:
        """Publish one socket's current frequency: its policies' files are hard links to one inode,
        so one in-place write shows it in all of them (a write per policy was 192 writes a socket,
        and the first tick at 1000 Nodes rewrote 250 000 files). A new length gets a new inode,
        linked into every policy's place one rename at a time (a reader sees old or new, whole)."""
        try:
            self.publisher.publish_linked(files, text)
        except OSError as err:
            self._file_failed(node, files[0].path, err)
        else:
            if self.file_faults:
                self._file_ok(node, files[0].path)

    def tick(self, dt_s: float | None = None) -> None:
        """One files-mode tick: read back writes, step the physics by ``dt_s`` (default: the tick
        length), publish (``split``: where it went)."""
        clock = time.thread_time  # this thread's: the parts add up to the tick (the event thread is not the tick)
        c0 = clock()
        self.read_back()
        c1 = clock()
        self.emu.dirty.clear()
        self.emu.tick(dt_s)
        c2 = clock()
        self.flush_ledgers()
        c3 = clock()
        self.flush_files()
        c4 = clock()
        self.split = TickSplit(1000 * (c1 - c0), 1000 * (c2 - c1), 1000 * (c3 - c2), 1000 * (c4 - c3), self._scanned)


def remove_tree(root: Path, node: str) -> None:
    shutil.rmtree(root / node, ignore_errors=True)
