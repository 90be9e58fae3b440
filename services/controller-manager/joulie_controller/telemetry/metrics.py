"""Shell: Prometheus metrics of the controller manager (reference §3.9), on its own registry."""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterable, Mapping
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from joulie_api.names import POWER_STATES
from joulie_controller.model.fsm import State
from joulie_controller.model.receipt import IDLE_SOURCES as RECEIPT_IDLE_SOURCES
from joulie_controller.model.receipt import Receipt
from joulie_controller.readings.gpuplausibility import KINDS as GPU_REFUTATIONS
from joulie_controller.readings.values import Facility
from joulie_controller.reconcile.receiptboards import KINDS as RECEIPT_REFUSALS
from joulie_controller.reconcile.snapshot import TickResult
from joulie_telemetry.vocabulary import (
    ENERGY_DEVICE,
    ENERGY_DEVICES,
    K8S_NAMESPACE_NAME,
    K8S_NODE_NAME,
    K8S_POD_NAME,
    NODE_ENERGY_UNALLOCATED,
    POD_ENERGY,
    POD_ENERGY_SAVED,
    POD_TIME_ADDED,
    MetricSpec,
)

STATES = (State.ACTIVE_PERFORMANCE, State.DRAINING_PERFORMANCE, State.ACTIVE_ECO)
PROFILES = ("performance", "eco")
RECEIPT_SERIES_KEPT_WINDOWS: Final = 5
"""Windows a finished Pod's receipt series are still exported (five scrapes at the least at a 1m window)."""


def _counter(spec: MetricSpec) -> str:
    """A receipt metric's name as Prometheus' OTLP translation spells it, less the ``_total`` the client adds:
    the same series whether a collector routes the OTel metric or Prometheus scrapes this endpoint."""
    return spec.prometheus_name().removesuffix("_total")


def _label(attribute: str) -> str:
    return attribute.replace(".", "_")


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self._policy_metrics(r)
        self._facility_metrics(r)
        self._power_metrics(r)
        self._implausible_metrics(r)
        self._receipt_metrics(r)
        self._nodes: set[str] = set()
        self._families: set[str] = set()
        self._receipt_series: dict[tuple[str, str, str], int] = {}
        """Each finished Pod's series, by (namespace, name, node): the windows they are still exported for."""

    def _policy_metrics(self, r: CollectorRegistry) -> None:
        """The policy's FSM, families, reconcile ticks, writes and leadership."""
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

    def _facility_metrics(self, r: CollectorRegistry) -> None:
        """What the facility poller read: ambient, IT and cooling power, PUE, zones and racks."""
        self.facility_ambient = Gauge("joulie_twin_facility_ambient_temperature_celsius",
                                      "Outdoor ambient temperature read from the facility, °C.", registry=r)
        self.facility_it = Gauge("joulie_twin_facility_it_power_watts", "Total IT power, W.", registry=r)
        self.facility_cooling = Gauge("joulie_twin_facility_cooling_power_watts", "Cooling power, W.", registry=r)
        self.facility_pue = Gauge("joulie_twin_facility_pue", "(IT + cooling) / IT power.", registry=r)
        self.facility_zone = Gauge("joulie_twin_facility_zone_ambient_temperature_celsius",
                                   "Ambient temperature per cooling zone, °C.", ["zone"], registry=r)
        self.facility_rack = Gauge("joulie_twin_facility_rack_power_watts", "Power per rack, W.", ["rack"],
                                   registry=r)

    def _power_metrics(self, r: CollectorRegistry) -> None:
        """The power policy: nodes per power state, actions, the demand forecast and the warm pool."""
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

    def _implausible_metrics(self, r: CollectorRegistry) -> None:
        """The readings dropped as implausible: a node's power, and per-GPU series by kind."""
        self.power_implausible = Gauge(
            "joulie_twin_power_implausible",
            "1 while the node's measured power is dropped as implausible (outside what its hardware can draw, or "
            "inconsistent with its own components; the node neutral meanwhile), by kind of refutation.",
            ["node", "kind"], registry=r)
        self._implausible: set[tuple[str, str]] = set()
        # By kind only: a forged series names whatever node and board it likes.
        self.gpu_implausible = Gauge(
            "joulie_gpu_series_implausible_boards",
            "Boards whose per-GPU series (power, activity ratios, hw.gpu.allocation) were dropped as implausible "
            "on the last read, by kind of refutation; the estimate of a Pod holding one is held meanwhile.",
            ["kind"], registry=r)
        for kind in GPU_REFUTATIONS:
            self.gpu_implausible.labels(kind).set(0)

    def _receipt_metrics(self, r: CollectorRegistry) -> None:
        """The energy receipts' counters (docs/energy-receipts.md) and when their last window closed."""
        pod_labels = [_label(K8S_NAMESPACE_NAME), _label(K8S_POD_NAME), _label(K8S_NODE_NAME)]
        self.pod_energy = Counter(
            _counter(POD_ENERGY),
            POD_ENERGY.description + " (docs/energy-receipts.md).",
            [*pod_labels, _label(ENERGY_DEVICE)],
            registry=r,
        )
        self.pod_saved = Counter(
            _counter(POD_ENERGY_SAVED),
            POD_ENERGY_SAVED.description + " (windows where "
            "they cost energy are not subtracted: the signed total is on the Pod's receipt).",
            pod_labels,
            registry=r,
        )
        self.pod_added = Counter(_counter(POD_TIME_ADDED), POD_TIME_ADDED.description + ".", pod_labels, registry=r)
        self.node_unallocated = Counter(
            _counter(NODE_ENERGY_UNALLOCATED),
            NODE_ENERGY_UNALLOCATED.description + ".",
            [_label(K8S_NODE_NAME)],
            registry=r,
        )
        self.receipt_refused = Counter(
            "joulie_receipt_gpu_allocations_refused",
            "hw.gpu.allocation series the energy receipts refused to bill, one per board and window: a board "
            "its node's NodeHardware does not list, or a Pod not on that node (docs/energy-receipts.md).",
            ["kind"], registry=r)
        for kind in RECEIPT_REFUSALS:
            self.receipt_refused.labels(kind)
        self.receipt_cpu_idle = Gauge(
            "joulie_receipt_cpu_idle_watts",
            "The CPU packages' idle draw the energy receipts bill by allocation, per node, W, and its source: "
            "measured (the lowest package power over idle windows), model (a share of the package maximum), "
            "unknown (neither: all package energy billed as busy) (docs/energy-receipts.md).",
            ["k8s_node_name", "source"],
            registry=r,
        )
        self.receipt_meter_end = Gauge(
            "joulie_receipt_meter_end_timestamp_seconds",
            "The time of the last node-meter sample the energy receipts have counted up to, per node, Unix "
            "seconds: a window's energy runs between samples, not to the window's close "
            "(docs/energy-receipts.md).",
            ["k8s_node_name"],
            registry=r,
        )
        self.receipt_window_end = Gauge(
            "joulie_receipt_window_end_timestamp_seconds",
            "When the energy receipts' last window closed, Unix seconds: the receipt counters cover up to it "
            "(a check comparing them with a meter aligns its readings on it).",
            registry=r,
        )

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

    def record_receipts(
        self,
        parts: Mapping[str, tuple[str, Receipt]],
        unallocated: Mapping[str, Receipt],
        finished: Iterable[str],
        keep_windows: int = RECEIPT_SERIES_KEPT_WINDOWS,
        window_end_s: float | None = None,
    ) -> None:
        """One window's receipts: each Pod's part (``namespace/name`` -> (node, receipt)) and each node's
        unallocated part. A finished Pod's series stay ``keep_windows`` more windows, so a scrape between
        sees its last increment, then go (a Pod's series would otherwise be kept for ever)."""
        for key, (node, r) in parts.items():
            ns, _, name = key.partition("/")
            for device, j in zip(ENERGY_DEVICES, (r.gpu_j, r.cpu_busy_j, r.cpu_idle_j, r.platform_j), strict=True):
                self.pod_energy.labels(ns, name, node, device).inc(max(j, 0.0))
            self.pod_saved.labels(ns, name, node).inc(max(r.saved_j, 0.0))
            self.pod_added.labels(ns, name, node).inc(max(r.added_s, 0.0))
            self._receipt_series.setdefault((ns, name, node), -1)
        for node, r in unallocated.items():
            self.node_unallocated.labels(node).inc(max(r.total_j, 0.0))
        if window_end_s is not None:
            self.receipt_window_end.set(window_end_s)
        done = set(finished)
        for series, left in list(self._receipt_series.items()):
            if left < 0 and f"{series[0]}/{series[1]}" in done:
                left = keep_windows
            if left == 0:
                for device in ENERGY_DEVICES:
                    self.pod_energy.remove(*series, device)
                self.pod_saved.remove(*series)
                self.pod_added.remove(*series)
                del self._receipt_series[series]
            else:
                self._receipt_series[series] = left - 1 if left > 0 else left

    def record_receipt_cpu_idle(self, idle: Mapping[str, tuple[float, str]]) -> None:
        """Each metered node's CPU idle as the last window billed it, under its source alone (a node's
        series under an earlier source removed, so a query by source counts each node once)."""
        for node, (watts, source) in idle.items():
            for other in RECEIPT_IDLE_SOURCES:
                if other != source:
                    with contextlib.suppress(KeyError):
                        self.receipt_cpu_idle.remove(node, other)
            self.receipt_cpu_idle.labels(node, source).set(watts)

    def record_receipt_meter_ends(self, ends: Mapping[str, float]) -> None:
        """Each metered node's last counted meter sample time; a node no longer read keeps its last."""
        for node, at_s in ends.items():
            self.receipt_meter_end.labels(node).set(at_s)

    def record_receipt_refused(self, kinds: Iterable[str]) -> None:
        """The kinds of the allocations one receipts window refused, one entry per allocation."""
        for kind, n in collections.Counter(kinds).items():
            self.receipt_refused.labels(kind).inc(n)

    def record_gpu_refuted(self, kinds: Iterable[str]) -> None:
        """The kinds of the boards the last per-GPU read refuted, one entry per board."""
        counts = collections.Counter(kinds)
        for kind in GPU_REFUTATIONS:
            self.gpu_implausible.labels(kind).set(counts.get(kind, 0))

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
