"""A node's tree on disk, entry by entry: created fresh, or an existing one checked against what
the profile renders (refused with :class:`~joulie_simulator.views.files.ledger.TreeConflict` naming the
file where it cannot be resumed)."""
from __future__ import annotations

import os
from pathlib import Path

from joulie_simulator.emulation.render import Entry
from joulie_simulator.views.files.ledger import TreeConflict
from joulie_simulator.views.files.swap import swap_in


def create_entry(p: str, e: Entry, text: str) -> None:
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


def check_entry(base: str, p: Path, e: Entry, text: str) -> None:
    """Bring an existing entry in line: agent-writable files keep what they hold, the rest show ``text``."""
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
            create_entry(str(p), e, text)
    elif e.owner == "R":
        if not p.exists() or p.read_text() != e.content:
            swap_in(os.path.join(base, "state", ".tmp", p.name), str(p), e.content.encode(), e.mode)
    else:
        swap_in(os.path.join(base, "state", ".tmp", p.name), str(p), text.encode(), e.mode)
