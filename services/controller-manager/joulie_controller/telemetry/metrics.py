"""Shell: Prometheus metrics of the controller manager (reference §3.9), on its own registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from joulie_api.names import POWER_STATES
from joulie_controller.model.fsm import State
from joulie_controller.readings.values import Facility
from joulie_controller.reconcile.snapshot import TickResult

STATES = (State.ACTIVE_PERFORMANCE, State.DRAINING_PERFORMANCE, State.ACTIVE_ECO)
PROFILES = ("performance", "eco")


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.node_state = Gauge("joulie_policy_node_state", "1 for the node's active FSM state.",
                                ["node", "state"], registry=r)
        self.node_profile = Gauge("joulie_policy_node_profile_label", "1 for the node's active profile label.",
                                  ["node", "profile"], registry=r)
        self.transitions = Counter("joulie_policy_state_transitions", "FSM transitions, applied or deferred.",
                                   ["node", "from_state", "to_state", "result"], registry=r)
        self.family_nodes = Gauge("joulie_policy_family_nodes", "Eligible nodes per hardware family.",
                                  ["family"], registry=r)
        self.family_perf = Gauge("joulie_policy_family_performance_nodes",
                                 "Performance (not draining) nodes per hardware family.", ["family"], registry=r)
        self.reconcile_duration = Histogram("joulie_policy_reconcile_duration_seconds",
                                            "Wall time of one reconcile tick (read, plan, write).", registry=r)
        self.writes = Counter("joulie_policy_writes", "API writes made (spec, label, status).", registry=r)
        self.write_failures = Counter("joulie_policy_write_failures", "Nodes whose writes failed.", registry=r)
        self.is_leader = Gauge("joulie_policy_leader", "1 while this replica holds the lease.", registry=r)
        self.facility_ambient = Gauge("joulie_twin_facility_ambient_temperature_celsius",
                                      "Outdoor ambient temperature read from the facility, °C.", registry=r)
        self.facility_it = Gauge("joulie_twin_facility_it_power_watts", "Total IT power, W.", registry=r)
        self.facility_cooling = Gauge("joulie_twin_facility_cooling_power_watts", "Cooling power, W.", registry=r)
        self.facility_pue = Gauge("joulie_twin_facility_pue", "(IT + cooling) / IT power.", registry=r)
        self.facility_zone = Gauge("joulie_twin_facility_zone_ambient_temperature_celsius",
                                   "Ambient temperature per cooling zone, °C.", ["zone"], registry=r)
        self.facility_rack = Gauge("joulie_twin_facility_rack_power_watts", "Power per rack, W.", ["rack"],
                                   registry=r)
        self.power_nodes = Gauge("joulie_power_nodes", "Managed nodes per power state (POWER_POLICY).", ["state"],
                                 registry=r)
        self.power_actions = Counter("joulie_power_actions", "Power policy actions decided, by action.", ["action"],
                                     registry=r)
        self.forecast_rate = Gauge("joulie_power_forecast_arrivals_per_minute",
                                   "The demand forecast: Pods expected per minute, per pool (forecast_suspend_v1).",
                                   ["pool"], registry=r)
        self.warm_cores = Gauge("joulie_power_warm_pool_cores", "Free cores the pool keeps powered (the warm pool).",
                                ["pool"], registry=r)
        self.warm_gpus = Gauge("joulie_power_warm_pool_gpus", "Free GPUs the pool keeps powered (the warm pool).",
                               ["pool"], registry=r)
        self.warm_boot = Gauge("joulie_power_pool_boot_seconds",
                               "The boot time the warm pool is sized for (timed resumes, else RESUME_BOOT_ESTIMATE).",
                               ["pool"], registry=r)
        self.power_implausible = Gauge(
            "joulie_twin_power_implausible",
            "1 while the node's measured power is dropped as implausible (outside what its hardware can draw, or "
            "inconsistent with its own components; the node neutral meanwhile), by kind of refutation.",
            ["node", "kind"], registry=r)
        self._implausible: set[tuple[str, str]] = set()
        self._nodes: set[str] = set()
        self._families: set[str] = set()

    def record_tick(self, result: TickResult) -> None:
        if result.power_states:
            for state in POWER_STATES:
                self.power_nodes.labels(state).set(sum(s == state for s in result.power_states.values()))
        for action in result.power:
            self.power_actions.labels(action.action).inc()
        for pool, need in result.warm.items():
            self.forecast_rate.labels(pool).set(need.rate_per_min)
            self.warm_cores.labels(pool).set(need.cores)
            self.warm_gpus.labels(pool).set(need.gpus)
            self.warm_boot.labels(pool).set(need.boot_s)
        # Labelled by eligible nodes only, never by the node names a forged series carries.
        implausible = set(result.implausible.items())
        for ended in self._implausible - implausible:
            self.power_implausible.remove(*ended)
        for node, kind in implausible:
            self.power_implausible.labels(node, kind).set(1)
        self._implausible = implausible
        nodes = {o.node for o in result.outcomes}
        for gone in self._nodes - nodes:
            for st in STATES:
                self.node_state.remove(gone, st.value)
            for p in PROFILES:
                self.node_profile.remove(gone, p)
        self._nodes = nodes
        families: dict[str, list[int]] = {}
        for o in result.outcomes:
            for st in STATES:
                self.node_state.labels(o.node, st.value).set(1 if o.state == st else 0)
            for p in PROFILES:
                self.node_profile.labels(o.node, p).set(1 if o.profile == p else 0)
            if o.transition == "deferred":
                # Named as the move that is held back, as in the original.
                self.transitions.labels(o.node, o.previous_state.value, State.ACTIVE_ECO.value, "deferred").inc()
            elif o.transition == "applied":
                self.transitions.labels(o.node, o.previous_state.value, o.state.value, "applied").inc()
            fam = families.setdefault(o.family, [0, 0])
            fam[0] += 1
            fam[1] += o.state == State.ACTIVE_PERFORMANCE
        for gone in self._families - families.keys():
            self.family_nodes.remove(gone)
            self.family_perf.remove(gone)
        self._families = set(families)
        for name, (count, perf) in families.items():
            self.family_nodes.labels(name).set(count)
            self.family_perf.labels(name).set(perf)

    def record_facility(self, f: Facility, pue: float | None) -> None:
        """Unknown readings are NaN (not 0: a 0 W facility would look healthy); zones/racks are replaced."""
        nan = float("nan")
        self.facility_ambient.set(nan if f.outdoor_ambient_c is None else f.outdoor_ambient_c)
        self.facility_it.set(f.it_power_w if f.it_power_w > 0 else nan)
        self.facility_cooling.set(nan if f.cooling_power_w is None else f.cooling_power_w)
        self.facility_pue.set(nan if pue is None else pue)
        self.facility_zone.clear()
        for zone, c in f.zone_ambient_c.items():
            self.facility_zone.labels(zone).set(c)
        self.facility_rack.clear()
        for rack, w in f.rack_power_w.items():
            self.facility_rack.labels(rack).set(w)
