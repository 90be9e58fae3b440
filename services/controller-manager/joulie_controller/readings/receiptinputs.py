"""The energy receipts' inputs from Prometheus: each node's metered energy over a window, by device, and
each Pod's CPU time. Pure: strings in, strings out; results in, ``NodeEnergy`` out.

The live receipts (``reconcile.receipts``, run by the controller every RECEIPT_WINDOW) query these at the
window's end and hand the result to ``model.receipt.attribute``:

- the node meter: ``increase`` of ``hw.host.energy`` per node (J over the window);
- the devices: ``increase`` of ``hw.energy`` per node, ``hw.type`` and ``hw.id`` for ``cpu`` packages
  (``package-N``) and ``gpu`` boards (``gpu-N``, N the index the kubelet's pod-resources API maps a
  Pod's devices to), as the agent and the simulator export them;
- each Pod's CPU time: ``increase`` of cAdvisor's ``container_cpu_usage_seconds_total`` per namespace and
  Pod (core-seconds over the window; the busy CPU split by use, not requests);
- the boards each Pod held: ``max_over_time`` of ``hw.gpu.allocation`` over the window, by namespace, Pod
  and ``hw.id`` (a Pod that finished inside the window still counts).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from joulie_controller.model.receipt import NodeEnergy
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
_GPU_ID: Final = re.compile(r"^gpu-(\d+)$")
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
    """The boards each Pod held at any time in the window (``hw.gpu.allocation``), by namespace, Pod, ``hw.id``."""


def window_range(window_s: float) -> str:
    """The PromQL range of a window, to the millisecond (``20400ms``): the energy ``increase`` reads must
    cover the seconds the window bills. Rounded to whole seconds, a 20.4 s window billed 20 s of energy
    (2 % short, every window: the controller's ticks close windows a little past RECEIPT_WINDOW)."""
    return f"{max(1, round(window_s * 1000))}ms"


def receipt_queries(naming: MetricNaming, node_attribute: str, window: str) -> ReceiptQueries:
    """The three queries over ``window`` (a PromQL duration, e.g. ``1m``); node attributes promoted."""
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
        host_energy_j=f"sum by ({quote_name(node)}) (increase({sel(host)}[{window}]))",
        device_energy_j=(
            f"sum by ({quote_name(node)}, {quote_name(typ)}, {quote_name(hwid)}) "
            f"(increase({sel(comp, devices)}[{window}]))"
        ),
        pod_cpu_s=f'sum by (namespace, pod) (increase({CPU_USAGE}{{container!=""}}[{window}]))',
        pod_label=pod,
        namespace_label=ns,
        allocation=(
            f"max by ({quote_name(ns)}, {quote_name(pod)}, {quote_name(hwid)}) (max_over_time({alloc}[{window}]))"
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
    host: Iterable[Mapping[str, Any]],
    devices: Iterable[Mapping[str, Any]],
    q: ReceiptQueries,
    window_s: float,
    facts: Mapping[str, NodeFacts],
) -> tuple[dict[str, NodeEnergy], list[str]]:
    """Each known node's ``NodeEnergy`` over the window, and why any series was left out (a node without a
    meter reading is left out whole: its books cannot close)."""
    problems: list[str] = []
    meter: dict[str, float] = {}
    for item in host:
        node = str((item.get("metric") or {}).get(q.node_label, ""))
        v = _value(item)
        if node in facts and v is not None:
            meter[node] = v
        elif node in facts:
            problems.append(f"{node}: host energy {item.get('value')!r}: expected a finite number >= 0")
    gpu: dict[str, dict[int, float]] = {n: {} for n in meter}
    cpu: dict[str, float] = dict.fromkeys(meter, 0.0)
    for item in devices:
        metric = item.get("metric") or {}
        node, typ, hwid = (str(metric.get(k, "")) for k in (q.node_label, q.type_label, q.id_label))
        if node not in meter:
            continue
        v = _value(item)
        m = _GPU_ID.match(hwid)
        if v is None:
            problems.append(f"{node}: {typ} {hwid} energy {item.get('value')!r}: expected a finite number >= 0")
        elif typ == HW_GPU and m:
            gpu[node][int(m.group(1))] = v
        elif typ == HW_CPU:
            cpu[node] += v
        else:
            problems.append(f"{node}: {typ} {hwid!r}: expected hw.id gpu-<index> for a GPU")
    out = {
        n: NodeEnergy(window_s, meter[n], gpu[n], cpu[n], facts[n].cores, facts[n].cpu_idle_w, facts[n].gpu_idle_w)
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


def pod_boards(result: Iterable[Mapping[str, Any]], q: ReceiptQueries) -> dict[str, tuple[int, ...]]:
    """The boards each Pod held in the window, by ``namespace/name`` (the Pod's node is its own: the
    allocation series need not carry the node)."""
    out: dict[str, set[int]] = {}
    for item in result:
        metric = item.get("metric") or {}
        ns, pod = str(metric.get(q.namespace_label, "")), str(metric.get(q.pod_label, ""))
        m = _GPU_ID.match(str(metric.get(q.id_label, "")))
        if ns and pod and m and _value(item) == 1.0:
            out.setdefault(f"{ns}/{pod}", set()).add(int(m.group(1)))
    return {k: tuple(sorted(v)) for k, v in out.items()}
