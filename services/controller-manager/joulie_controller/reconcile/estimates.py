"""Each running GPU Pod's estimate of its compute share and draw, kept across ticks and moved by the
tick's telemetry (``model.jobestimate``). Pure.

A Pod is keyed by "namespace/name". Its estimate starts at its kind's prior as the policy may
believe it (an untrusted Pod's kind does not count: TRUSTED_NAMESPACES), and from then on moves only
with what its GPUs report, which is measured and so believed whoever the Pod belongs to. A Pod gone
(or no longer running on an eligible GPU node) takes its estimate with it.

Beside the estimate, each such Pod's clock log (``model.realised``): the seconds its boards were seen
at each SM clock ratio, from which the status reports its realised slowdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from joulie_controller.model.fsm import PodInfo, is_running, pod_key, trusted
from joulie_controller.model.hardware import HardwareView
from joulie_controller.model.jobestimate import (
    MAX_AGE_S,
    MIN_BUSY,
    GpuSample,
    JobEstimate,
    aggregate,
    observe,
    prior_estimate,
)
from joulie_controller.model.realised import ClockLog, Realised, realised_slowdown, record


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


def update_clock_logs(
    previous: Mapping[str, ClockLog],
    estimates: Mapping[str, JobEstimate],
    pods: Sequence[PodInfo],
    views: Mapping[str, HardwareView],
    samples: Mapping[str, Sequence[GpuSample]],
    dt_s: float,
) -> dict[str, ClockLog]:
    """The clock logs after a tick ``dt_s`` after the last one: one per Pod that has an estimate (the
    rest are gone), ``dt_s`` times its boards' utilisation more busy seconds at the mean clock ratio of
    its fresh samples. A Pod with no fresh clock this tick keeps its log as it was (the time is not
    guessed), and so does one whose boards are idle (utilisation, else SM active, under MIN_BUSY) or
    report neither. ``dt_s`` is held to
    ``MAX_AGE_S``: a controller that stood still longer saw nothing of what ran meanwhile."""
    dt = min(max(0.0, dt_s), MAX_AGE_S)
    out: dict[str, ClockLog] = {}
    for pod in pods:
        if pod.gpu_request <= 0:  # cheap test first: most Pods of a large cluster hold no GPU (issue 39)
            continue
        key = pod_key(pod)
        hw = views.get(pod.node_name)
        if key not in estimates or hw is None:
            continue
        log = previous.get(key, ClockLog())
        got = samples.get(key)
        s = aggregate(got, hw.gpu_max_w) if got else None
        if s is not None and s.clock_ratio is not None:
            # Only busy time counts: an idle board drops to its lowest clock whatever its limit (before
            # the job loads it, between its kernels), and a cap slows nothing there.
            # Without either activity signal the busy share is unknown: the tick is not logged (counting
            # it all as busy would bring back the idle-clock artefact at the lowest clock).
            busy = s.utilization if s.utilization is not None else s.sm_active
            if busy is not None and busy >= MIN_BUSY:
                log = record(log, s.clock_ratio, dt * min(1.0, busy))
        if log.total_s > 0:
            out[key] = log
    return out


def realised(key: str, estimates: Mapping[str, JobEstimate], logs: Mapping[str, ClockLog],
             hw: HardwareView) -> Realised | None:
    """The Pod's realised slowdown so far, at its estimate, against its boards' default limit."""
    est, log = estimates.get(key), logs.get(key)
    if est is None or log is None:
        return None
    return realised_slowdown(log, est.c, est.c_sd, est.u, est.u_sd, hw.gpu_default_w or hw.gpu_max_w, hw.gpu_max_w)
