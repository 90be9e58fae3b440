"""Render goldens: a profile's tree as a text listing, one line per entry, per-CPU runs folded.

Each line: ``<path> <kind> <owner> <mode> <content>``; content is the file's text at a fresh
start (``\\n`` escaped), ``sha256:<hex12>/<bytes>`` when longer than 96 bytes, ``-> target`` for a
link. Paths and contents that differ only by a CPU or policy number are folded into one line with
``{N}`` and a ``[N=...]`` range. Regenerate: ``./pants run services/simulator:render-goldens``.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

from joulie_hwprofiles.schema import builtin_profile, builtin_profile_names
from joulie_simulator.emulation.render import content, layout
from joulie_simulator.physics.model import initial_state

GOLDEN_DIR = Path("services/simulator/joulie_simulator/emulation/testdata/render")
GOLDEN_NODE = "golden-0"
_INDEX = re.compile(r"(policy|cpu)(\d+)")


def _show(text: str) -> str:
    if len(text) > 96:
        return f"sha256:{hashlib.sha256(text.encode()).hexdigest()[:12]}/{len(text)}"
    return repr(text)


def _ranges(ns: list[int]) -> str:
    out, start, prev = [], ns[0], ns[0]
    for n in [*ns[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ",".join(out)


def listing(profile_name: str) -> str:
    profile = builtin_profile(profile_name)
    state = initial_state(profile, GOLDEN_NODE)
    groups: dict[str, list[int]] = {}
    order: list[str] = []
    for e in layout(profile, GOLDEN_NODE):
        if e.kind == "link":
            shown = f"-> {e.content}"
        elif e.kind == "dir":
            shown = ""
        else:
            shown = _show(content(profile, state, e.bind) if e.bind else e.content)
        line = f"{e.path} {e.kind} {e.owner} {e.mode:04o} {shown}".rstrip()
        m = _INDEX.search(e.path)
        n = -1
        if m is not None:
            n = int(m.group(2))
            line = line.replace(f"{m.group(1)}{n}", f"{m.group(1)}{{N}}")
            if e.kind == "link" or e.path.endswith("_cpus"):
                line = re.sub(rf"(?<![\d.]){n}(?![\d.])", "{N}", line)
        if line not in groups:
            groups[line] = []
            order.append(line)
        if n >= 0:
            groups[line].append(n)
    lines = [f"{t} [N={_ranges(groups[t])}]" if groups[t] else t for t in order]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name in builtin_profile_names():
        (GOLDEN_DIR / f"{name}.txt").write_text(listing(name))
        print(f"wrote {GOLDEN_DIR / name}.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
