"""The extender's public surface, I/O part: the watch-fed caches (the chart's RBAC test runs them under
the extender's ServiceAccount). The scoring model is in ``api``."""

from __future__ import annotations

from joulie_extender.cache.store import StateCache
from joulie_extender.cache.watch import WatchCache

__all__ = ["StateCache", "WatchCache"]
