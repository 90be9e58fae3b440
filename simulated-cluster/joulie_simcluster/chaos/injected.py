"""What one injection hit, and how to end it (``Injected``), shared by ``inject.py`` and ``bmcinject.py``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

PROBE_NAMESPACE = "default"
"""Where the probe Pods of the extender-slow and BMC faults are created."""


@dataclass
class Injected:
    """What one injection hit, and how to end it."""

    target: str
    killed: set[str] = field(default_factory=set)
    """Processes this fault killed on purpose (their restarts are expected, not collateral crashes)."""
    clear: Callable[[], None] | None = None
    watch: Callable[[], None] | None = None
    """Called at every look during the window (what the fault shows while it holds and after)."""
    note: Callable[[], str] | None = None
    """What the fault showed, once the window is over (the report's notes)."""
