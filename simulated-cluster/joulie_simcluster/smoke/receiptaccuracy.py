"""S18: the live energy receipts against the node meters and the emulator's per-Pod truth. Pure: two
readings of the controller manager's receipt counters (each taken just after one of its windows closed)
and the workload runner's truth at those two instants in; one Assertion out.

Over the span between the two closes (``joulie_receipt_window_end_timestamp_seconds``, so the span is the
controller's own windows, not the check's clock):

- **closure**: per Node, the increase of every Pod's receipt counters plus the Node's unallocated counter
  against the increase of the Node's true meter (the emulator's) over the same span: within 1 %;
- **per Pod**: each workload Pod's receipt increase against its true energy over the span
  (``joulie_simulator.workload.podtruth``): within 3 %. A Pod on a Node where nothing says who holds
  which board (no ``hw.gpu.allocation``: the emulated kubelet serves pod-resources for NVIDIA Nodes only)
  is billed none of its boards by design; its error is shown apart and not judged. So is a Pod on a
  Node whose CPU idle draw the controller says it does not know (``joulie_receipt_cpu_idle_watts``
  with ``source="unknown"`` at the second reading: no package maximum in its NodeHardware and no idle
  window seen), where no reading can tell the busy Pod's package energy from its neighbours' idle.

The detail names the mean and worst errors, each Node's closure, and each shared Node's Pods
(``smoke.load.shared_nodes``). The controller's books close exactly on what it reads (``Ledger``), so a
Node's closure error is how far its meter as read (Prometheus' ``increase`` per window) is from the meter
itself; a Pod's error less its Node's (its *split* error: receipt over truth, divided by billed over
metered) is what the attribution adds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from prometheus_client.parser import text_string_to_metric_families

from joulie_simcluster.smoke.checks import CHECKS, Assertion
from joulie_telemetry.vocabulary import NODE_ENERGY_UNALLOCATED, POD_ENERGY

CLOSURE_TOLERANCE: Final = 0.01
POD_TOLERANCE: Final = 0.03
WINDOW_END: Final = "joulie_receipt_window_end_timestamp_seconds"
CPU_IDLE: Final = "joulie_receipt_cpu_idle_watts"
METER_END: Final = "joulie_receipt_meter_end_timestamp_seconds"


@dataclass(frozen=True)
class Books:
    """The controller's receipt counters at one close."""

    window_end_s: float
    pods: dict[str, tuple[str, float]] = field(default_factory=dict)
    """``namespace/name`` -> (node, energy so far, J; every device kind)."""
    unallocated: dict[str, float] = field(default_factory=dict)
    idle_unknown: set[str] = field(default_factory=set)
    """Nodes whose CPU idle draw the receipts say they do not know."""
    meter_end: dict[str, float] = field(default_factory=dict)
    """Each node's last meter sample time the counters have counted up to (the truth is read there)."""


def parse_books(text: str) -> Books:
    """The receipt counters of the controller manager's ``/metrics`` text."""
    end = 0.0
    pods: dict[str, tuple[str, float]] = {}
    unallocated: dict[str, float] = {}
    idle_unknown: set[str] = set()
    meter_end: dict[str, float] = {}
    pod_name, node_name = POD_ENERGY.prometheus_name(), NODE_ENERGY_UNALLOCATED.prometheus_name()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == WINDOW_END:
                end = float(s.value)
            elif s.name == pod_name:
                key = f"{s.labels.get('k8s_namespace_name', '')}/{s.labels.get('k8s_pod_name', '')}"
                node = s.labels.get("k8s_node_name", "")
                pods[key] = (node, pods.get(key, (node, 0.0))[1] + float(s.value))
            elif s.name == node_name:
                unallocated[s.labels.get("k8s_node_name", "")] = float(s.value)
            elif s.name == CPU_IDLE and s.labels.get("source") == "unknown":
                idle_unknown.add(s.labels.get("k8s_node_name", ""))
            elif s.name == METER_END:
                meter_end[s.labels.get("k8s_node_name", "")] = float(s.value)
    return Books(end, pods, unallocated, idle_unknown, meter_end)


@dataclass(frozen=True)
class TruthAt:
    """The runner's truth (``/debug/pod-truth?at=``) at one instant."""

    pods: dict[str, tuple[str, float]]
    """``namespace/name`` -> (node, true energy so far, J)."""
    metered: dict[str, float]


def parse_truth(doc: Mapping[str, Any]) -> TruthAt:
    pods = {
        str(k): (str(v["node"]), sum(float(x) for x in v["energyJ"].values())) for k, v in (doc.get("pods") or {}).items()
    }
    metered = {str(k): float(v["meteredJ"]) for k, v in (doc.get("nodes") or {}).items()}
    return TruthAt(pods, metered)


def truth_instants(books: Books) -> dict[str, float]:
    """Where to read each node's truth for ``books``: its last counted meter sample (the receipts' energy
    runs between samples, lagging the window's close by up to an export interval), else the close."""
    nodes = set(books.unallocated) | {n for n, _ in books.pods.values()}
    return {n: books.meter_end.get(n, books.window_end_s) for n in nodes}


def compose_truth(instants: Mapping[str, float], truth: Callable[[float], TruthAt], default_at: float) -> TruthAt:
    """One truth with each node's meter and Pods as they were at that node's instant; a node the
    controller's counters do not name at ``default_at`` (its Pods then fail for want of a receipt)."""
    by_instant = {at: truth(at) for at in sorted({*instants.values(), default_at})}
    base = by_instant[default_at]
    pods = {p: v for p, v in base.pods.items() if v[0] not in instants}
    metered = {n: j for n, j in base.metered.items() if n not in instants}
    for node, at in instants.items():
        t = by_instant[at]
        if node in t.metered:
            metered[node] = t.metered[node]
        pods.update({p: v for p, v in t.pods.items() if v[0] == node})
    return TruthAt(pods, metered)


def _pct(x: float) -> str:
    return f"{x * 100:+.2f} %"


def _stats(errors: Iterable[tuple[str, float]]) -> tuple[float, float, str]:
    errs = list(errors)
    if not errs:
        return 0.0, 0.0, ""
    worst = max(errs, key=lambda e: abs(e[1]))
    return sum(abs(e) for _, e in errs) / len(errs), worst[1], worst[0]


def _shared_text(shared: Iterable[str], errors: Mapping[str, float], truth: TruthAt) -> str:
    """Each shared Node's Pods with their errors."""
    return "; ".join(
        f"{node}: " + ", ".join(f"{p.split('/', 1)[1]} {_pct(e)}" for p, e in sorted(errors.items())
                               if truth.pods.get(p, ("", 0.0))[0] == node)
        for node in shared
    )


def receipt_accuracy(
    a: Books,
    b: Books,
    truth_a: TruthAt,
    truth_b: TruthAt,
    metered: set[str],
    unmapped: set[str],
    shared: Iterable[str],
) -> Assertion:
    """S18. ``metered``: Nodes with a host meter in Prometheus; ``unmapped``: GPU Nodes without
    ``hw.gpu.allocation`` (their Pods' boards are unallocated by design); ``shared``: Nodes with two Pods."""
    expected = CHECKS["S18"][1]
    span = b.window_end_s - a.window_end_s
    if span <= 0:
        return Assertion("S18", "fail", f"no receipt window closed between the readings ({a.window_end_s:.1f}, "
                                         f"{b.window_end_s:.1f})", expected)
    failures: list[str] = []
    closure: list[tuple[str, float]] = []
    for node in sorted(set(b.unallocated) & set(truth_b.metered) & metered):
        true_j = truth_b.metered[node] - truth_a.metered.get(node, 0.0)
        billed = b.unallocated[node] - a.unallocated.get(node, 0.0) + sum(
            e - a.pods.get(p, (n, 0.0))[1] for p, (n, e) in b.pods.items() if n == node
        )
        if true_j <= 0:
            failures.append(f"{node}: its true meter did not advance over {span:.1f}s")
            continue
        closure.append((node, billed / true_j - 1.0))
    judged: list[tuple[str, float]] = []
    apart: list[tuple[str, float]] = []
    idle_apart: list[tuple[str, float]] = []
    split: list[tuple[str, float]] = []
    node_ratio = {n: 1.0 + e for n, e in closure}
    for pod, (node, e_b) in sorted(truth_b.pods.items()):
        true_j = e_b - truth_a.pods.get(pod, (node, 0.0))[1]
        if node not in metered or true_j <= 0:
            continue
        if pod not in b.pods:
            failures.append(f"{pod} on {node}: no receipt counters (true {true_j:.0f} J over {span:.1f}s)")
            continue
        got = b.pods[pod][1] - a.pods.get(pod, (node, 0.0))[1]
        err = got / true_j - 1.0
        if node in unmapped:
            apart.append((pod, err))
            continue
        if node in b.idle_unknown:
            idle_apart.append((pod, err))
            continue
        judged.append((pod, err))
        if node in node_ratio:
            split.append((pod, got / true_j / node_ratio[node] - 1.0))
    for node, err in closure:
        if abs(err) > CLOSURE_TOLERANCE:
            failures.append(f"{node}: receipts + unallocated {_pct(err)} off its meter")
    for pod, err in judged:
        if abs(err) > POD_TOLERANCE:
            failures.append(f"{pod}: receipt {_pct(err)} off its truth")
    c_mean, c_worst, c_at = _stats(closure)
    p_mean, p_worst, p_at = _stats(judged)
    s_mean, s_worst, s_at = _stats(split)
    shared_text = _shared_text(shared, dict(judged + apart + idle_apart), truth_b)
    detail = (
        f"over {span:.1f}s of receipt windows: closure on {len(closure)} Nodes mean {c_mean * 100:.2f} %, "
        f"worst {_pct(c_worst)} ({c_at}); receipts vs truth on {len(judged)} Pods mean {p_mean * 100:.2f} %, "
        f"worst {_pct(p_worst)} ({p_at}); of which the split (Pod less its Node's reading) mean "
        f"{s_mean * 100:.2f} %, worst {_pct(s_worst)} ({s_at}); shared Nodes: {shared_text or 'none'}; "
        f"closure by Node: " + ", ".join(f"{n} {_pct(e)}" for n, e in closure)
        + ("; not judged (no hw.gpu.allocation: boards unallocated): "
           + ", ".join(f"{p} {_pct(e)}" for p, e in apart) if apart else "")
        + ("; not judged (the controller knows no CPU idle draw for the Node: no package maximum, no idle "
           "window seen): " + ", ".join(f"{p} {_pct(e)}" for p, e in idle_apart) if idle_apart else "")
    )
    if not closure and not judged:
        return Assertion("S18", "fail", "nothing to compare: " + detail, expected)
    if failures:
        return Assertion("S18", "fail", "; ".join(failures[:6]) + " | " + detail, expected, abs(p_worst))
    return Assertion("S18", "pass", detail, expected, abs(p_worst))
