"""The controller manager's composition root and loop: ``compose`` wires the shells the settings ask
for (Kubernetes, Prometheus, the Lease, the BMCs) to the pure core; ``Controller.tick`` is leader
check, measure, snapshot (with the running GPU Pods' per-board samples), reconcile, write, record.

With a power driver (and POWER_POLICY other than none) every node's BMC is read into the snapshot
before the tick, and the tick's power actions are carried out after its writes: cordon/uncordon
through the API server, off/on through the driver. A failed action is logged with the node and
its error, and the error shows in the node's NodeTwin status.power.error on the next tick.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api.kube import JoulieClient, KubeWriteError
from joulie_api.names import FIELD_MANAGER_LIVENESS
from joulie_api.outage import Outage, unanswered
from joulie_common.clock import SYSTEM_CLOCK, Clock
from joulie_controller.bmc.redfishdriver import from_kube
from joulie_controller.kube.informer import CachedCluster, HeapSettler
from joulie_controller.kube.kube import ControllerKube, watch_cluster
from joulie_controller.kube.leader import LeaderElector
from joulie_controller.kube.liveness import Liveness
from joulie_controller.model.fsm import pod_key
from joulie_controller.model.receipt import IDLE_UNKNOWN, NodeEnergy, board_idle_w, package_idle_w, receipt_summary
from joulie_controller.power.powerdriver import PowerDriver, PowerDriverError, read_all
from joulie_controller.power.powerstate import POLICY_NONE, PowerAction
from joulie_controller.power.refusal import Refusal, forget_settled, refused_again
from joulie_controller.readings.facility import pue
from joulie_controller.readings.gpuplausibility import gpus_by_node
from joulie_controller.readings.receiptinputs import Allocation, NodeFacts
from joulie_controller.readings.values import Facility
from joulie_controller.reconcile.receiptboards import Refused, believed_boards
from joulie_controller.reconcile.receipts import Closed, ReceiptBook, Window, conditions
from joulie_controller.reconcile.snapshot import Memory, Snapshot, TickResult
from joulie_controller.reconcile.tick import reconcile
from joulie_controller.settings import Settings, selector_matches
from joulie_controller.telemetry.metrics import Metrics
from joulie_controller.telemetry.prometheus import (
    FacilityReader,
    GpuSignalReader,
    PowerReader,
    PrometheusError,
    ReceiptReader,
)

log = logging.getLogger(__name__)


def compose(settings: Settings, api: k8s.ApiClient, identity: str) -> Controller:
    """The controller manager on the cluster ``api`` reaches: its shells, each as the settings ask."""
    metrics = Metrics()
    return Controller(
        settings,
        ControllerKube(api, write_concurrency=settings.reconcile.write_concurrency, cluster=_cluster(settings, api),
                       lease_namespace=settings.heartbeat_namespace),
        PowerReader(settings),
        metrics,
        _elector(settings, api, identity),
        facility=FacilityReader(settings) if settings.facility.enabled else None,
        liveness=Liveness(JoulieClient(api, FIELD_MANAGER_LIVENESS), settings.agent_lost_after_s, metrics.registry,
                          settings.agent_liveness_window_s),
        power_driver=_power_driver(settings, api),
        heap=HeapSettler() if settings.reconcile.watch_cluster else None,
        gpu_signals=GpuSignalReader(settings) if settings.prometheus.url else None,
        receipts=ReceiptReader(settings) if settings.prometheus.url and settings.reconcile.receipts else None,
    )


def _cluster(settings: Settings, api: k8s.ApiClient) -> CachedCluster | None:
    """The watched caches the tick reads (WATCH_CLUSTER), started now so they sync before the first
    tick; none: the tick LISTs. Their threads are daemons: they end with the process."""
    if not settings.reconcile.watch_cluster:
        return None
    return watch_cluster(api, settings.reconcile.cache_resync_s, threading.Event(), settings.heartbeat_namespace)


def _elector(settings: Settings, api: k8s.ApiClient, identity: str) -> LeaderElector | None:
    """The Lease election (LEADER_ELECT), as ``identity``; none: this replica always leads."""
    if not settings.leader.elect:
        return None
    return LeaderElector(api, settings.pod_namespace, settings.leader.lease_name, identity,
                         settings.leader.lease_duration_s)


def _power_driver(settings: Settings, api: k8s.ApiClient) -> PowerDriver | None:
    """The BMC driver for POWER_POLICY=idle_suspend_v1: Redfish (joulie_redfish), BMC addresses and
    credentials from the Secrets labelled joulie.io/bmc-credentials=true in the controller's namespace
    (POD_NAMESPACE), read every 30 s."""
    if settings.suspend.power_policy == POLICY_NONE:
        return None
    driver = from_kube(k8s.CoreV1Api(api), settings.pod_namespace)
    log.info("POWER_POLICY=%s: BMCs from the Secrets labelled joulie.io/bmc-credentials=true in namespace %s",
             settings.suspend.power_policy, settings.pod_namespace)
    return driver


@dataclass(frozen=True)
class TickSummary:
    leader: bool
    result: TickResult | None
    writes: int
    failures: int


class Controller:
    def __init__(self, settings: Settings, kube: ControllerKube, power: PowerReader, metrics: Metrics | None = None,
                 elector: LeaderElector | None = None, clock: Clock = SYSTEM_CLOCK,
                 facility: FacilityReader | None = None, liveness: Liveness | None = None,
                 power_driver: PowerDriver | None = None, heap: HeapSettler | None = None,
                 gpu_signals: GpuSignalReader | None = None, receipts: ReceiptReader | None = None):
        self.settings = settings
        self.kube = kube
        self.power = power
        self.metrics = metrics or Metrics()
        self.elector = elector
        self.clock = clock
        self.memory = Memory()
        self.facility = Facility()
        self.facility_reader = facility
        self.liveness = liveness
        self.power_driver = power_driver
        # With the watch caches the cluster stays in memory: the heap is settled after each tick.
        self.heap = heap
        self.leases_unread = False
        """The agents' heartbeat Leases could not be read last tick (logged once when that starts and ends)."""
        self.gpu_signals = gpu_signals
        self.receipts = receipts
        self.book = ReceiptBook()
        self.window_start_s: float | None = None
        """When the open receipts window began (None: the first tick opens it)."""
        self.receipt_skipped: list[str] = []
        self.receipt_idle_unknown: list[str] = []
        self.receipt_refused: set[tuple[Allocation, str]] = set()
        """The allocations the last window refused to bill (logged when they start and end)."""
        self.receipt_health = Outage("Prometheus (energy receipts; the window stays open meanwhile)", log)
        self.power_errors: dict[str, Refusal] = {}
        """The last refused off/on per node, until an action on it succeeds or the node settles on or off."""
        self._facility_polled: datetime | None = None
        # Failing ticks and lease renewals are logged once when they start failing and once when
        # they work again, and retried with backoff: an API server outage used to leave a
        # traceback per interval (issue 23: 354 of them in 6 minutes).
        self.tick_health = Outage("reconcile tick", log)
        self.lease_health = Outage("leader election (lease renewal)", log)

    def poll_facility(self, now: datetime) -> None:
        """Poll facility metrics when due (first tick, then every FACILITY_POLL_INTERVAL)."""
        if self.facility_reader is None:
            return
        if self._facility_polled is not None and (
                now - self._facility_polled).total_seconds() < self.settings.facility.poll_interval_s:
            return
        self._facility_polled = now
        f = self.facility = self.facility_reader.read()
        ratio = pue(f)
        log.info("[facility] ambient=%s itPower=%.0f cooling=%s pue=%s zones=%d racks=%d inlets=%d",
                 "unknown" if f.outdoor_ambient_c is None else f"{f.outdoor_ambient_c:.1f}", f.it_power_w,
                 "unknown" if f.cooling_power_w is None else f"{f.cooling_power_w:.0f}",
                 "unknown" if ratio is None else f"{ratio:.3f}", len(f.zone_ambient_c), len(f.rack_power_w),
                 len(f.node_inlet_c))
        self.metrics.record_facility(f, ratio)

    def _lead(self) -> bool:
        leader = self.elector is None or self.elector.try_acquire()
        self.metrics.is_leader.set(1 if leader else 0)
        return leader

    def tick(self) -> TickSummary:
        started = time.perf_counter()
        if not self._lead():
            return TickSummary(False, None, 0, 0)
        now = self.clock.now()
        self.poll_facility(now)
        reading = self.power.read()
        snap = self.kube.snapshot(now, reading.measurements, self.facility)
        if self.power_driver is not None and self.settings.suspend.power_policy != POLICY_NONE:
            snap = replace(snap, bmc=read_all(self.power_driver, [n.name for n in snap.nodes], self.power_errors))
        if self.gpu_signals is not None:
            snap = replace(snap, gpu_samples=self.gpu_signals.read(gpus_by_node(snap.hardware, snap.nodes)),
                           gpu_boards=self.gpu_signals.boards)
            self.metrics.record_gpu_refuted(r.kind for r in self.gpu_signals.refuted.values())
        if self.heap is not None:  # the heap is settled after the tick: one collection there, none during it
            with self.heap.paused():
                result = reconcile(snap, self.settings, self.memory)
        else:
            result = reconcile(snap, self.settings, self.memory)
        if self.liveness is not None:  # after the tick: a node the power policy has down is not agent-lost
            heartbeats = self.kube.heartbeats()
            if heartbeats is None:  # Leases unreadable: no verdict on stale evidence; the caps go on
                if not self.leases_unread:
                    log.warning("agent heartbeat Leases unreadable (RBAC, or their watch down): agent-lost "
                                "verdicts wait until they are read again")
                self.leases_unread = True
            else:
                if self.leases_unread:
                    log.warning("agent heartbeat Leases read again")
                self.leases_unread = False
                self.liveness.check(snap.twins, now, result.power_states, heartbeats, self.power.agent_times())
        forget_settled(self.power_errors, result.power_states)
        for line in result.log:
            log.info("%s", line)
        if result.writes and not self._lead():
            # The lease moved while we computed (a slow tick): the new leader writes, not us.
            log.warning("lost the lease during the tick; %d node writes dropped", len(result.writes))
            return TickSummary(False, result, 0, 0)
        report = self.kube.write(result.writes, self.settings.nodes.profile_label)
        report.failures += self.carry_out(result.power, now)
        self.metrics.record_tick(result)
        if self.receipts is not None:
            report.failures += self.close_receipts(snap, now)
        self.metrics.writes.inc(report.writes)
        self.metrics.write_failures.inc(report.failures)
        if self.heap is not None:
            self.heap.after_tick()
        self.metrics.reconcile_duration.observe(time.perf_counter() - started)
        if result.plan is not None:
            plan_text = ",".join(f"{o.node}={'draining' if o.draining else o.profile}" for o in result.outcomes[:20])
            log.info("assigned profiles policy=%s nodes=%d writes=%d plan=%s%s", result.plan.policy_name,
                     len(result.outcomes), report.writes, plan_text, ",…" if len(result.outcomes) > 20 else "")
        return TickSummary(True, result, report.writes, report.failures)

    def report_idle_and_meters(self, closed: Closed, energies: Mapping[str, NodeEnergy]) -> None:
        """The nodes of unknown CPU idle logged when that list changes; each node's last counted meter
        sample exported, before the window's counters and end (a reader that sees this window's end sees
        its samples' ends)."""
        unknown = sorted(n for n, (_, source) in closed.cpu_idle.items() if source == IDLE_UNKNOWN)
        if unknown != self.receipt_idle_unknown:
            log.warning("energy receipts: CPU idle draw unknown (no package maximum in the NodeHardware, no idle "
                        "window seen yet) on node(s) %s: their package energy is billed all as busy, by use",
                        ", ".join(unknown) or "none now")
        self.receipt_idle_unknown = unknown
        self.metrics.record_receipt_meter_ends(
            {n: e.meter_span[1] for n, e in energies.items() if e.meter_span is not None})

    def close_receipts(self, snap: Snapshot, now: datetime) -> int:
        """Bring the energy receipts up to date once RECEIPT_WINDOW has passed (``reconcile.receipts``): read
        the window from Prometheus, split it, export it, write the changed annotations and one Event per
        finished Pod. Returns the Pod writes that failed (retried at the next window). Prometheus failing
        keeps the window open: the next close covers it all."""
        assert self.receipts is not None
        now_s = now.timestamp()
        started = {p.uid or pod_key(p): p.started_at for p in snap.pods if p.started_at is not None}
        managed = {n.name for n in snap.nodes if selector_matches(self.settings.nodes.selector, n.labels)}
        ended = self.book.see([p for p in snap.pods if p.node_name in managed], now_s, started)
        start = self.window_start_s
        if start is None or now_s - start < self.settings.reconcile.receipt_window_s:
            self.window_start_s = now_s if start is None else start
            return 0
        if not self.receipt_health.due():
            return 0
        for key in ended:
            span = self.book.spans[key]
            ns, _, name = span.pod.partition("/")
            try:
                at = self.kube.pods.finished_at(ns, name, span.uid)
            except ApiException as err:  # an unreachable server fails the tick instead (the window stays open)
                log.warning("pod %s: finish time unreadable, its last sighting counts: %s", key, err)
                at = None
            self.book.finish(key, at if isinstance(at, float) else span.seen_s)
        views = self.memory.views
        facts = {  # a node whose measured power the tick refuted is billed nothing (its Pods skipped, logged)
            n: NodeFacts(v.cpu_cores, package_idle_w(v.cpu_max_w_per_socket) * v.cpu_sockets, board_idle_w(v.gpu_max_w))
            for n, v in views.items() if n not in self.memory.implausible
        }
        try:
            inputs = self.receipts.read(start, now_s, facts)
        except PrometheusError as err:
            self.receipt_health.failed(err)
            return 0
        self.receipt_health.ok()
        for problem in inputs.problems:
            log.warning("energy receipts: %s", problem)
        twins = {t.spec.node_name: t.spec for t in snap.twins.values() if t.spec is not None}
        gpus = self.believed_boards(snap, inputs.allocations)
        cond = conditions(self.book.spans, gpus, twins, views, self.memory.job_estimates)
        window = Window(start, now_s, inputs.energies, gpus, inputs.cpu_used, cond)
        closed = self.book.close(window, now.strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.window_start_s = now_s
        if closed.skipped != self.receipt_skipped:  # logged when it changes, not every window
            log.warning("energy receipts: no energy meter in Prometheus (or no NodeHardware; or its measured "
                        "power refuted as implausible) for node(s) "
                        "%s; their Pods are billed nothing meanwhile", ", ".join(closed.skipped) or "none now")
        self.receipt_skipped = closed.skipped
        self.report_idle_and_meters(closed, inputs.energies)
        self.metrics.record_receipts(closed.parts, closed.unallocated, [w.pod for w in closed.writes if w.finished],
                                     window_end_s=now_s)
        self.metrics.record_receipt_cpu_idle(closed.cpu_idle)
        failures = 0
        for w in closed.writes:
            ns, _, name = w.pod.partition("/")
            try:
                present = self.kube.pods.annotate(ns, name, w.annotation, w.uid)
                if present and w.finished:
                    self.kube.pods.event(ns, name, receipt_summary(w.receipt, w.node), now, w.uid)
            except KubeWriteError as err:
                failures += 1
                if err.status is not None and 400 <= err.status < 500 and err.status not in (404, 408, 409, 429):
                    # Refused for good (403, 422): writing it again every window would be refused again.
                    log.error("pod %s: energy receipt refused (HTTP %d), not retried: %s", w.pod, err.status, err)
                    self.book.wrote(w)
                else:
                    log.error("pod %s: energy receipt not written, retried next window: %s", w.pod, err)
                continue
            self.book.wrote(w)
        for gone in self.book.finished_unbilled(now_s):
            log.warning("pod %s finished with no energy billed (its node had no meter): no receipt", gone)
        return failures

    def believed_boards(self, snap: Snapshot,
                        allocations: Sequence[Allocation]) -> dict[tuple[str, str], tuple[int, ...]]:
        """The window's allocations the node's hardware and Pods bear out (``reconcile.receiptboards``); the
        refused ones counted, and logged when they start being refused, not every window."""
        pods_on: dict[str, set[str]] = {}
        for p in snap.pods:
            if p.node_name:
                pods_on.setdefault(p.node_name, set()).add(pod_key(p))
        for span in self.book.spans.values():
            pods_on.setdefault(span.node, set()).add(span.pod)
        gpus, refused = believed_boards(allocations, gpus_by_node(snap.hardware, snap.nodes), pods_on)
        self.metrics.record_receipt_refused(r.kind for r in refused)
        current = {(r.allocation, r.kind) for r in refused}
        new: list[Refused] = [r for r in refused if (r.allocation, r.kind) not in self.receipt_refused]
        if new:
            log.warning("energy receipts: hw.gpu.allocation refused, its board billed to nobody (unallocated): %s",
                        "; ".join(f"{r.reason} ({r.kind})" for r in new)[:2000])
        if self.receipt_refused and not current:
            log.warning("energy receipts: every hw.gpu.allocation believed again")
        self.receipt_refused = current
        return gpus

    def carry_out(self, actions: Sequence[PowerAction], now: datetime | None = None) -> int:
        """The power policy's actions, in order; returns how many failed (each logged). A refused off/on
        is kept as of ``now`` (the tick's time, on which the policy's retry backoff runs)."""
        failures = 0
        for a in actions:
            log.info("power %s node=%s reason=%s", a.action, a.node, a.reason)
            try:
                if a.action in ("cordon", "uncordon"):
                    self.kube.set_suspended(a.node, a.action == "cordon")
                elif a.action in ("off", "on"):
                    if self.power_driver is None:
                        raise PowerDriverError(f"node {a.node}: no power driver configured (BMC Secret)")
                    if a.action == "off":
                        self.power_driver.off(a.node, graceful=True)
                    else:
                        self.power_driver.on(a.node)
                    self.power_errors.pop(a.node, None)
                else:  # fail: the node stays cordoned for an operator
                    log.warning("node %s: power %s; left cordoned: %s", a.node, a.action, a.reason)
            except (KubeWriteError, PowerDriverError) as err:
                failures += 1
                if a.action in ("off", "on"):
                    self.power_errors[a.node] = refused_again(self.power_errors.get(a.node), a.action, str(err),
                                                              now or self.clock.now())
                log.error("node %s: power %s failed, the node is left as it is: %s", a.node, a.action, err)
        return failures

    def _tick_quietly(self) -> float:
        """One tick; returns the backoff delay after a failure (0 after a success). Only a failure
        that is no outage (a bug) carries its traceback, once."""
        try:
            self.tick()
        except Exception as err:
            return self.tick_health.failed(err, traceback=not unanswered(err))
        self.tick_health.ok()
        return 0.0

    def run(self, stop: threading.Event) -> None:
        """Tick every RECONCILE_INTERVAL until `stop` is set; a failed tick is logged, not fatal.

        With leader election the lease is renewed every third of its duration between ticks too,
        so a reconcile interval longer than the lease does not hand the lease back and forth.
        """
        interval = self.settings.reconcile.interval_s
        renew = max(0.5, self.settings.leader.lease_duration_s / 3) if self.elector is not None else interval
        next_tick = time.monotonic()
        try:
            while not stop.is_set():
                if time.monotonic() >= next_tick:
                    next_tick = time.monotonic() + max(interval, self._tick_quietly())
                elif self.elector is not None and self.lease_health.due():
                    try:
                        self._lead()
                    except Exception as err:
                        self.lease_health.failed(err, traceback=not unanswered(err))
                    else:
                        self.lease_health.ok()
                stop.wait(max(0.05, min(renew, next_tick - time.monotonic())))
        finally:
            if self.elector is not None:
                self.elector.release()
