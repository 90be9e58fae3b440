"""The agent's Kubernetes reads and writes: its Node(s), NodeHardware, NodeTwin.status.controlStatus.

Writes go through `joulie_api.kube.JoulieClient` as field manager joulie-agent: NodeHardware by
server-side apply (spec, then status), NodeTwin by server-side apply of status.controlStatus only,
so managedFields show the agent owning nothing else of a NodeTwin. The agent's heartbeat is a Lease
per node (`heartbeat`), renewed every AGENT_HEARTBEAT; controlStatus is then rewritten only when it
changes or every AGENT_STATUS_REWRITE. Without a Lease namespace (AGENT_LEASE_NAMESPACE and
POD_NAMESPACE unset) controlStatus's `heartbeatAt` stays the heartbeat, rewritten every AGENT_HEARTBEAT.
A pool agent keeps its Nodes from a Node watch (`watched_nodes`), and lists them only while that watch
has no current view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from joulie_agent.control.outcomes import CPUOutcome, GPUOutcome
from joulie_agent.discovery.status import status_document
from joulie_agent.kube.heartbeat import LeaseHeartbeat
from joulie_agent.kube.twincache import TwinSpecCache
from joulie_api.generated.nodehardware import NodeHardware, NodeHardwareSpec, NodeHardwareStatus
from joulie_api.generated.nodetwin import ControlStatus, NodeTwin, NodeTwinSpec, NodeTwinStatus
from joulie_api.kube import NODE_HARDWARE, NODE_TWIN, JoulieClient, KubeWriteError, ObjectDecodeError, response_json
from joulie_api.names import object_name_for_node
from joulie_api.watchcache import WatchCache
from joulie_common.clock import Clock


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

    def __init__(self, client: JoulieClient, clock: Clock, rewrite_s: float = 300.0, heartbeat_s: float = 30.0,
                 twins: TwinSpecCache | None = None, leases: LeaseHeartbeat | None = None,
                 status_rewrite_s: float = 600.0, node_view: WatchCache[NodeSeen] | None = None):
        self.client = client
        # A pool agent's Nodes, kept by a Node watch (None: listed every POOL_LIST_INTERVAL).
        self.node_view = node_view
        self.clock = clock
        # The NodeTwin watch's cache: read_spec GETs only what it cannot answer (None: GET every time).
        self.twins = twins
        self.hw_writes = SkipUnchanged(rewrite_s)
        # The liveness the controller manager watches (agent-lost): the Lease when there is one, and
        # then controlStatus is rewritten unchanged only every status_rewrite_s (its heartbeatAt still
        # counts, for a controller older than the Leases); without one, every heartbeat.
        self.leases = leases
        self.status_writes = SkipUnchanged(status_rewrite_s if leases is not None else heartbeat_s)

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

    def watched_nodes(self) -> list[NodeSeen] | None:
        """The Nodes the Node watch keeps (already this agent's shard), or None while it has no
        complete, current view (not listed yet, or the watch down): then the caller lists."""
        if self.node_view is None or not self.node_view.synced.is_set():
            return None
        return self.node_view.values()

    def read_node(self, name: str) -> NodeSeen | None:
        resp: Any = self.client.core.read_node(name, _preload_content=False)
        return node_seen(response_json(resp))

    def read_spec(self, node: str) -> tuple[bool, NodeTwinSpec | None]:
        """(twin exists, its spec), from the watch's cache when it has the twin, else by a GET.

        Raises ObjectDecodeError for a spec out of the schema's bounds, from either.
        """
        name = object_name_for_node(node)
        if self.twins is None:
            twin = self.client.get(NODE_TWIN, name)
        else:
            try:
                twin = _spec_of(self.twins.lookup(name))
            except KeyError:
                ticket = self.twins.ticket(name)
                try:
                    twin = self.client.get(NODE_TWIN, name)
                except ObjectDecodeError as err:
                    self.twins.store_read(name, err, ticket)
                    raise
                self.twins.store_read(name, twin, ticket)
        return (twin is not None, twin.spec if twin else None)

    def renew_lease(self, node: str) -> bool:
        """Renew ``node``'s heartbeat Lease when due; False when not due or there are no Leases."""
        return self.leases is not None and self.leases.renew(node)

    def forget_lease(self, node: str) -> None:
        if self.leases is not None:
            self.leases.forget(node)

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


def _spec_of(twin: NodeTwin | ObjectDecodeError | None) -> NodeTwin | None:
    if isinstance(twin, ObjectDecodeError):
        raise twin.with_traceback(None)  # a fresh traceback: re-raising one object would chain them all
    return twin
