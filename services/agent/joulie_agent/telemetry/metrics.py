"""Agent Prometheus metrics (names and labels as the Go original's, reference §1.10). Shell."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

BACKEND_MODES = ("none", "rapl", "dvfs")


class AgentMetrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.backend_mode = Gauge("joulie_backend_mode", "Active CPU control backend (1 for the active mode)",
                                  ["node", "mode"], registry=r)
        self.policy_cap_watts = Gauge("joulie_policy_cap_watts", "Selected CPU cap, watts per socket",
                                      ["node", "policy"], registry=r)
        self.rapl_energy_uj = Gauge("joulie_rapl_energy_uj", "Latest raw RAPL energy counter, microjoules",
                                    ["node", "zone"], registry=r)
        self.rapl_power_w = Gauge("joulie_rapl_estimated_power_watts", "Zone power from energy deltas, watts",
                                  ["node", "zone"], registry=r)
        self.rapl_package_total_w = Gauge("joulie_rapl_package_total_power_watts",
                                          "Sum of package power, watts", ["node"], registry=r)
        self.dvfs_observed_w = Gauge("joulie_dvfs_observed_power_watts", "Package power seen by DVFS, watts",
                                     ["node"], registry=r)
        self.dvfs_ema_w = Gauge("joulie_dvfs_ema_power_watts", "EMA of package power, watts", ["node"], registry=r)
        self.dvfs_throttle_pct = Gauge("joulie_dvfs_throttle_pct", "DVFS throttle, percent", ["node"], registry=r)
        self.dvfs_above = Gauge("joulie_dvfs_above_trip_count", "Consecutive samples above the band",
                                ["node"], registry=r)
        self.dvfs_below = Gauge("joulie_dvfs_below_trip_count", "Consecutive samples below the band",
                                ["node"], registry=r)
        self.dvfs_cur_khz = Gauge("joulie_dvfs_cpu_cur_freq_khz", "Current policy frequency, kHz",
                                  ["node", "cpu"], registry=r)
        self.dvfs_max_khz = Gauge("joulie_dvfs_cpu_max_freq_khz", "Enforced max frequency, kHz",
                                  ["node", "cpu"], registry=r)
        self.dvfs_actions = Counter("joulie_dvfs_actions_total", "DVFS throttle changes", ["node", "action"],
                                    registry=r)
        self.power_exports = Counter("joulie_power_exports_total", "OTLP power exports by result (ok, failed)",
                                     ["result"], registry=r)
        self.reconcile_errors = Counter("joulie_reconcile_errors_total", "Reconcile-loop errors", ["node"],
                                        registry=r)

    def set_backend(self, node: str, mode: str) -> None:
        for m in BACKEND_MODES:
            self.backend_mode.labels(node=node, mode=m).set(1 if m == mode else 0)
