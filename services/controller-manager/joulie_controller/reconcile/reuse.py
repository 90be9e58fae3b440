"""What a tick reuses from the last one, so its cost follows what changed rather than the cluster's size.

At 10 000 Nodes a steady tick spent most of its time rebuilding, for every node, values whose inputs
had not moved: the hardware view of an unchanged NodeHardware, the desired spec of unchanged caps,
and the JSON form of the twin the cluster holds (to compare against); since, the caps of unchanged
inputs and whether the held spec is the desired one, for the same two JSON forms. The watch cache
(``kube.informer``) keeps each object until it changes, so "the same object as last tick" (``is``:
a held reference, so its id cannot be reused) or, for a NodeTwin spec, the same
``metadata.generation`` (which moves with the spec alone) says the derived value still holds.
Every entry is checked against its inputs before use: a miss only costs the rebuild. Pure.

The twin's status is decided the same way, by value: the tick's inputs to it (the twin model's
input, the measured source, the policy's decision and the power state) equal to last tick's, with
the same held status, give last tick's answer to "changed beyond noise?" without building the
status (the refresh period is checked every tick). Measured power moves a little on a live
cluster, so there a node's status is rebuilt most ticks; this reuse pays on nodes without a
reading, powered-off ones, or a cluster whose readings hold still. What is rebuilt to be compared
is the status's JSON form as plain data (``nodetwin.status_body``); its model is built only for a
write. With readings moving, the rest of the status (what the caps, hardware, source and decision
make it) rarely moves: against the same held status, last tick's verdict on that rest holds while
its inputs hold, and only the measured values are made and compared, as a row of numbers
(``statusband.fixed_changed`` and ``measured_changed``, together ``status_changed``'s answer).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import NodeTwin, NodeTwinSpec, NodeTwinStatus
from joulie_controller.model import fsm
from joulie_controller.model.caps import Caps
from joulie_controller.model.hardware import HardwareView, from_node_hardware
from joulie_controller.policies.plan import BoardLock
from joulie_controller.reconcile.nodetwin import controllers_lock, controllers_locks, dump, owned_spec, owned_status
from joulie_controller.reconcile.statusband import MeasuredRow, fixed_changed, measured_changed, measured_values


@dataclass(frozen=True)
class TwinFacts:
    """What the tick reads of a held NodeTwin, read once per twin object."""

    lock_pct: float | None
    """``nodetwin.controllers_lock``: the node-wide clock lock in spec when it is the controller's."""
    locks: tuple[BoardLock, ...] | None
    """``nodetwin.controllers_locks``: spec.gpu.clockLocks when they are the controller's."""
    previous: fsm.State
    """The assignment state its spec holds (profile, draining): where the downgrade guard starts."""
    agent_lost: bool
    """Its liveness check last said agent-lost (``kube/liveness.py``)."""


def twin_facts(existing: NodeTwin) -> TwinFacts:
    spec, status = existing.spec, existing.status
    agent = status.agent if status is not None else None
    return TwinFacts(
        controllers_lock(existing), controllers_locks(existing),
        fsm.assignment_state(spec.profile, bool(spec.scheduling and spec.scheduling.draining)),
        agent is not None and agent.state == "agent-lost")


@dataclass(frozen=True, slots=True)
class HeldStatus:
    """The status the cluster holds, as the tick compares it."""

    body: dict[str, Any]
    """``nodetwin.owned_status``: the fields the controller owns, as JSON."""
    measured: MeasuredRow
    """``statusband.measured_values(body)``: its measured values, read once per status object."""


def held_status(status: NodeTwinStatus | None) -> HeldStatus:
    body = owned_status(status)
    return HeldStatus(body, measured_values(body))


_StatusEntry = tuple[object, object, HeldStatus, float, bool, bool]
"""``Reuse.status``'s memo: fixed inputs, moving inputs, the held status, the dead band, whether the
fixed part differed from the held one, and the answer."""


@dataclass
class Reuse:
    """Per node (or twin object name), the last derived value and what it was derived from."""

    views: dict[str, tuple[NodeHardware, int, HardwareView]] = field(default_factory=dict)
    desired: dict[str, tuple[Hashable, NodeTwinSpec, dict[str, Any]]] = field(default_factory=dict)
    held_specs: dict[str, tuple[object, dict[str, Any]]] = field(default_factory=dict)
    held_statuses: dict[str, tuple[NodeTwinStatus | None, HeldStatus]] = field(default_factory=dict)
    statuses: dict[str, _StatusEntry] = field(default_factory=dict)
    facts: dict[str, tuple[NodeTwin, TwinFacts]] = field(default_factory=dict)
    caps: dict[str, tuple[object, tuple[Caps, list[str]]]] = field(default_factory=dict)
    specs_same: dict[str, tuple[dict[str, Any], dict[str, Any], bool]] = field(default_factory=dict)

    def twin_facts(self, name: str, existing: NodeTwin) -> TwinFacts:
        """``twin_facts(existing)``, for the same twin object (the watch cache keeps it until it changes;
        read five times a node a tick, its clock locks dumped to compare, they were a tenth of a tick)."""
        return _same_object(self.facts, name, existing, twin_facts)

    def hardware_view(self, node: str, nhw: NodeHardware, allocatable_gpus: int) -> HardwareView:
        """``from_node_hardware(nhw, allocatable_gpus)``, rebuilt only when either changed."""
        entry = self.views.get(node)
        if entry is not None and entry[0] is nhw and entry[1] == allocatable_gpus:
            return entry[2]
        view = from_node_hardware(nhw, allocatable_gpus)
        self.views[node] = (nhw, allocatable_gpus, view)
        return view

    def node_caps(self, node: str, key: object, build: Callable[[], tuple[Caps, list[str]]]) -> tuple[Caps, list[str]]:
        """The node's caps and their warnings for inputs ``key`` (compared by value: the view by identity
        first); ``build`` (``model.caps.compute_caps``) runs only when ``key`` changed. The same caps
        object tick to tick also makes the desired spec's key compare by identity."""
        entry = self.caps.get(node)
        if entry is not None and entry[0] == key:
            return entry[1]
        made = build()
        self.caps[node] = (key, made)
        return made

    def desired_spec(
        self, node: str, key: Hashable, build: Callable[[], NodeTwinSpec]
    ) -> tuple[NodeTwinSpec, dict[str, Any]]:
        """The desired spec and its JSON form for inputs ``key``; ``build`` runs only when ``key`` changed."""
        entry = self.desired.get(node)
        if entry is not None and entry[0] == key:
            return entry[1], entry[2]
        spec = build()
        body = dump(spec)
        self.desired[node] = (key, spec, body)
        return spec, body

    def spec_same(self, node: str, held: dict[str, Any], desired: dict[str, Any]) -> bool:
        """``held == desired``, for the JSON forms ``held_spec`` and ``desired_spec`` keep (kept here too,
        so their ids are not reused): both the same objects as last tick, the same answer. Comparing
        the two nested specs of every node every tick was a fortieth of the tick at 10 000 Nodes."""
        entry = self.specs_same.get(node)
        if entry is not None and entry[0] is held and entry[1] is desired:
            return entry[2]
        same = held == desired
        self.specs_same[node] = (held, desired, same)
        return same

    def held_spec(self, name: str, existing: NodeTwin, controller_lock_pct: float | None = None,
                  controller_locks: tuple[BoardLock, ...] | None = None) -> dict[str, Any]:
        """``dump(owned_spec(existing.spec, controller_lock_pct, controller_locks))``, for the same spec
        object or the same twin's same generation, with the same locks counted as the controller's."""
        meta = existing.metadata or {}
        generation, uid = meta.get("generation"), meta.get("uid")
        # The generation moves with the spec alone; the uid tells a twin deleted and created again. Whose
        # clock lock it is comes from the status (capDecision), which moves no generation: part of the key.
        token: object = (
            ("generation", uid, generation, controller_lock_pct, controller_locks)
            if isinstance(generation, int) and uid
            else (existing.spec, controller_lock_pct, controller_locks)
        )
        entry = self.held_specs.get(name)
        if entry is not None and (entry[0] is token or (isinstance(token, tuple) and entry[0] == token)):
            return entry[1]
        body = dump(owned_spec(existing.spec, controller_lock_pct, controller_locks))
        self.held_specs[name] = (token, body)
        return body

    def held_status(self, name: str, status: NodeTwinStatus | None) -> HeldStatus:
        """``held_status(status)``, for the same status object."""
        return _same_object(self.held_statuses, name, status, held_status)

    def status(self, node: str, fixed: object, moving: object, measured: Callable[[], MeasuredRow],
               build: Callable[[], dict[str, Any]], held: HeldStatus, deadband_pct: float) -> bool:
        """Whether the node's status differs from ``held`` (``held_status``: kept there, so its id is
        not reused) beyond noise, as ``statusband.status_changed`` answers for the status's JSON form as
        ``build`` makes it (``nodetwin.status_body``).

        ``fixed``: the inputs of what is not a measured value (compared by value); ``moving``: the
        inputs of the measured values, which ``measured`` makes (``nodetwin.measured_row``). With
        both and ``held`` as last tick, last tick's answer. With ``fixed`` and ``held`` as last tick,
        last tick's verdict on the fixed part and this tick's measured values: ``build`` runs only when
        ``fixed`` or ``held`` changed. Only verdicts and inputs are kept: keeping the status too cost
        12 MiB more at 10 000 Nodes."""
        entry = self.statuses.get(node)
        if entry is not None and entry[2] is held and entry[0] == fixed:
            if entry[1] == moving and entry[3] == deadband_pct:
                return entry[5]
            differs = entry[4]
            changed = differs or measured_changed(measured(), held.measured, deadband_pct)
            fixed = entry[0]  # last tick's, equal: this tick's is freed now, not left for the collector
        else:
            body = build()
            differs = fixed_changed(body, held.body)
            changed = differs or measured_changed(measured_values(body), held.measured, deadband_pct)
        self.statuses[node] = (fixed, moving, held, deadband_pct, differs, changed)
        return changed

    def forget(self, live_nodes: set[str], live_twins: set[str]) -> None:
        """Drops what belongs to nodes and twins that are gone."""
        for memo, live in (
            (self.views, live_nodes),
            (self.desired, live_nodes),
            (self.statuses, live_nodes),
            (self.caps, live_nodes),
            (self.specs_same, live_nodes),
            (self.held_specs, live_twins),
            (self.held_statuses, live_twins),
            (self.facts, live_twins),
        ):
            for gone in [k for k in memo if k not in live]:
                del memo[gone]


_In = TypeVar("_In")
_Out = TypeVar("_Out")


def _same_object(cache: dict[str, tuple[_In, _Out]], name: str, obj: _In, make: Callable[[_In], _Out]) -> _Out:
    """``make(obj)``, kept under ``name`` and made again only for another object (the watch cache
    hands the same object until the resource changes)."""
    entry = cache.get(name)
    if entry is not None and entry[0] is obj:
        return entry[1]
    out = make(obj)
    cache[name] = (obj, out)
    return out
