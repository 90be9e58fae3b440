"""Tick cost: milliseconds per tick for files and FUSE mode at a few cluster sizes.

``./pants run services/simulator:bench-tick -- --nodes 200,1000 [--ticks 5] [--modes files,fuse]``

Nodes cycle through the nine smoke-spec profiles; every node runs under load (the NVIDIA boards' activity
drawn as a run draws it, the simulator's default ``--telemetry-seed``: files mode every tick, for
gpus.json), and one limit per
node is written between ticks (the worst case: files mode pays its read-back, FUSE mode persists
the limit); ``--no-writes`` measures ticks without writes; ``--spec FILE`` takes a simulator spec's nodes
(a cluster's own mix) instead of the cycle. Trees go to a temp directory
(``--root`` to choose; files mode at 1000 nodes is about 3 million files: more inodes than a
default /dev/shm has). Prints one line per (mode, nodes): wall-clock ms per tick (median, max)
and the CPU ms this process spent per tick (median; user + system, the figure to compare on a
busy machine); for files mode, how many nodes inotify and fanotify watch and how many are scanned
with a ``stat`` per writable file every tick, the median CPU ms of each part of its tick (read-back,
physics, ledgers, the other files) and each tick's count of files stat-ed; for FUSE mode, the CPU ms of applying the writes between
ticks (``Emulator.write``, which files mode does inside its tick; the FUSE requests that carry them
are not counted). Not a test: nothing is gated on time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from joulie_hwprofiles.schema import Profile, builtin_profile, builtin_profile_names
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.emulation.spec import load_spec, resolve_profiles
from joulie_simulator.physics.model import Load
from joulie_simulator.views.files.trees import FileTrees


def _emulator(n: int, spec: list[tuple[str, Profile]] | None = None) -> Emulator:
    if spec is not None:
        pairs = spec
    else:
        names = builtin_profile_names()
        profiles = {p: builtin_profile(p) for p in names}
        pairs = [(f"node-{i}", profiles[names[i % len(names)]]) for i in range(n)]
    # The boards' activity drawn as a run draws it (the simulator's --telemetry-seed defaults to 0).
    emu = Emulator(pairs, tick_s=1.0, telemetry_seed=0)
    for name, node in emu.nodes.items():
        gpus = node.profile.gpus.count if node.profile.gpus else 0
        emu.set_load(name, Load(cpu_util=0.6, gpu_util=(0.8,) * gpus))
    return emu


def _a_limit(emu: Emulator, name: str) -> str | None:
    for e in emu.nodes[name].entries:
        if e.owner == "A" and e.bind is not None and e.bind[0] in ("zone_limit", "pol_max", "nvml_limit", "amdgpu_cap"):
            return e.path
    return None


def bench(
    mode: str, n: int, ticks: int, root: Path, writes: bool = True, spec: list[tuple[str, Profile]] | None = None
) -> tuple[float, float, float, float, str]:
    emu = _emulator(n, spec)
    n = len(emu.nodes)
    trees = FileTrees(root, emu, persist_only=mode == "fuse")
    t0 = time.perf_counter()
    trees.ensure()
    render_s = time.perf_counter() - t0
    watch = ""
    if mode == "files":
        inotify, fanotify = trees.watched_nodes()
        watch = f" watched: inotify={inotify} fanotify={fanotify} scanned={n - inotify - fanotify}"
    limits = {name: _a_limit(emu, name) for name in emu.nodes} if writes else {}
    costs = []
    cpu = []
    applied = []
    splits = []
    for k in range(ticks):
        applied_s = 0.0
        for name, path in limits.items():
            if path is None:
                continue
            value = emu.read(name, path).decode().strip()
            if mode == "files":
                (root / name / path).write_text(value + "\n")
            else:
                c = time.process_time()
                emu.write(name, path, value.encode())
                applied_s += time.process_time() - c
        applied.append(applied_s * 1000)
        t = time.perf_counter()
        c = time.process_time()
        if mode == "files":
            trees.tick()
            splits.append(trees.split)
        else:
            # FUSE mode: the physics and the ledgers; file content is computed when read.
            emu.tick()
            trees.flush_ledgers()
            trees.persist_writes()
        costs.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        del k
    trees.close()
    if splits:
        parts = {"read-back": [s.read_back_ms for s in splits], "physics": [s.physics_ms for s in splits],
                 "ledgers": [s.ledgers_ms for s in splits], "files": [s.files_ms for s in splits]}
        by_part = " ".join(f"{k}={statistics.median(v):.1f}" for k, v in parts.items())
        watch += (f"\n    files tick cpu median by part: {by_part} ms; writable files stat-ed (no watch could say) "
                  f"per tick: {', '.join(str(s.scanned) for s in splits)}")
    if mode == "fuse" and limits:
        # The writes FUSE mode applies as they come (files mode applies them in its tick, counted
        # there): the emulator's part only, without the FUSE requests that carry them.
        watch = f" writes applied between ticks: cpu median={statistics.median(applied):8.1f} ms"
    return render_s, statistics.median(costs), max(costs), statistics.median(cpu), watch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench-tick", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="200,1000")
    ap.add_argument("--ticks", type=int, default=5)
    ap.add_argument("--modes", default="files,fuse")
    ap.add_argument("--root", type=Path)
    ap.add_argument("--spec", type=Path, help="the nodes of a simulator spec file (as emulate --spec; simcluster writes "
                    "<state>/spec.yaml) instead of --nodes cycling through every builtin profile")
    ap.add_argument("--no-writes", action="store_true", help="no limit writes between ticks (default: one per node per tick)")
    args = ap.parse_args(argv)
    print(f"cpus={os.cpu_count()} python={sys.version.split()[0]}")
    spec = None
    if args.spec is not None:
        spec = [(e.name, prof) for e, prof in resolve_profiles(load_spec(args.spec), None, str(args.spec))]
    for mode in args.modes.split(","):
        for n in (int(x) for x in args.nodes.split(",")) if spec is None else [len(spec)]:
            root = Path(tempfile.mkdtemp(prefix="joulie-bench-", dir=args.root))
            try:
                render_s, median_ms, max_ms, cpu_ms, watch = bench(mode, n, args.ticks, root, writes=not args.no_writes, spec=spec)
                print(f"mode={mode:5} nodes={n:5} writes={'no' if args.no_writes else 'yes'} render={render_s:6.1f}s tick median={median_ms:8.1f} ms max={max_ms:8.1f} ms cpu median={cpu_ms:8.1f} ms{watch}", flush=True)
            finally:
                shutil.rmtree(root, ignore_errors=True)  # minutes for the 3 million files of files mode at 1000 nodes
    return 0


if __name__ == "__main__":
    sys.exit(main())
