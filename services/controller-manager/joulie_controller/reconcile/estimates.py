"""Each running GPU Pod's estimate of its compute share and draw, kept across ticks and moved by the
tick's telemetry (``model.jobestimate``). Pure.

A Pod is keyed by "namespace/name". Its estimate starts at its kind's prior as the policy may
believe it (an untrusted Pod's kind does not count: TRUSTED_NAMESPACES), and from then on moves only
with what its GPUs report, which is measured and so believed whoever the Pod belongs to. A Pod gone
(or no longer running on an eligible GPU node) takes its estimate with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from joulie_controller.model.fsm import PodInfo, is_running, pod_key, trusted
from joulie_controller.model.hardware import HardwareView
from joulie_controller.model.jobestimate import GpuSample, JobEstimate, observe, prior_estimate


def update_estimates(
    previous: Mapping[str, JobEstimate],
    pods: Sequence[PodInfo],
    views: Mapping[str, HardwareView],
    samples: Mapping[str, Sequence[GpuSample]],
    trusted_namespaces: Sequence[str],
) -> dict[str, JobEstimate]:
    """The estimates after this tick: one per running GPU Pod on a node in ``views`` with GPUs."""
    out: dict[str, JobEstimate] = {}
    allowed = tuple(trusted_namespaces)
    for pod in pods:
        # GPU and running first, the tenant's word only for a new estimate's prior: building the tenant
        # view of every Pod each tick (a copy of each untrusted one) was half of a steady tick at
        # 100 000 Pods (issue 39).
        if pod.gpu_request <= 0 or not is_running(pod):
            continue
        hw = views.get(pod.node_name)
        if hw is None or hw.gpu_count <= 0 or hw.gpu_max_w <= 0:
            continue
        key = pod_key(pod)
        est = previous.get(key) or prior_estimate(pod.workload_kind if trusted(pod, allowed) else "")
        got = samples.get(key)
        out[key] = observe(est, got, hw.gpu_max_w) if got else est
    return out
