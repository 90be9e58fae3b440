"""Live energy receipts: what each Pod held over each window, split by ``model.receipt.attribute``, summed
per Pod, and the annotations to write. Pure: the shell (``controller``) queries the window's energies
and maps, looks up when finished Pods ended, writes what ``ReceiptBook.close`` returns and exports the
per-window parts as metrics (docs/energy-receipts.md, "Live").

Every RECEIPT_WINDOW the shell closes the window ``[start, end]``:

- a Pod's part of the window is the overlap of ``[its start, its finish or now]`` with it (the
  Pod's ``status.startTime``; its containers' latest ``finishedAt`` once it has finished);
- the boards it held are the ones ``hw.gpu.allocation`` named it for on its node inside the window, as far
  as the node's hardware and Pods bear them out (``receiptboards``);
- its CPU time is cAdvisor's over the window where the node exports it (else its request counts);
- each node's idle floors are learnt from the windows as the benchmark does (``IdleFloor``);
- the counterfactual comes from the limits in force at the window's close (the NodeTwin spec) and the
  Pod's estimate or its kind's prior (``Conditions``), when the shell has them.

A running Pod's annotation is rewritten at most once a window and only when its receipt changed; a
finished Pod's once more, marked finished, and then it is forgotten here (its series in the metrics
stay a while: ``telemetry.metrics``).

A receipt belongs to one Pod object: the book keys its spans and totals by the Pod's UID (``span_key``),
so a Pod deleted and created again under the same name inside a window gets a receipt of its own
instead of the two merging. What Prometheus says of a Pod (its boards, its CPU time) is labelled by
namespace and name only: where two Pods of one name ran inside one window, the name's CPU time is split
between them by the time each ran in it (not read whole by each: that counted it twice), and the boards
the name held on a node are shared by held time, as any board two holders held in one window. The
metrics are labelled by name too, so their parts add up under it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from joulie_api.generated.nodetwin import GPUCapSpec, NodeTwinSpec
from joulie_controller.model.counterfactual import METHOD as COUNTERFACTUAL_METHOD
from joulie_controller.model.counterfactual import Conditions, conditions_for_kind, counterfactual, package_busy
from joulie_controller.model.fsm import PodInfo, pod_key
from joulie_controller.model.hardware import HardwareView
from joulie_controller.model.jobestimate import JobEstimate
from joulie_controller.model.receipt import Holding, IdleFloor, Ledger, NodeEnergy, Receipt, annotation, attribute


def span_key(pod: PodInfo) -> str:
    """The book's key of a Pod: its UID (a later Pod of the same name is another receipt); ``namespace/name``
    where the UID is unknown (a Pod built without one, as the benchmark's)."""
    return pod.uid or pod_key(pod)


@dataclass
class Span:
    """Where and when a Pod ran, as far as the receipts know."""

    node: str
    cores: float
    kind: str
    start_s: float
    end_s: float | None = None
    """When it finished; None while it runs."""
    seen_s: float = 0.0
    """When a tick last saw it running (its finish, where the Pod is gone before its finish was read)."""
    pod: str = ""
    """``namespace/name`` (how Prometheus and the API server name it)."""
    uid: str = ""


@dataclass(frozen=True)
class Window:
    """One window's inputs, as the shell read them."""

    start_s: float
    end_s: float
    energies: Mapping[str, NodeEnergy]
    """Each node's meters over the window (``readings.receiptinputs.node_energies``; the model's idle draws)."""
    gpus: Mapping[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    """The boards each Pod held in the window, by (node, ``namespace/name``) (``hw.gpu.allocation``, as
    ``receiptboards.believed_boards`` believes it)."""
    cpu_used: Mapping[str, float] = field(default_factory=dict)
    """Each Pod's CPU time over the window by ``namespace/name``, core-seconds (cAdvisor); a Pod absent: its
    request counts. Two Pods of one name in the window share it by the time each ran in it."""
    conditions: Mapping[str, Conditions] = field(default_factory=dict)
    """Each Pod's counterfactual conditions by the book's key (``conditions``); a Pod absent: no counterfactual
    (nothing saved, no time added)."""


@dataclass(frozen=True)
class ReceiptWrite:
    pod: str
    """``namespace/name``."""
    node: str
    annotation: str
    """The value of ``joulie.io/energy-receipt``."""
    finished: bool
    receipt: Receipt
    """The whole receipt so far (the event's summary when finished)."""
    key: str = ""
    """The book's key of the Pod (``span_key``)."""
    uid: str = ""
    """The Pod's UID, where known: the write must land on this Pod, not a later one of the same name."""


@dataclass(frozen=True)
class Closed:
    """What one window's close gives the shell."""

    writes: list[ReceiptWrite]
    parts: dict[str, tuple[str, Receipt]]
    """Each Pod's part of this window (with its counterfactual), and its node, by ``namespace/name``: the
    metrics' increments (two Pods of one name in the window: their sum)."""
    unallocated: dict[str, Receipt]
    """Each node's unallocated part of this window."""
    metered_j: dict[str, float]
    """Each node's meter over the window."""
    skipped: list[str]
    """Nodes a Pod ran on whose meter the window did not have (their Pods billed nothing this window)."""
    cpu_idle: dict[str, tuple[float, str]] = field(default_factory=dict)
    """Each metered node's CPU idle draw as billed, W, and where it comes from (``IdleFloor.cpu_source``)."""


@dataclass
class ReceiptBook:
    spans: dict[str, Span] = field(default_factory=dict)
    ledger: Ledger = field(default_factory=Ledger)
    floors: dict[str, IdleFloor] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)
    """The last annotation written per Pod, without its ``updated`` time (written again only when it changes)."""

    def see(self, pods: Iterable[PodInfo], now_s: float, started_s: Mapping[str, float]) -> list[str]:
        """Record the running Pods (``started_s``: each one's ``status.startTime`` by its book key, ``span_key``,
        or by ``namespace/name``; else now); returns the book's keys of the Pods that ran and no longer do:
        the shell looks up when they finished (``finish``; ``spans[key].pod`` and ``.uid`` name them)."""
        running: set[str] = set()
        for pod in pods:
            if pod.phase != "Running" or not pod.node_name:  # a deleting Pod runs until it is gone
                continue
            key = span_key(pod)
            running.add(key)
            span = self.spans.get(key)
            if span is None or span.end_s is not None or span.node != pod.node_name:
                start = min(started_s.get(key, started_s.get(pod_key(pod), now_s)), now_s)
                self.spans[key] = span = Span(
                    pod.node_name, pod.cpu_request, pod.workload_kind, start, pod=pod_key(pod), uid=pod.uid
                )
            span.seen_s = now_s
        return sorted(k for k, s in self.spans.items() if s.end_s is None and k not in running)

    def finish(self, pod: str, end_s: float) -> None:
        span = self.spans.get(pod)
        if span is not None and span.end_s is None:
            span.end_s = max(end_s, span.start_s)

    def close(self, w: Window, updated: str) -> Closed:
        """Split the window between the Pods that ran in it; the annotations to write."""
        t = w.end_s - w.start_s
        held_by: dict[str, float] = {}
        for key, span in self.spans.items():
            held = min(w.end_s, span.end_s if span.end_s is not None else w.end_s) - max(w.start_s, span.start_s)
            if held > 0:
                held_by[key] = min(held, t)
        name_held: dict[str, float] = {}
        for key, held in held_by.items():
            name = self.spans[key].pod or key
            name_held[name] = name_held.get(name, 0.0) + held
        by_node: dict[str, list[Holding]] = {}
        for key, held in held_by.items():
            span = self.spans[key]
            name = span.pod or key
            used = w.cpu_used.get(name)
            share = used * held / name_held[name] if used is not None else None
            by_node.setdefault(span.node, []).append(
                Holding(key, held, w.gpus.get((span.node, name), ()), span.cores, share)
            )
        parts: dict[str, tuple[str, Receipt]] = {}
        unallocated: dict[str, Receipt] = {}
        metered: dict[str, float] = {}
        cpu_idle: dict[str, tuple[float, str]] = {}
        for node, energy in sorted(w.energies.items()):
            holdings = by_node.get(node, [])
            floor = self.floors[node] = self.floors.get(node, IdleFloor()).learn(energy, holdings)
            source = floor.cpu_source(energy)
            energy = floor.apply(energy)
            cpu_idle[node] = (energy.cpu_idle_w, source)
            split = attribute(energy, holdings)
            cf = {p: counterfactual(r, w.conditions[p]) for p, r in split.pods.items() if p in w.conditions}
            self.ledger.add(node, energy, split, cf)
            for p, r in split.pods.items():
                extra = cf.get(p, Receipt())
                part = replace(
                    r,
                    saved_j=extra.saved_j,
                    saved_low_j=extra.saved_low_j,
                    saved_high_j=extra.saved_high_j,
                    added_s=extra.added_s,
                )
                name = self.spans[p].pod or p
                if name in parts:  # an earlier Pod of the same name, in this window too
                    part = parts[name][1] + part
                parts[name] = (node, part)
            unallocated[node] = split.unallocated
            metered[node] = energy.node_j
        writes: list[ReceiptWrite] = []
        for key, span in sorted(self.spans.items()):
            receipt = self.ledger.pods.get(key)
            finished = span.end_s is not None and span.end_s <= w.end_s
            if receipt is None:
                continue
            body = annotation(receipt, span.node, finished, COUNTERFACTUAL_METHOD, "")
            text = body.to_annotation()
            if text != self.written.get(key):
                writes.append(
                    ReceiptWrite(
                        span.pod or key,
                        span.node,
                        replace(body, updated=updated).to_annotation(),
                        finished,
                        receipt,
                        key,
                        span.uid,
                    )
                )
        skipped = sorted(set(by_node) - set(w.energies))
        return Closed(writes, parts, unallocated, metered, skipped, cpu_idle)

    def wrote(self, write: ReceiptWrite) -> None:
        """The shell wrote ``write`` (or the Pod is gone): remember it; a finished Pod is forgotten."""
        key = write.key or write.pod
        if write.finished:
            self.forget(key)
            return
        span = self.spans.get(key)
        if span is not None:
            body = annotation(write.receipt, span.node, False, COUNTERFACTUAL_METHOD, "")
            self.written[key] = body.to_annotation()

    def forget(self, pod: str) -> None:
        self.spans.pop(pod, None)
        self.written.pop(pod, None)
        self.ledger.pods.pop(pod, None)

    def finished_unbilled(self, end_s: float) -> list[str]:
        """Finished Pods with nothing billed by ``end_s`` (their node had no meter): forgotten, named
        ``namespace/name`` (the book keys them by UID, which tells an operator nothing)."""
        gone = [
            k for k, s in self.spans.items() if s.end_s is not None and s.end_s <= end_s and k not in self.ledger.pods
        ]
        names = [self.spans[k].pod or k for k in gone]
        for k in gone:
            self.forget(k)
        return names


def _lock_ratio(g: GPUCapSpec | None, boards: tuple[int, ...]) -> float:
    """The clock ratio the Pod's boards are locked at: the lowest of the node-wide lock and the per-board
    entries naming any of its boards (a lock in MHz is not counted: its ratio needs the board's clock)."""
    if g is None:
        return 1.0
    pcts = [g.clock_lock.pct_of_max] if g.clock_lock is not None else []
    pcts += [e.pct_of_max for e in g.clock_locks or [] if set(e.gpus) & set(boards)]
    return min((p / 100.0 for p in pcts if p is not None), default=1.0)


def conditions(
    spans: Mapping[str, Span],
    gpus: Mapping[tuple[str, str], tuple[int, ...]],
    twins: Mapping[str, NodeTwinSpec],
    views: Mapping[str, HardwareView],
    estimates: Mapping[str, JobEstimate],
) -> dict[str, Conditions]:
    """Each Pod's counterfactual conditions (by the book's key; ``gpus`` by (node, ``namespace/name``)) from the limits
    its node's NodeTwin spec sets (``twins`` by node)
    and its estimate (a GPU Pod the controller has observed), else its kind's prior. A Pod on a node of
    unknown hardware gets none (its receipt then claims no saving)."""
    out: dict[str, Conditions] = {}
    share: dict[str, list[tuple[str, float]]] = {}
    for span in spans.values():
        hw = views.get(span.node)
        if hw is not None and hw.cpu_cores > 0:
            share.setdefault(span.node, []).append((span.kind, span.cores / hw.cpu_cores))
    for key, span in spans.items():
        hw, spec = views.get(span.node), twins.get(span.node)
        if hw is None:
            continue
        if gpus.get((span.node, span.pod or key)) and hw.gpu_max_w > 0:
            g = spec.gpu if spec is not None else None
            cap = g.power_cap if g is not None else None
            ref = hw.gpu_default_w or hw.gpu_max_w
            limit = ref
            if cap is not None and cap.cap_watts_per_gpu is not None:
                limit = cap.cap_watts_per_gpu
            elif cap is not None and cap.cap_pct_of_max is not None:
                limit = cap.cap_pct_of_max / 100.0 * hw.gpu_max_w
            ratio = _lock_ratio(g, gpus.get((span.node, span.pod or key), ()))
            est = estimates.get(span.pod or key)
            if est is not None and est.observations > 0:
                out[key] = Conditions("gpu", limit, ref, hw.gpu_max_w, est.c, est.u, est.c_sd, est.u_sd, ratio)
            else:
                out[key] = conditions_for_kind(span.kind, "gpu", limit, ref, hw.gpu_max_w, lock_ratio=ratio)
        elif hw.cpu_max_w_per_socket > 0:
            c = spec.cpu if spec is not None else None
            ref = hw.cpu_max_w_per_socket
            limit = ref
            if c is not None and c.package_power_cap_watts is not None:
                limit = c.package_power_cap_watts
            elif c is not None and c.package_power_cap_pct_of_max is not None:
                limit = c.package_power_cap_pct_of_max / 100.0 * ref
            out[key] = conditions_for_kind(span.kind, "cpu", limit, ref, ref, package_busy(share.get(span.node, [])))
    return out
