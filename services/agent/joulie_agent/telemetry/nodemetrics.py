"""The control metrics of one node (RAPL energy and power, DVFS state, the active backend), recorded
into :class:`~joulie_agent.telemetry.metrics.AgentMetrics` with the node's label; nothing without a registry.

Kept apart so the enforcement shells say *what* they observed in one call each, not how the
Prometheus gauges are labelled."""

from __future__ import annotations

import contextlib

from joulie_agent.telemetry.metrics import AgentMetrics


class NodeMetrics:
    def __init__(self, node: str, metrics: AgentMetrics | None):
        self.node = node
        self.metrics = metrics
        # Each policy's (max, cur) as last set: a node has up to 384 policies, set every reconcile,
        # and a gauge's labels() lookup and set was a tenth of a pool agent's CPU at 1000 Nodes.
        self._dvfs_set: dict[str, tuple[int, int | None]] = {}

    def rapl(self, readings_uj: dict[str, int], watts: dict[str, float]) -> None:
        """Raw energy counters and the power derived from them, per zone."""
        if self.metrics:
            for zid, uj in readings_uj.items():
                self.metrics.rapl_energy_uj.labels(self.node, zid).set(uj)
            for zid, w in watts.items():
                self.metrics.rapl_power_w.labels(self.node, zid).set(w)

    def forget_rapl(self, zone_ids: list[str]) -> None:
        """Drop the zones' series (their counter is unusable): no stale number stands in for it."""
        if self.metrics:
            for zid in zone_ids:
                for gauge in (self.metrics.rapl_energy_uj, self.metrics.rapl_power_w):
                    with contextlib.suppress(KeyError):  # never set
                        gauge.remove(self.node, zid)

    def package_total(self, total_w: float) -> None:
        if self.metrics:
            self.metrics.rapl_package_total_w.labels(self.node).set(total_w)

    def policy_cap(self, policy: str, socket_w: float) -> None:
        if self.metrics:
            self.metrics.policy_cap_watts.labels(self.node, policy).set(socket_w)

    def dvfs_policy(self, policy_id: str, max_khz: int, cur_khz: int | None) -> None:
        """The max frequency enforced on a cpufreq policy, and its current one as of the last discovery."""
        if self.metrics and self._dvfs_set.get(policy_id) != (max_khz, cur_khz):
            self.metrics.dvfs_max_khz.labels(self.node, policy_id).set(max_khz)
            if cur_khz:
                self.metrics.dvfs_cur_khz.labels(self.node, policy_id).set(cur_khz)
            self._dvfs_set[policy_id] = (max_khz, cur_khz)

    def dvfs_step(self, observed_w: float | None, ema_w: float | None, above: int, below: int, action: str) -> None:
        """One step of the DVFS band controller: what it saw and what it did."""
        if self.metrics:
            if observed_w is not None:
                self.metrics.dvfs_observed_w.labels(self.node).set(observed_w)
            if ema_w is not None:
                self.metrics.dvfs_ema_w.labels(self.node).set(ema_w)
            self.metrics.dvfs_above.labels(self.node).set(above)
            self.metrics.dvfs_below.labels(self.node).set(below)
            if action in ("throttle_up", "throttle_down"):
                self.metrics.dvfs_actions.labels(self.node, action).inc()

    def throttle(self, pct: float) -> None:
        if self.metrics:
            self.metrics.dvfs_throttle_pct.labels(self.node).set(pct)

    def backend(self, mode: str) -> None:
        if self.metrics:
            self.metrics.set_backend(self.node, mode)
