"""Test fixtures the agent offers products' tests: host trees the agent reads as a real node's.

Only products' test modules may import this (the layering test enforces it); everything else uses
``joulie_agent.api``. ``rapl_node(root)`` writes a node with RAPL powercap zones and /proc/cpuinfo
under ``root``, for an agent run with ``ROOT=root``."""

from __future__ import annotations

from joulie_agent.fixtures.testtrees import rapl_node

__all__ = ["rapl_node"]
