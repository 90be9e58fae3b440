"""How many scheduling requests the extender holds at once, and for how long a body may take. Shell.

Why: each /filter or /prioritize body is buffered whole (up to EXTENDER_MAX_BODY_BYTES) before it is
parsed, so memory grows with the requests in flight. Held slow uploads once took the extender from
114 MB to over 1 GB and past its limit, and an `ignorable` extender that is OOM-killed silently drops
the eco/performance filter. So a request is admitted only while fewer than `max_concurrent` are in
flight and its peer holds fewer than `max_per_client` (kube-scheduler is one peer: a client that
holds its share cannot take the rest), else it gets 503 at once with `Retry-After`; its body must
arrive within `body_timeout_s` (408 after), so a held slot is freed in bounded time. The worst case
is `max_concurrent` x the body limit of buffered bytes, which the defaults keep well under the
chart's 512 Mi (services/extender/README.md "Limits").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Admission:
    """Counts of the requests in flight, in total and per peer address (one event loop: no lock)."""

    max_concurrent: int
    max_per_client: int
    _total: int = 0
    _per_peer: Counter[str] = field(default_factory=Counter)

    def try_enter(self, peer: str) -> str | None:
        """None when admitted (then `leave(peer)` exactly once), else why not."""
        if self._total >= self.max_concurrent:
            return f"{self._total} requests in flight, the limit (EXTENDER_MAX_CONCURRENT) is {self.max_concurrent}"
        if self._per_peer[peer] >= self.max_per_client:
            return (
                f"{self._per_peer[peer]} requests in flight from {peer}, the limit per client "
                f"(EXTENDER_MAX_CONCURRENT_PER_CLIENT) is {self.max_per_client}"
            )
        self._total += 1
        self._per_peer[peer] += 1
        return None

    def leave(self, peer: str) -> None:
        self._total -= 1
        self._per_peer[peer] -= 1
        if self._per_peer[peer] <= 0:
            del self._per_peer[peer]

    @property
    def in_flight(self) -> int:
        return self._total
