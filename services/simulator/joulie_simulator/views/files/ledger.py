"""Resuming from a tree: each node's ledgers (``state/emulator.json``, or the root's combined
``ledgers.json``, whichever is at the later tick) and the limits in its writable files.

The ledgers are written by :meth:`~joulie_simulator.views.files.trees.FileTrees.flush_ledgers`; this
module reads them back, so counters never go back across a restart."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from joulie_hwprofiles.schema import Profile
from joulie_simulator.emulation.render import LEDGER_FILE, content, layout
from joulie_simulator.emulation.writes import apply_write
from joulie_simulator.physics.model import NodeState, initial_state

COMBINED_LEDGERS = "ledgers.json"


class TreeConflict(RuntimeError):
    """An existing tree belongs to another profile or node; the message names the file."""


def _combined(root: Path) -> dict[str, Any]:
    try:
        raw = json.loads((root / COMBINED_LEDGERS).read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _ledger(root: Path, node: str, profile: Profile, combined: dict[str, Any]) -> dict[str, Any] | None:
    """The node's latest ledger (its own or the combined one), checked against the node and profile."""
    ledger_path = root / node / LEDGER_FILE
    if not ledger_path.is_file():
        return None
    try:
        led: dict[str, Any] = json.loads(ledger_path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise TreeConflict(f"{ledger_path}: unreadable ledger: {e}") from e
    newer = combined.get(node)
    if isinstance(newer, dict) and newer.get("profile") == led.get("profile") and int(newer.get("tick", -1)) > int(led.get("tick", 0)):
        led = newer
    if led.get("profile") != profile.name or led.get("node") != node:
        raise TreeConflict(
            f"{ledger_path}: profile: the tree was rendered for {led.get('node')}/{led.get('profile')}, not {node}/{profile.name}; "
            "remove the node's directory to start it afresh"
        )
    return led


def load_state(root: Path, node: str, profile: Profile, combined: dict[str, Any] | None = None) -> NodeState | None:
    """Resume a node from its tree: ledgers from state/emulator.json (or the root's combined ledger
    file, whichever is at the later tick), limits from its writable files."""
    led = _ledger(root, node, profile, combined if combined is not None else _combined(root))
    if led is None:
        return None
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
            # A file that holds what the state already shows (most: limits at their defaults) is no
            # write to replay. Replaying each one cost a derive (and a governor one a copy of every
            # policy's tuple): minutes to resume 1000 nodes, for nothing.
            if data == content(profile, st, entry.bind).encode():
                continue
            st, _ = apply_write(profile, st, entry.bind, data)
    # Resume settled, as a node that kept running would be.
    return replace(
        st,
        sockets=tuple(
            replace(s, rapl_settled_w=s.rapl_requested_w or 0.0, hsmp_settled_w=s.hsmp_requested_w or 0.0) for s in st.sockets
        ),
        gpus=tuple(replace(g, enforced_w=g.limit_w) for g in st.gpus),
    )


def load_states(root: Path, nodes: list[tuple[str, Profile]]) -> dict[str, NodeState]:
    """Every node that has a tree under ``root``, resumed (nodes without one start afresh)."""
    out = {}
    combined = _combined(root)
    for name, profile in nodes:
        st = load_state(root, name, profile, combined)
        if st is not None:
            out[name] = st
    return out
