"""Host files whose content is no usable number (garbage in ``energy_uj``, a PL1 limit file that
reads ``abc``), reported once when a file turns unusable and once when it reads a number again.

Issue 23 (sysfs-garbage): garbage in RAPL files drew no reaction from the agent; the parsers left
the value out (never exported as a number) but nothing said so. The enforcement shells ask
``powercap.unusable`` about each read, tell this tracker, and put its ``note()`` in controlStatus.
Pure apart from the logger.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass
class UnusableReadings:
    """{file: what it read} for one node's unusable files; logs only the transitions."""

    node: str
    log: logging.Logger
    problems: dict[str, str] = field(default_factory=dict)

    def update(self, checked: Iterable[str], found: Mapping[str, str]) -> None:
        """``checked`` files were read; ``found`` says why those that were unusable are."""
        for f in checked:
            why = found.get(f)
            if why and f not in self.problems:
                self.log.warning("node %s: %s %s; the reading is unusable and left out until it reads a number",
                                 self.node, f, why)
            elif not why and f in self.problems:
                self.log.warning("node %s: %s reads a number again", self.node, f)
            if why:
                self.problems[f] = why
            else:
                self.problems.pop(f, None)

    def note(self) -> str:
        """One line for controlStatus: the first few unusable files and what they read."""
        if not self.problems:
            return ""
        items = [f"{f} {why}" for f, why in sorted(self.problems.items())]
        more = f" (+{len(items) - 3} more)" if len(items) > 3 else ""
        return f"unusable readings: {'; '.join(items[:3])}{more}"
