"""How often E0's per-board locks differ from one lock per node: counts each apply of a GPU node's spec.

Run from benchmark/ with the dev environment (R=<repo> . /tmp/devenv.sh): python perboard_diag.py
"""

from collections import Counter

import joulie_bench.agentcaps as ac
from joulie_api.generated.nodetwin import NodeTwinSpec
from joulie_bench.cli import main

stats: Counter[str] = Counter()
orig = ac.AgentCaps.apply_lock


def apply_lock(self: ac.AgentCaps, node: str, spec: NodeTwinSpec) -> None:
    gpu = spec.gpu
    entries = (gpu.clock_locks or []) if gpu is not None else []
    running = self.emu.node(node).state.gpus
    if self._files[node].nvml_locks:
        stats["gpu node applies"] += 1
        if entries:
            stats["with a lock"] += 1
            boards = sum(len(e.gpus) for e in entries)
            if len({e.pct_of_max for e in entries}) > 1:
                stats["entries at different clocks"] += 1
            if boards < len(running):
                stats["some boards left unlocked"] += 1
            stats[f"entries={len(entries)}"] += 1
    orig(self, node, spec)


ac.AgentCaps.apply_lock = apply_lock  # type: ignore[method-assign]
try:
    main(["--preset", "gpu-busy", "--seeds", "2", "--first-seed", "1011", "--policies", "A,E0", "--out", "/tmp/h44/diag"])
finally:
    for k, v in sorted(stats.items()):
        print(f"DIAG {k}: {v}")
