"""The agent loop over Kubernetes: publish NodeHardware, read NodeTwin.spec, write controlStatus.

Each tick reconciles every node this process owns (its own in daemonset and emulated mode, a
shard of the pool in pool mode): discovery and enforcement through ``enforce.node``, the cluster
through ``kube.agentkube``.

Enforcement is local and never waits for the API server: while it does not answer, the agent
keeps enforcing the last intent it read, relaxes every cap once the NodeTwin has been unreadable
for SPEC_READ_TIMEOUT (as the README says), and logs one line when the API server goes away and
one when it is back (`joulie_api.outage`), trying it again on the backoff schedule meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from joulie_agent.discovery.catalog import Catalog
from joulie_agent.discovery.gpuactivity import ActivityReport, DeviceHolder, boards_held
from joulie_agent.discovery.gputools import Inventory
from joulie_agent.enforce.node import NodeController, NodeOptions
from joulie_agent.host.gpureadings import SAME_CYCLE_S
from joulie_agent.host.hostread import HostPaths
from joulie_agent.host.nvml import NVML
from joulie_agent.host.podresources import PodResourcesClient, PodResourcesError
from joulie_agent.host.toolrun import make_runner
from joulie_agent.kube.agentkube import AgentKube, NodeSeen
from joulie_agent.settings import Settings
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_agent.telemetry.otlpexport import PowerExporter
from joulie_api.generated.nodetwin import NodeTwinSpec
from joulie_api.kube import ObjectDecodeError
from joulie_api.outage import Outage, not_now, short_error, unanswered
from joulie_common.clock import Clock
from joulie_common.sharding import owns_node

log = logging.getLogger(__name__)

# Hardware is rediscovered this often (GPU tools are slow; sysfs layouts do not change at runtime).
REDISCOVER_S = 300.0
# ... and this often while the GPUs a node should have did not answer its discovery (a tool timing out
# as a node's agents all start at once): until then its NodeHardware offers no GPU control.
GPU_REDISCOVER_S = 30.0


GPU_READ_WAIT_S = 10.0
"""How long the power export waits for the node's GPU tools while a cap is being written."""


class Agent:
    """One process: one node (daemonset, emulated) or a shard of a pool."""

    def __init__(self, settings: Settings, kube: AgentKube, catalog: Catalog, clock: Clock,
                 metrics: AgentMetrics, nvml: NVML | None = None, exporter: PowerExporter | None = None):
        self.s = settings
        self.kube = kube
        self.catalog = catalog
        self.clock = clock
        self.metrics = metrics
        self.nvml = nvml
        self.exporter = exporter
        self.pod_resources: dict[str, PodResourcesClient] = {}
        self.gpu_report_warnings: dict[str, str] = {}
        self.controllers: dict[str, NodeController] = {}
        self.discovered_at: dict[str, float] = {}
        # Last good NodeTwin read per node: (time, exists, spec).
        self.last_spec: dict[str, tuple[float, bool, NodeTwinSpec | None]] = {}
        self.api = Outage("API server", log, clock.monotonic)
        # Writes apart from reads: under a 409 storm the reads answer and the writes conflict, and
        # one health for both would log a failure and a recovery every tick.
        self.api_writes = Outage("API server writes", log, clock.monotonic)
        # The nodes of the last good listing, reconciled while the API server does not answer.
        self.last_nodes: list[NodeSeen] = []
        # When a pool agent last listed its Nodes (or read them from its Node watch): a list of every
        # Node each tick was most of a pool agent's CPU at 1000 Nodes (5 MB of JSON), and a list every
        # minute still 22 % of it; without a current watch view it lists every POOL_LIST_INTERVAL.
        self.listed_at: float | None = None
        # Nodes whose caps were relaxed for an unreadable NodeTwin (logged once, not per tick).
        self.relaxed: set[str] = set()
        # The last reconcile error logged per node: the same error again is not logged again.
        self.node_errors: dict[str, str] = {}
        # Nodes whose NodeTwin spec is refused (out of bounds), with the reason last logged.
        self.refusals: dict[str, str] = {}

    def controller(self, node: str) -> NodeController:
        c = self.controllers.get(node)
        if c is None:
            paths = HostPaths.under(self.s.node_root(node), self.s.node_sys_root(node))
            run = make_runner(self.s.node_tool_path(node), self.s.tool_timeout_s)
            c = NodeController(node, paths, self.catalog, run, self.nvml if self.s.mode == "daemonset" else None,
                               self.clock, self.metrics, NodeOptions(simulate_only=self.s.simulate_only, dvfs=self.s.dvfs,
                                                                dcgm_every=self.s.dcgm_every))
            self.controllers[node] = c
        return c

    def nodes(self) -> list[NodeSeen]:
        if self.s.mode == "pool":
            return [n for n in self.kube.list_nodes(self.s.pool_selector)
                    if owns_node(n.name, self.s.pool_shards, self.s.pool_shard_id)]
        one = self.kube.read_node(self.s.node_name)
        return [one] if one is not None else []

    def _api_call(self, call: Any) -> tuple[bool, Any]:
        """(answered, result) of one API call, skipped while backing off from an outage.

        Only no answer, or a 409 Conflict (a racing writer, an injected conflict storm: the next
        try succeeds), is "not now"; a refusal (another 4xx, an undecodable object) raises as before.
        """
        if not self.api.due():
            return False, None
        try:
            result = call()
        except Exception as err:
            if not not_now(err):
                raise
            self.api.failed(err)
            return False, None
        self.api.ok()
        return True, result

    def _api_write(self, write: Callable[[], bool]) -> bool:
        """Whether a write went through (or was not needed). ``write`` returns whether it reached
        the server (False: skipped as unchanged). No answer is the API server's outage; a 409 is
        the writes' own (the reads answer meanwhile), logged once by ``self.api_writes``."""
        if not self.api.due() or not self.api_writes.due():
            return False
        try:
            wrote = write()
        except Exception as err:
            if not not_now(err):
                raise
            (self.api if unanswered(err) else self.api_writes).failed(err)
            return False
        if wrote:
            self.api.ok()
            self.api_writes.ok()
        return True

    def tick(self) -> int:
        """One reconcile of every owned node; returns the number of nodes that failed."""
        failed = 0
        now = self.clock.monotonic()
        watched = self.kube.watched_nodes() if self.s.mode == "pool" else None
        if watched is not None:
            # The Node watch's view, current: no request. Counted as a listing, so a watch that goes
            # down is covered by the last view for POOL_LIST_INTERVAL before a LIST (every pool agent's
            # watch drops together when the API server restarts, and resumes without a list).
            listed, nodes = True, watched
        elif (self.s.mode == "pool" and self.listed_at is not None
                and now - self.listed_at < self.s.pool_list_interval_s):
            listed, nodes = False, self.last_nodes
        else:
            listed, nodes = self._api_call(self.nodes)
        if listed:
            self.last_nodes = nodes
            self.listed_at = now
            for gone in set(self.controllers) - {n.name for n in nodes}:
                del self.controllers[gone]
                self.kube.forget_lease(gone)
                if self.exporter is not None:
                    self.exporter.remove_node(gone)
                client = self.pod_resources.pop(gone, None)
                if client is not None:
                    client.close()
        else:
            nodes = self.last_nodes  # keep enforcing on the nodes we know
        for n in nodes:
            name = n.name
            try:
                if not self.reconcile_node(name, n.labels, n.allocatable, n.capacity):
                    # Enforced from the last intent, but not reconciled with the cluster: counted,
                    # logged once for the whole outage by `self.api`.
                    failed += 1
                    self.metrics.reconcile_errors.labels(name).inc()
            except Exception as err:  # one node's failure must not stop the others
                failed += 1
                self.metrics.reconcile_errors.labels(name).inc()
                self._node_failed(name, err)
            else:
                if self.node_errors.pop(name, None) is not None:
                    log.warning("node %s: reconcile works again", name)
        return failed

    def _node_failed(self, name: str, err: Exception) -> None:
        """Log a node's reconcile error once, and again only when it changes (counted each tick)."""
        what = short_error(err)
        if self.node_errors.get(name) != what:
            self.node_errors[name] = what
            log.error("node %s: reconcile failed (logged again only when the error changes): %s", name, what)

    def reconcile_node(self, name: str, labels: dict[str, str], allocatable: dict[str, str],
                       capacity: dict[str, str] | None = None) -> bool:
        """Reconcile one node; False when the API server did not answer (the last intent was enforced)."""
        c = self.controller(name)
        now = self.clock.monotonic()
        every = GPU_REDISCOVER_S if c.gpu_discovery_failed else REDISCOVER_S
        if c.hardware is None or now - self.discovered_at.get(name, -1e18) >= every:
            c.discover(labels, allocatable, capacity)
            self.discovered_at[name] = now
            if self.exporter is not None and not c.rediscovery_failed:  # kept facts: the plan stands
                self.plan_export(name, c)
        hardware = c.hardware
        assert hardware is not None
        published = self._api_write(lambda: self.kube.publish_hardware(name, hardware))
        try:
            answered, read = self._api_call(lambda: self.kube.read_spec(name))
        except ObjectDecodeError as err:
            return published and self._refuse_spec(name, c, now, err)
        if not answered:
            self._enforce_last_intent(name, c, now)
            return False
        exists, spec = read
        self.last_spec[name] = (now, exists, spec)
        if self.refusals.pop(name, None) is not None:
            log.warning("node %s: NodeTwin spec within bounds again; enforcing it", name)
        if name in self.relaxed:
            self.relaxed.discard(name)
            log.warning("node %s: NodeTwin readable again; enforcing its intent", name)
        cpu, gpu = c.reconcile(spec)
        written = True
        if exists:
            written = self._api_write(lambda: self.kube.write_control_status(name, cpu, gpu))
        # After the reconcile, not on a timer: a renewed Lease (or a pushed reconcile time) says this
        # node's loop works.
        self._reconciled(name)
        renewed = self._api_write(lambda: self.kube.renew_lease(name))
        return published and written and renewed

    def _refuse_spec(self, name: str, c: NodeController, now: float, err: ObjectDecodeError) -> bool:
        """A NodeTwin whose spec is out of the schema's bounds (``packagePowerCapWatts: 1e30`` past a
        CRD without the maximum) is refused, never enforced: enforced, it uncapped the node or broke
        the reconcile (issue 36). The last accepted intent stays enforced and controlStatus says why."""
        _t, exists, spec = self.last_spec.get(name, (now, False, None))
        cpu, gpu = c.reconcile(spec)
        refused = f"NodeTwin spec refused ({err})"
        cpu = replace(cpu, result="blocked", message=f"{refused}; holding: {cpu.message}"[:1024])
        gpu = replace(gpu, result="blocked", message=f"{refused}; holding: {gpu.message}"[:1024])
        if self.refusals.get(name) != refused:
            self.refusals[name] = refused
            log.error("node %s: %s; the last accepted cap stays enforced", name, refused)
        self._api_write(lambda: self.kube.write_control_status(name, cpu, gpu))
        self._reconciled(name)  # the agent works; the twin is what is wrong
        self._api_write(lambda: self.kube.renew_lease(name))
        return False  # not reconciled with the cluster's intent: counted as a failed node

    def _reconciled(self, name: str) -> None:
        """The node's heartbeat in the power export (its Lease is then renewed rarely: kube.heartbeat)."""
        if self.exporter is not None:
            self.exporter.reconciled(name, self.clock.now().timestamp())

    def _enforce_last_intent(self, name: str, c: NodeController, now: float) -> None:
        """Keep enforcing the last intent read; past spec_read_timeout_s relax every cap (no
        intent), as a node cut off from its controller must not stay capped."""
        t, _exists, spec = self.last_spec.get(name, (now, False, None))
        if now - t >= self.s.spec_read_timeout_s:
            if name not in self.relaxed:
                self.relaxed.add(name)
                log.warning("node %s: NodeTwin unreadable for %.0f s (SPEC_READ_TIMEOUT %.0f s); relaxing all caps",
                            name, now - t, self.s.spec_read_timeout_s)
            c.reconcile(None)
        else:
            c.reconcile(spec)

    def plan_export(self, name: str, c: NodeController) -> None:
        """Register the node's counters with the power exporter; a node with none says why in NodeHardware."""
        assert self.exporter is not None and c.hardware is not None
        vendor = c.facts.gpu.vendor if c.facts.gpu else ""

        def read_gpus() -> Inventory | None:
            # Wait for a cap write in progress to finish (the export thread only; the agent loop never
            # waits on it); past GPU_READ_WAIT_S skip this read: the exporter integrates the last draw.
            if not c.gpu_tools.acquire(timeout=GPU_READ_WAIT_S):
                return None
            try:
                # The reading the activity read of this cycle takes too, and the cap verification after it.
                return c.gpu_readings.read(vendor, SAME_CYCLE_S).inventory
            finally:
                c.gpu_tools.release()

        read_activity, read_holders = self._gpu_readers(name, c, vendor)
        reason = self.exporter.set_node(name, c.paths, c.facts, read_gpus, read_activity, read_holders)
        if reason is not None and c.hardware.quality is not None:
            c.hardware.quality.warnings = [*(c.hardware.quality.warnings or []), reason]

    def _gpu_readers(self, name: str, c: NodeController, vendor: str) -> tuple[
            Callable[[], ActivityReport | None] | None, Callable[[], list[DeviceHolder] | None] | None]:
        """The node's board signals and pod-resources readers for the exporter; (None, None) but on an
        NVIDIA node. The pod-resources socket is POD_RESOURCES_SOCKET (none: no allocation series)."""
        if vendor != "nvidia" or not c.facts.gpu or not c.facts.gpu.devices:
            return None, None
        last: list[ActivityReport] = []

        def read_activity() -> ActivityReport | None:
            if not c.gpu_tools.acquire(timeout=GPU_READ_WAIT_S):
                return None
            try:
                report = c.gpu_readings.activity(vendor)
            finally:
                c.gpu_tools.release()
            last[:] = [report]
            self._warn_once(name, "activity", report.warnings)
            return report

        socket = self.s.node_pod_resources_socket(name)
        if socket is None:
            return read_activity, None
        client = self.pod_resources.get(name)
        if client is None or client.socket != socket:
            client = self.pod_resources[name] = PodResourcesClient(socket)

        def read_holders() -> list[DeviceHolder] | None:
            try:
                devices = client.list()
            except PodResourcesError as err:
                self._warn_once(name, "pod-resources", [str(err)])
                return None
            if last:
                self._warn_once(name, "pod-resources", boards_held(devices, last[0].boards)[1])
            return devices

        return read_activity, read_holders

    def _warn_once(self, node: str, what: str, warnings: list[str]) -> None:
        """A GPU signal's warnings logged once per node and change (they repeat every export)."""
        key, text = f"{node}/{what}", "; ".join(warnings)
        before = self.gpu_report_warnings.get(key, "")
        if before != text:
            self.gpu_report_warnings[key] = text
            if text:
                log.warning("node %s: %s", node, text[:1000])
            else:
                log.info("node %s: %s works again", node, what)
