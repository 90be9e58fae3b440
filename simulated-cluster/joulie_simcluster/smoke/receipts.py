"""S16: the controller manager's live energy receipts on the smoke's load Pods. Pure: the Pods as the API
server lists them, which Nodes Prometheus has a meter for, and on which Nodes the node side maps boards to
Pods (``hw.gpu.allocation``) in; one Assertion out.

Each load Pod (one per Node, pinned, holding every board and all but two cores; ``smoke/load.py``) that
has run for two receipt windows on a metered Node must carry ``joulie.io/energy-receipt``: parseable,
``running``, naming its own Node, energy above zero. On a GPU Node its receipt bills the boards only where
the node side says which Pod holds them; on a Node without ``hw.gpu.allocation`` (the emulated kubelet
serves pod-resources for NVIDIA Nodes only) its GPU part must be zero (the boards are unallocated), and
the check says how many GPU Pods were not billed their boards for that reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from joulie_api.names import ANNOTATION_ENERGY_RECEIPT
from joulie_api.receipt import ReceiptFormatError, parse_annotation
from joulie_simcluster.smoke.checks import CHECKS, Assertion


def _started(pod: Mapping[str, Any]) -> float | None:
    raw = (pod.get("status") or {}).get("startTime")
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def receipts_on_load_pods(
    pods: Iterable[Mapping[str, Any]],
    metered: set[str],
    gpu_nodes: set[str],
    allocated: set[str],
    now_s: float,
    window_s: float,
) -> Assertion:
    failures: list[str] = []
    checked: list[str] = []
    gpu_billed = unmapped = 0
    for pod in pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        name, node = str(meta.get("name", "")), str(spec.get("nodeName") or "")
        started = _started(pod)
        if status.get("phase") != "Running" or node not in metered or started is None:
            continue
        if now_s - started < 2 * window_s:
            continue
        checked.append(name)
        text = (meta.get("annotations") or {}).get(ANNOTATION_ENERGY_RECEIPT)
        if text is None:
            failures.append(f"{name} on {node}: no {ANNOTATION_ENERGY_RECEIPT} after {now_s - started:.0f}s running")
            continue
        try:
            r = parse_annotation(text)
        except ReceiptFormatError as err:
            failures.append(f"{name}: {err}")
            continue
        gpu = r.energy_j.get("gpu", 0.0)
        if r.state != "running" or r.node != node or r.total_j <= 0:
            failures.append(f"{name}: state {r.state}, node {r.node!r} (runs on {node}), {r.total_j:.0f} J")
        elif node in gpu_nodes and node in allocated and gpu <= 0:
            failures.append(f"{name} holds every board of {node} but its receipt bills no GPU energy")
        elif node not in allocated and gpu > 0:
            failures.append(
                f"{name}: {gpu:.0f} J of GPU energy billed with no hw.gpu.allocation on {node} to say who holds a board"
            )
        gpu_billed += node in gpu_nodes and gpu > 0
        unmapped += node in gpu_nodes and node not in allocated
    if not checked:
        return Assertion("S16", "skipped", f"no load Pod ran {2 * window_s:.0f}s on a metered Node", CHECKS["S16"][1])
    gpu_note = f"{gpu_billed} GPU Pod(s) billed their boards" + (
        f"; {unmapped} on Nodes without hw.gpu.allocation billed none" if unmapped else "")
    if failures:
        return Assertion("S16", "fail", "; ".join(failures[:6]), CHECKS["S16"][1], float(len(checked) - len(failures)))
    return Assertion(
        "S16",
        "pass",
        f"{len(checked)} load Pods carry their receipt; {gpu_note}",
        CHECKS["S16"][1],
        float(len(checked)),
    )
