"""What a user reads from the state directory without asking the cluster: a process's log
(``simcluster logs``) and a Node's emulated tree (``simcluster tree``)."""

from __future__ import annotations

import os
import sys

from joulie_simcluster.state import StateDir


def print_log(state: StateDir, component: str, node: str | None, lines: int) -> int:
    """``simcluster logs``: the last `lines` of a component's log (an agent's: its Node's). Returns the exit code."""
    name = component
    if name == "agent":
        if not node:
            print("simcluster logs agent: --node NODE is required", file=sys.stderr)
            return 2
        name = f"agent-{node}"
    path = state.log(name)
    if not path.is_file() and (state.runs / "latest" / "logs" / path.name).is_file():
        path = state.runs / "latest" / "logs" / path.name  # after down: the last run's copy (runs/ is kept)
        # Said on stderr: a cluster deployed outside a run leaves no copy, and the last run's log
        # may be of an earlier cluster.
        print(f"simcluster logs: {state.log(name)} is gone (down); the copy of run {path.parents[1].resolve().name}",
              file=sys.stderr)
    if not path.is_file():
        known = sorted(p.stem for p in state.logs.glob("*.log")) if state.logs.is_dir() else []
        print(f"simcluster logs: no log {path}; logs here: {', '.join(known) or 'none'}", file=sys.stderr)
        return 1
    text = path.read_text(errors="replace").splitlines()
    print("\n".join(text[-lines:]))
    return 0


def print_tree(state: StateDir, node: str) -> int:
    """``simcluster tree``: a Node's emulated tree as its agent sees it, one line per file with its first
    line of content. Returns the exit code."""
    env = state.read_deploy_env() or {}
    base = state.root / "hwemu" / ("fuse" if env.get("HWEMU_MODE", "fuse") == "fuse" else "") / node
    if not base.is_dir():
        print(f"simcluster tree: no tree for {node!r} at {base} (deployed nodes: {env.get('NODES', 'none')})", file=sys.stderr)
        return 1
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base)
        if path.is_symlink():
            print(f"{rel} -> {os.readlink(path)}")
        elif path.is_file():
            try:
                text = path.read_text().strip()
            except (OSError, UnicodeDecodeError) as e:
                text = f"<{type(e).__name__}>"
            first = text.splitlines()[0] if text else ""
            print(f"{rel} = {first[:80]}{' …' if len(text.splitlines()) > 1 else ''}")
    return 0
