"""The agent loop over Kubernetes: publish NodeHardware, read NodeTwin.spec, write controlStatus.

Writes go through `joulie_api.kube.JoulieClient` as field manager joulie-agent: NodeHardware by
server-side apply (spec, then status), NodeTwin by server-side apply of status.controlStatus only,
so managedFields show the agent owning nothing else of a NodeTwin. controlStatus carries the
agent's heartbeat (`heartbeatAt`), rewritten at least every AGENT_HEARTBEAT.

Enforcement is local and never waits for the API server: while it does not answer, the agent
keeps enforcing the last intent it read, relaxes every cap once the NodeTwin has been unreadable
for SPEC_READ_TIMEOUT (as the README says), and logs one line when the API server goes away and
one when it is back (`joulie_api.outage`), trying it again on the backoff schedule meanwhile.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from joulie_agent.bmcpower import bmc_factory
from joulie_agent.catalog import Catalog, CatalogError, load_catalog
from joulie_agent.discovery import status_document
from joulie_agent.gputools import Inventory
from joulie_agent.hostread import HostPaths, gpu_inventory
from joulie_agent.metrics import AgentMetrics
from joulie_agent.node import CPUOutcome, GPUOutcome, NodeController, NodeOptions
from joulie_agent.nvml import NVML, open_nvml
from joulie_agent.otlpexport import PowerExporter, otlp_exporter
from joulie_agent.settings import Settings
from joulie_agent.toolrun import make_runner
from joulie_api.backoff import Backoff
from joulie_api.generated.nodehardware import NodeHardware, NodeHardwareSpec, NodeHardwareStatus
from joulie_api.generated.nodetwin import ControlStatus, NodeTwinSpec, NodeTwinStatus
from joulie_api.kube import NODE_HARDWARE, NODE_TWIN, JoulieClient, KubeWriteError, response_json
from joulie_api.names import FIELD_MANAGER_AGENT, object_name_for_node
from joulie_api.outage import Outage, not_now, short_error, unanswered
from joulie_common.clock import Clock, SystemClock
from joulie_common.sharding import owns_node

log = logging.getLogger(__name__)

# Hardware is rediscovered this often (GPU tools are slow; sysfs layouts do not change at runtime).
REDISCOVER_S = 300.0
# ... and this often while the GPUs a node should have did not answer its discovery (a tool timing out
# as a node's agents all start at once): until then its NodeHardware offers no GPU control.
GPU_REDISCOVER_S = 30.0


GPU_READ_WAIT_S = 10.0
"""How long the power export waits for the node's GPU tools while a cap is being written."""


@dataclass(frozen=True)
class NodeSeen:
    """What the agent reads from a Node object each tick."""

    name: str
    labels: dict[str, str]
    allocatable: dict[str, str]
    capacity: dict[str, str]


def node_seen(obj: Mapping[str, Any]) -> NodeSeen | None:
    """A Node object (JSON as the API server sends it) as the agent reads it; None without a name."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None

    def strings(m: object) -> dict[str, str]:
        return {str(k): str(v) for k, v in m.items()} if isinstance(m, dict) else {}

    # capacity.cpu is the host's CPU count before reservations (discovery.host_cores).
    return NodeSeen(name, strings(meta.get("labels")), strings(status.get("allocatable")), strings(status.get("capacity")))


@dataclass
class SkipUnchanged:
    """Skip a write whose payload equals the last one, unless `max_age_s` passed since it."""

    max_age_s: float
    last: dict[str, tuple[Any, float]] = field(default_factory=dict)

    def due(self, key: str, payload: Any, now_s: float) -> bool:
        prev = self.last.get(key)
        return prev is None or prev[0] != payload or now_s - prev[1] >= self.max_age_s

    def done(self, key: str, payload: Any, now_s: float) -> None:
        self.last[key] = (payload, now_s)


class AgentKube:
    """The agent's only Kubernetes reads and writes."""

    def __init__(self, client: JoulieClient, clock: Clock, rewrite_s: float = 300.0, heartbeat_s: float = 30.0):
        self.client = client
        self.clock = clock
        self.hw_writes = SkipUnchanged(rewrite_s)
        # controlStatus is rewritten unchanged every heartbeat: its heartbeatAt is the agent's
        # liveness, which the controller manager watches (agent-lost).
        self.status_writes = SkipUnchanged(heartbeat_s)

    def publish_hardware(self, node: str, status: NodeHardwareStatus) -> bool:
        """Apply NodeHardware for `node`; False when skipped as unchanged."""
        name = object_name_for_node(node)
        payload = status_document(status)
        now = self.clock.monotonic()
        if not self.hw_writes.due(name, payload, now):
            return False
        if name not in self.hw_writes.last:
            self.client.apply(NODE_HARDWARE, name, NodeHardware(spec=NodeHardwareSpec(node_name=node)))
        stamped = status.model_copy(update={"updated_at": self.clock.now()})
        self.client.apply_status(NODE_HARDWARE, name, stamped)
        self.hw_writes.done(name, payload, now)
        return True

    def list_nodes(self, label_selector: str) -> list[NodeSeen]:
        """The Nodes a pool agent may own, decoded from the JSON: the client's typed V1Node
        decoding took ~1 ms a Node, a second of CPU a tick for each pool agent at 1000 Nodes."""
        resp: Any = self.client.core.list_node(label_selector=label_selector, _preload_content=False)
        items = response_json(resp).get("items") or []
        return [n for n in (node_seen(i) for i in items if isinstance(i, dict)) if n is not None]

    def read_node(self, name: str) -> NodeSeen | None:
        resp: Any = self.client.core.read_node(name, _preload_content=False)
        return node_seen(response_json(resp))

    def read_spec(self, node: str) -> tuple[bool, NodeTwinSpec | None]:
        """(twin exists, its spec)."""
        twin = self.client.get(NODE_TWIN, object_name_for_node(node))
        return (twin is not None, twin.spec if twin else None)

    def write_control_status(self, node: str, cpu: CPUOutcome, gpu: GPUOutcome) -> bool:
        name = object_name_for_node(node)
        payload = (cpu, gpu)
        now = self.clock.monotonic()
        if not self.status_writes.due(name, payload, now):
            return False
        status = NodeTwinStatus(control_status=ControlStatus(
            heartbeat_at=self.clock.now(), cpu=cpu.status(self.clock), gpu=gpu.status(self.clock)))
        try:
            self.client.apply_status(NODE_TWIN, name, status)
        except KubeWriteError as err:
            if err.status == 404:  # the controller manager has not created the twin yet
                return False
            raise
        self.status_writes.done(name, payload, now)
        return True


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
        # When a pool agent last listed its Nodes: a list of every Node each tick was most of a pool
        # agent's CPU at 1000 Nodes (5 MB of JSON), and the Node set seldom changes.
        self.listed_at: float | None = None
        # Nodes whose caps were relaxed for an unreadable NodeTwin (logged once, not per tick).
        self.relaxed: set[str] = set()
        # The last reconcile error logged per node: the same error again is not logged again.
        self.node_errors: dict[str, str] = {}

    def controller(self, node: str) -> NodeController:
        c = self.controllers.get(node)
        if c is None:
            paths = HostPaths.under(self.s.node_root(node), self.s.node_sys_root(node))
            run = make_runner(self.s.node_tool_path(node), self.s.tool_timeout_s)
            c = NodeController(node, paths, self.catalog, run, self.nvml if self.s.mode == "daemonset" else None,
                               self.clock, self.metrics, NodeOptions(simulate_only=self.s.simulate_only, dvfs=self.s.dvfs))
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
        if (self.s.mode == "pool" and self.listed_at is not None
                and now - self.listed_at < self.s.pool_list_interval_s):
            listed, nodes = False, self.last_nodes
        else:
            listed, nodes = self._api_call(self.nodes)
        if listed:
            self.last_nodes = nodes
            self.listed_at = now
            for gone in set(self.controllers) - {n.name for n in nodes}:
                del self.controllers[gone]
                if self.exporter is not None:
                    self.exporter.remove_node(gone)
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
        answered, read = self._api_call(lambda: self.kube.read_spec(name))
        if not answered:
            self._enforce_last_intent(name, c, now)
            return False
        exists, spec = read
        self.last_spec[name] = (now, exists, spec)
        if name in self.relaxed:
            self.relaxed.discard(name)
            log.warning("node %s: NodeTwin readable again; enforcing its intent", name)
        cpu, gpu = c.reconcile(spec)
        written = True
        if exists:
            written = self._api_write(lambda: self.kube.write_control_status(name, cpu, gpu))
        return published and written

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
                return gpu_inventory(vendor, c.run, c.nvml)
            finally:
                c.gpu_tools.release()

        reason = self.exporter.set_node(name, c.paths, c.facts, read_gpus)
        if reason is not None and c.hardware.quality is not None:
            c.hardware.quality.warnings = [*(c.hardware.quality.warnings or []), reason]


class TwinSpecChanges:
    """Which NodeTwin watch events are a spec change of a twin this agent enforces.

    Pure. Status writes (the controller's, every agent's heartbeat) are most of a cluster's NodeTwin
    events; the spec's ``metadata.generation`` moves only with the spec, so an event wakes the loop
    only when an owned twin's generation differs from the last one seen (or the twin went away).
    """

    def __init__(self, owned: Callable[[str], bool]) -> None:
        self.owned = owned
        self.generations: dict[str, object] = {}

    def wakes(self, event: dict[str, Any]) -> bool:
        obj = event.get("object")
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not self.owned(name):
            return False
        assert isinstance(meta, dict)
        if event.get("type") == "DELETED":
            return self.generations.pop(name, None) is not None
        gen = meta.get("generation")
        if name in self.generations and self.generations[name] == gen:
            return False
        self.generations[name] = gen
        return True


class TwinWatcher:
    """Wakes the loop when a NodeTwin's spec changes, so a new cap is enforced at once, not a tick later.

    The reconcile still GETs the twin: the watch only shortens the wait, and a broken watch
    (restarted with backoff) costs latency, never correctness. One node's agent watches its own twin
    (a field selector); a pool agent watches all and keeps its own. The watch resumes from the last
    resourceVersion seen (bookmarks keep it fresh), so a restart does not list every twin again:
    at 1000 Nodes each pool agent's restart every minute re-read all 1000 twins, and every status
    write woke every agent's loop.
    """

    def __init__(self, kube_api: Any, wake: threading.Event, stop: threading.Event,
                 owned: Callable[[str], bool] = lambda _name: True, twin_name: str = ""):
        self.kube_api, self.wake, self.stop = kube_api, wake, stop
        self.twin_name = twin_name  # watch this NodeTwin object alone (its name: object_name_for_node)
        self.changes = TwinSpecChanges(owned)
        self.resource_version = ""
        self.thread = threading.Thread(target=self._run, name="nodetwin-watch", daemon=True)
        # One line when the watch starts failing (429, API server down), one when it streams again;
        # it logged a multi-line warning (every response header) per retry (issue 23, api-throttle).
        self.health = Outage("NodeTwin watch", log)

    def start(self) -> TwinWatcher:
        self.thread.start()
        return self

    def _run(self) -> None:
        from kubernetes import client as k8s
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        from joulie_api.names import GROUP, PLURAL_NODE_TWIN, VERSION

        custom = k8s.CustomObjectsApi(self.kube_api)
        watch_api: Any = watch  # the watch helper is untyped
        while not self.stop.is_set():
            w = watch_api.Watch()
            kwargs: dict[str, Any] = {"timeout_seconds": 300, "allow_watch_bookmarks": True}
            if self.twin_name:
                kwargs["field_selector"] = f"metadata.name={self.twin_name}"
            if self.resource_version:
                kwargs["resource_version"] = self.resource_version
            try:
                for event in w.stream(custom.list_cluster_custom_object, GROUP, VERSION, PLURAL_NODE_TWIN, **kwargs):
                    self.health.ok()
                    if isinstance(event, dict) and self.changes.wakes(event):
                        self.wake.set()
                    if self.stop.is_set():
                        break
                else:  # the server ended the watch (timeout_seconds): it answered
                    self.health.ok()
                self.resource_version = str(getattr(w, "resource_version", "") or "")
            except ApiException as err:
                if err.status == 410:  # the resourceVersion is too old: start over from the current state
                    self.resource_version = ""
                    continue
                self.stop.wait(self.health.failed(err))
            except Exception as err:
                self.stop.wait(self.health.failed(err))
            finally:
                w.stop()


def main_loop(settings: Settings, once: bool = False) -> int:
    from prometheus_client import start_http_server

    clock = SystemClock(whole_seconds=True)  # status timestamps in whole seconds
    metrics = AgentMetrics()
    if settings.metrics_addr and not once:
        host, _, port = settings.metrics_addr.rpartition(":")
        start_http_server(int(port), addr=host or "127.0.0.1", registry=metrics.registry)
    from joulie_api.kubeconfig import api_client

    try:
        catalog = load_catalog(extra=Path(settings.hardware_catalog_extra) if settings.hardware_catalog_extra else None)
    except CatalogError as err:  # an operator's entry is wrong: say which, and do not start
        log.error("hardware catalog: %s", err)
        return 2
    api = api_client()
    # No retries inside a call: the loop's outage backoff decides when to try again, and
    # enforcement must not wait 54 s on a write to an API server that is down.
    kube = AgentKube(JoulieClient(api, FIELD_MANAGER_AGENT, Backoff(delays_s=())), clock, settings.hardware_rewrite_s,
                     settings.heartbeat_s)
    exporter = None
    if settings.power_export_endpoint and not once:
        exporter = PowerExporter(otlp_exporter(settings.power_export_endpoint), settings.power_export_interval_s,
                                 on_result=lambda ok: metrics.power_exports.labels("ok" if ok else "failed").inc(),
                                 host_power=bmc_factory(settings.bmc_secret_dir, settings.power_export_interval_s,
                                                        settings.bmc_timeout_s))
        exporter.start()
        log.info("exporting measured power every %.0f s to %s (host power: %s)", settings.power_export_interval_s,
                 settings.power_export_endpoint,
                 f"the BMC in the Secret at {settings.bmc_secret_dir}" if settings.bmc_secret_dir else "sum of components")
    agent = Agent(settings, kube, catalog, clock, metrics,
                  open_nvml() if settings.mode == "daemonset" else None, exporter)
    stop, wake = threading.Event(), threading.Event()

    def on_signal(*_: object) -> None:
        stop.set()
        wake.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    if not once:
        if settings.mode == "pool":
            TwinWatcher(api, wake, stop,
                        owned=lambda name: owns_node(name, settings.pool_shards, settings.pool_shard_id)).start()
        else:
            TwinWatcher(api, wake, stop, twin_name=object_name_for_node(settings.node_name)).start()
    log.info("joulie-agent mode=%s node=%s root=%s simulate_only=%s", settings.mode, settings.node_name or "-",
             settings.root, settings.simulate_only)
    loop_error = ""  # logged once, and again only when it changes
    while True:
        try:
            failed = agent.tick()
        except Exception as err:
            if short_error(err) != loop_error:
                loop_error = short_error(err)
                log.error("reconcile loop failed (logged again only when the error changes): %s", loop_error)
            failed = 1
        else:
            if loop_error:
                log.warning("reconcile loop works again")
                loop_error = ""
        if once:
            return 1 if failed else 0
        wake.wait(settings.reconcile_interval_s)
        wake.clear()
        if stop.is_set():
            if exporter is not None:
                exporter.stop()
            return 0
