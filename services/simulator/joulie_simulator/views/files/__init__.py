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

Every module here is a shell (files, descriptors, kernel notifications); the tree's content comes
from the pure ``render`` and ``writes``. One concern a module:

- ``trees``: :class:`~joulie_simulator.views.files.trees.FileTrees`, the tick (read back, step, publish);
- ``entries``: creating a node's tree, or checking an existing one against the profile;
- ``changes``: which writable files changed (inotify, then fanotify, else a stat scan);
- ``inotify``, ``fanotify``: the kernel notification descriptors (ctypes over libc);
- ``publish``: emulator-owned files, rewritten in place or swapped in;
- ``swap``: atomic replacement (``renameat2(RENAME_EXCHANGE)``) and plain file reads and writes;
- ``ledger``: resuming a node's state from its tree (``load_states``) and :class:`TreeConflict`.

The FUSE mode (``views.fuse``) has none of the per-tick lag.
"""
