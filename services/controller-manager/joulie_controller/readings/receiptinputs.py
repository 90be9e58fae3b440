"""The energy receipts' inputs from Prometheus: each node's metered energy over a window, by device, and
each Pod's CPU time. Pure: strings in, strings out; results in, ``NodeEnergy`` out.

The live receipts (``reconcile.receipts``, run by the controller every RECEIPT_WINDOW) query these at the
window's end and hand the result to ``model.receipt.attribute``:

- the node meter: the raw samples of ``hw.host.energy`` (a range selector), each series' increase over
  the window taken between samples (``readings.counterwindow``: no extrapolation, so consecutive windows
  add up to the counter's difference), summed per node;
- the devices: the same of ``hw.energy``, per node, ``hw.type`` and ``hw.id`` for ``cpu`` packages
  (``package-N``) and ``gpu`` boards (``gpu-N``, N the index the kubelet's pod-resources API maps a
  Pod's devices to), as the agent and the simulator export them;
- each Pod's CPU time: ``increase`` of cAdvisor's ``container_cpu_usage_seconds_total`` per namespace and
  Pod (core-seconds over the window; it only weighs the busy CPU split between Pods, never the total);
- the boards each Pod held: ``max_over_time`` of ``hw.gpu.allocation`` over the window, by node, namespace,
  Pod and ``hw.id`` (a Pod that finished inside the window still counts), checked against the node's
  hardware and Pods before it bills anyone (``reconcile.receiptboards``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from joulie_controller.model.receipt import NodeEnergy
from joulie_controller.readings.gpusignals import BOARD_ID
from joulie_controller.readings.promql import MetricNaming, quote_name
from joulie_telemetry.vocabulary import (
    COMPONENT_ENERGY,
    GPU_ALLOCATION,
    HOST_ENERGY,
    HW_CPU,
    HW_GPU,
    HW_ID,
    HW_TYPE,
    K8S_NAMESPACE_NAME,
    K8S_POD_NAME,
)

CPU_USAGE: Final = "container_cpu_usage_seconds_total"
"""cAdvisor's per-container CPU time counter (kubelet /metrics/cadvisor), seconds."""
_LEGACY: Final = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


@dataclass(frozen=True)
class ReceiptQueries:
    node_label: str
    type_label: str
    id_label: str
    host_energy_j: str
    device_energy_j: str
    pod_cpu_s: str
    pod_label: str = ""
    namespace_label: str = ""
    allocation: str = ""
    """The boards each Pod held at any time in the window (``hw.gpu.allocation``), by node, namespace, Pod and
    ``hw.id``."""


def window_range(window_s: float) -> str:
    """The PromQL range of a window, to the millisecond (``20400ms``): the energy ``increase`` reads must
    cover the seconds the window bills. Rounded to whole seconds, a 20.4 s window billed 20 s of energy
    (2 % short, every window: the controller's ticks close windows a little past RECEIPT_WINDOW)."""
    return f"{max(1, round(window_s * 1000))}ms"


def receipt_queries(naming: MetricNaming, node_attribute: str, window: str, lookback: str = "") -> ReceiptQueries:
    """The four queries over ``window`` (a PromQL duration, e.g. ``1m``), the energy counters' raw samples
    over ``lookback`` (``counterwindow.lookback_s``; default ``window``); node attributes promoted."""
    lookback = lookback or window
    node, typ, hwid = (naming.label(a) for a in (node_attribute, HW_TYPE, HW_ID))
    host = naming.series(HOST_ENERGY)
    comp = naming.series(COMPONENT_ENERGY)

    def sel(metric: str, matchers: str = "") -> str:
        if _LEGACY.match(metric):
            return f"{metric}{{{matchers}}}" if matchers else metric
        return "{" + ", ".join(x for x in (quote_name(metric), matchers) if x) + "}"

    devices = f'{quote_name(typ)}=~"{HW_CPU}|{HW_GPU}"'
    pod, ns = naming.label(K8S_POD_NAME), naming.label(K8S_NAMESPACE_NAME)
    alloc = sel(naming.series(GPU_ALLOCATION))
    return ReceiptQueries(
        node,
        typ,
        hwid,
        host_energy_j=f"{sel(host)}[{lookback}]",
        device_energy_j=f"{sel(comp, devices)}[{lookback}]",
        pod_cpu_s=f'sum by (namespace, pod) (increase({CPU_USAGE}{{container!=""}}[{window}]))',
        pod_label=pod,
        namespace_label=ns,
        allocation=(
            f"max by ({quote_name(node)}, {quote_name(ns)}, {quote_name(pod)}, {quote_name(hwid)}) "
            f"(max_over_time({alloc}[{window}]))"
        ),
    )


@dataclass(frozen=True)
class NodeFacts:
    """What the controller knows of a node besides its meters (NodeHardware, the Node's allocatable)."""

    cores: float
    cpu_idle_w: float
    gpu_idle_w: float


def _value(item: Mapping[str, Any]) -> float | None:
    value = item.get("value")
    try:
        v = float(value[1]) if isinstance(value, (list, tuple)) and len(value) == 2 else math.nan
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v >= 0 else None


def node_energies(
    host: Sequence[tuple[Mapping[str, Any], float]],
    devices: Sequence[tuple[Mapping[str, Any], float]],
    q: ReceiptQueries,
    window_s: float,
    facts: Mapping[str, NodeFacts],
    host_spans: Sequence[tuple[float, float]] = (),
) -> tuple[dict[str, NodeEnergy], list[str]]:
    """Each known node's ``NodeEnergy`` over the window from its series' increases (``counterwindow``), and
    why any series was left out (a node without a meter reading is left out whole: its books cannot close).
    ``host_spans``: each host reading's span of samples, in the order of ``host`` (the node's
    ``meter_span``); none given: the window's."""
    problems: list[str] = []
    meter: dict[str, float] = {}
    span: dict[str, tuple[float, float]] = {}
    bad: set[str] = set()
    for i, (metric, value) in enumerate(host):
        node = str(metric.get(q.node_label, ""))
        if node not in facts:
            continue
        if i < len(host_spans):
            a, b = host_spans[i]
            old = span.get(node, (a, b))
            span[node] = (min(a, old[0]), max(b, old[1]))
        if math.isfinite(value) and value >= 0:
            meter[node] = meter.get(node, 0.0) + value
        else:
            bad.add(node)
            problems.append(f"{node}: host energy increase {value!r}: expected a finite number >= 0")
    for node in bad:
        meter.pop(node, None)
    gpu: dict[str, dict[int, float]] = {n: {} for n in meter}
    cpu: dict[str, float] = dict.fromkeys(meter, 0.0)
    for metric, v in devices:
        node, typ, hwid = (str(metric.get(k, "")) for k in (q.node_label, q.type_label, q.id_label))
        if node not in meter:
            continue
        m = BOARD_ID.match(hwid)
        if not (math.isfinite(v) and v >= 0):
            problems.append(f"{node}: {typ} {hwid} energy increase {v!r}: expected a finite number >= 0")
        elif typ == HW_GPU and m:
            gpu[node][int(m.group(1))] = gpu[node].get(int(m.group(1)), 0.0) + v
        elif typ == HW_CPU:
            cpu[node] += v
        else:
            problems.append(f"{node}: {typ} {hwid!r}: expected hw.id gpu-<index> for a GPU")
    out = {
        n: NodeEnergy(window_s, meter[n], gpu[n], cpu[n], facts[n].cores, facts[n].cpu_idle_w, facts[n].gpu_idle_w,
                      span.get(n))
        for n in meter
    }
    return out, problems


def pod_cpu_seconds(result: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Each Pod's CPU time over the window, core-seconds, by ``namespace/name``."""
    out: dict[str, float] = {}
    for item in result:
        metric = item.get("metric") or {}
        ns, pod = str(metric.get("namespace", "")), str(metric.get("pod", ""))
        v = _value(item)
        if ns and pod and v is not None:
            out[f"{ns}/{pod}"] = v
    return out


@dataclass(frozen=True)
class Allocation:
    """One board a Pod held in the window, as ``hw.gpu.allocation`` says: not yet believed."""

    node: str
    pod: str
    """``namespace/name``."""
    hwid: str


def pod_allocations(result: Iterable[Mapping[str, Any]], q: ReceiptQueries) -> list[Allocation]:
    """The allocations the window's series name (value 1: held), each board of each Pod on each node."""
    out: set[Allocation] = set()
    for item in result:
        metric = item.get("metric") or {}
        node, ns, pod, hwid = (
            str(metric.get(k, "")) for k in (q.node_label, q.namespace_label, q.pod_label, q.id_label)
        )
        if node and ns and pod and hwid and _value(item) == 1.0:
            out.add(Allocation(node, f"{ns}/{pod}", hwid))
    return sorted(out, key=lambda a: (a.node, a.pod, a.hwid))
