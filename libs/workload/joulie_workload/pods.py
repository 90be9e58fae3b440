"""The Pod a trace job becomes. Pure: returns a plain dict ready to create.

- name ``sim-<jobId>`` lower-cased, characters outside ``[a-z0-9-]`` -> ``-``, at most 50
  characters; when that changed the id, a 6-hex hash of the id keeps names unique;
- selects the simulated cluster's nodes (``sim.joulie.io/cluster=<spec>``), tolerates the KWOK
  taint ``kwok.x-k8s.io/node=fake:NoSchedule`` and the job's own ``tolerations``;
- the class only as scheduling constraints on ``joulie.io/power-profile`` (performance: required
  ``NotIn [eco]``; eco: required ``In [eco]``; general: none), plus the label
  ``joulie.io/workload-class=<class>`` and the annotation Joulie reads (``performance`` or
  ``standard``);
- the workload kind (``trace.Job.kind``, one of ``kinds.KINDS``) as
  the label and annotation ``joulie.io/workload-kind`` (a label so a selector can find it, an
  annotation beside Joulie's workload-class one for readers of annotations);
- CPU, memory and GPU (``requests.gpuResource``, default ``nvidia.com/gpu``) in requests and
  limits; the job's ``nodeSelector`` beside the cluster's; ``restartPolicy: Never``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final

from joulie_api import names
from joulie_workload.trace import Job

LABEL_PART_OF: Final = "app.kubernetes.io/part-of"
PART_OF: Final = "joulie-sim-workload"
LABEL_JOB: Final = "sim.joulie.io/job"
ANNOTATION_JOB_ID: Final = "sim.joulie.io/jobId"
KWOK_TAINT_KEY: Final = "kwok.x-k8s.io/node"
IMAGE: Final = "registry.k8s.io/pause:3.9"
POD_CONTAINER: Final = "work"
"""The name of a job Pod's one container (the emulated kubelet lists its devices under it)."""
LABEL_WORKLOAD_KIND: Final = names.LABEL_WORKLOAD_KIND


def pod_name(job_id: str) -> str:
    clean = re.sub(r"[^a-z0-9-]", "-", job_id.lower()).strip("-") or "job"
    name = f"sim-{clean}"[:50].rstrip("-")
    if clean != job_id:
        name = f"{name[:43].rstrip('-')}-{hashlib.sha256(job_id.encode()).hexdigest()[:6]}"
    return name


def affinity(workload_class: str, placement: str = "hard") -> dict[str, Any] | None:
    """The Pod's required node affinity for its class. ``placement="soft"`` (the work-aware policy):
    only performance Pods are constrained (never on eco nodes); eco and general work may run
    anywhere, and the extender's score steers it."""
    if workload_class == "general" or (placement == "soft" and workload_class != "performance"):
        return None
    op, values = ("NotIn", ["eco"]) if workload_class == "performance" else ("In", ["eco"])
    expr = {"key": names.LABEL_POWER_PROFILE, "operator": op, "values": values}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}}


def pod_manifest(job: Job, cluster: str, with_class_constraints: bool = True, placement: str = "hard") -> dict[str, Any]:
    """The Pod for ``job`` on the simulated cluster ``cluster`` (``with_class_constraints=False``:
    as a cluster without Joulie would run it, no power-profile affinity; ``placement``: see
    :func:`affinity`)."""
    cpu_m = max(1, round(job.requests.cpu * 1000))
    resources: dict[str, str] = {"cpu": f"{cpu_m}m", "memory": f"{job.requests.memory_mi}Mi"}
    limits: dict[str, str] = {}
    if job.requests.gpu:
        resources[job.requests.gpu_resource] = str(job.requests.gpu)
        limits[job.requests.gpu_resource] = str(job.requests.gpu)
    spec: dict[str, Any] = {
        "nodeSelector": {**job.node_selector, names.LABEL_SIM_CLUSTER: cluster},
        "tolerations": [{"key": KWOK_TAINT_KEY, "operator": "Equal", "value": "fake", "effect": "NoSchedule"},
                        *(t.manifest() for t in job.tolerations)],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": POD_CONTAINER, "image": IMAGE, "resources": {"requests": resources, **({"limits": limits} if limits else {})}}],
    }
    aff = affinity(job.workload_class, placement) if with_class_constraints else None
    if aff is not None:
        spec["affinity"] = aff
    joulie_class = names.WORKLOAD_CLASS_PERFORMANCE if job.workload_class == "performance" else names.WORKLOAD_CLASS_STANDARD
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(job.job_id),
            "namespace": job.namespace,
            "labels": {LABEL_PART_OF: PART_OF, names.ANNOTATION_WORKLOAD_CLASS: job.workload_class, LABEL_JOB: pod_name(job.job_id),
                       LABEL_WORKLOAD_KIND: job.kind},
            "annotations": {ANNOTATION_JOB_ID: job.job_id, names.ANNOTATION_WORKLOAD_CLASS: joulie_class,
                            LABEL_WORKLOAD_KIND: job.kind},
        },
        "spec": spec,
    }
